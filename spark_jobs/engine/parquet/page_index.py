"""Prune row groups and rows with the Parquet page index (ColumnIndex + OffsetIndex).

pyarrow neither exposes the page index nor skips pages on read, so:

1. Decode the footer's Thrift ``FileMetaData`` once per cached footer and keep, per row group and column chunk,
   the offsets and lengths of its ColumnIndex and OffsetIndex (ColumnChunk fields 4-7).
2. For each scanned row group and each column the filter names (not under a list or map) that has both indexes,
   read them: ColumnIndex gives per page ``null_pages``, PLAIN-encoded min and max, and null counts; OffsetIndex
   gives each page's ``first_row_index``, hence its row range.
3. Evaluate every leaf predicate per page with ``predicates.might_match`` and spread the answer over the page's rows;
   combine leaves through the tree's AND/OR as boolean row masks (page boundaries differ between columns).
4. Refine the access plan with the row mask: no row left skips the row group (``row_groups_pruned_by_page_index``);
   otherwise rows and pages with no selected row are counted as pruned. Decoding still covers the whole row group
   (pyarrow cannot skip pages), but later stages only evaluate and keep the selected rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyiceberg.io import InputStream

from spark_jobs.engine.parquet.access_plan import AccessPlan
from spark_jobs.engine.parquet.file_columns import LeafColumn, decode_plain, decode_raw
from spark_jobs.engine.parquet.footer_cache import ParquetFooter
from spark_jobs.engine.parquet.predicates import ColumnPredicate, FilterNode, ValueBounds, fold, might_match
from spark_jobs.engine.parquet.thrift_compact import CompactReader
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.metrics import ScanMetrics


@dataclass(frozen=True)
class PageIndexLocation:
    """Where one column chunk's ColumnIndex and OffsetIndex are stored (None when absent)."""

    column_index_offset: int | None
    column_index_length: int | None
    offset_index_offset: int | None
    offset_index_length: int | None

    @property
    def is_complete(self) -> bool:
        """True when both indexes are present."""
        return bool(
            self.column_index_offset is not None
            and self.column_index_length
            and self.offset_index_offset is not None
            and self.offset_index_length
        )


@dataclass(frozen=True)
class ColumnPages:
    """One column chunk's pages: their row ranges and what the ColumnIndex says about each."""

    first_rows: np.ndarray  # int64, first row of each page within the row group
    row_counts: np.ndarray  # int64, rows per page
    bounds: list[ValueBounds]


def page_index_locations(footer: ParquetFooter) -> list[list[PageIndexLocation]]:
    """Per row group, per leaf column, the page index location; decoded once per cached footer."""
    cached = footer.derived.get("page_index_locations")
    if cached is None:
        file_metadata = CompactReader(footer.footer_bytes, source=f"{footer.path} footer").read_struct()
        cached = [
            [
                PageIndexLocation(chunk.get(6), chunk.get(7), chunk.get(4), chunk.get(5))
                for chunk in row_group.get(1, [])
            ]
            for row_group in file_metadata.get(4, [])
        ]
        footer.derived["page_index_locations"] = cached
    return cached


def read_column_pages(
    stream: InputStream, location: PageIndexLocation, leaf: LeafColumn, row_group_rows: int, source: str
) -> tuple[ColumnPages, int]:
    """Read and decode one chunk's ColumnIndex and OffsetIndex; return its pages and the bytes read."""
    column_index = _read_struct_at(stream, location.column_index_offset, location.column_index_length, source)
    offset_index = _read_struct_at(stream, location.offset_index_offset, location.offset_index_length, source)
    page_locations = offset_index.get(1, [])
    null_pages = column_index.get(1, [])
    lower_values, upper_values = column_index.get(2, []), column_index.get(3, [])
    null_counts = column_index.get(5)
    if not (len(page_locations) == len(null_pages) == len(lower_values) == len(upper_values)) or not page_locations:
        raise CorruptFileError(
            f"{source}: page index of column {leaf.path} has {len(page_locations)} page locations but "
            f"{len(null_pages)} null flags and {len(lower_values)}/{len(upper_values)} bounds"
        )
    first_rows = np.array([page.get(3, 0) for page in page_locations], dtype=np.int64)
    row_counts = np.diff(np.append(first_rows, row_group_rows))
    if (row_counts < 0).any() or first_rows[0] != 0:
        raise CorruptFileError(f"{source}: page first_row_index values of column {leaf.path} are not increasing")
    bounds = []
    for page, page_rows in enumerate(row_counts.tolist()):
        null_count = null_counts[page] if null_counts is not None and page < len(null_counts) else None
        if null_pages[page]:
            bounds.append(ValueBounds(page_rows, page_rows))
            continue
        lower = decode_raw(decode_plain(lower_values[page], leaf), leaf, is_upper_bound=False)
        upper = decode_raw(decode_plain(upper_values[page], leaf), leaf, is_upper_bound=True)
        bounds.append(ValueBounds(page_rows, null_count, lower, upper, may_contain_nan=leaf.is_floating))
    bytes_read = (location.column_index_length or 0) + (location.offset_index_length or 0)
    return ColumnPages(first_rows, row_counts, bounds), bytes_read


def _read_struct_at(stream: InputStream, offset: int | None, length: int | None, source: str) -> dict[int, Any]:
    stream.seek(offset or 0)
    buffer = stream.read(length or 0)
    if len(buffer) != length:
        raise CorruptFileError(f"{source}: page index at {offset} should have {length} bytes, read {len(buffer)}")
    return CompactReader(buffer, source=source).read_struct()


def prune_by_page_index(
    plan: AccessPlan,
    node: FilterNode,
    *,
    footer: ParquetFooter,
    leaf_of_field: Callable[[int], LeafColumn | None],
    stream: InputStream,
    metrics: ScanMetrics,
) -> None:
    """Refine the plan with row selections derived from the page index of the filter's columns."""
    locations = page_index_locations(footer)
    for row_group in list(plan.scanned_row_groups()):
        keep, pages_by_leaf = _row_group_page_selection(
            node,
            locations=locations[row_group],
            row_count=plan.row_group_num_rows[row_group],
            leaf_of_field=leaf_of_field,
            stream=stream,
            source=footer.path,
            metrics=metrics,
        )
        _count_and_apply(plan, row_group, keep, pages_by_leaf, metrics)


def _row_group_page_selection(
    node: FilterNode,
    *,
    locations: list[PageIndexLocation],
    row_count: int,
    leaf_of_field: Callable[[int], LeafColumn | None],
    stream: InputStream,
    source: str,
    metrics: ScanMetrics,
) -> tuple[np.ndarray | None, dict[int, ColumnPages]]:
    """The rows of one row group the page index cannot rule out (None = all) and the pages it read."""
    pages_by_leaf: dict[int, ColumnPages] = {}

    def leaf_mask(predicate: ColumnPredicate) -> np.ndarray | None:
        leaf = leaf_of_field(predicate.field_id)
        if leaf is None or leaf.is_repeated:
            return None
        if leaf.index not in pages_by_leaf:
            location = locations[leaf.index]
            if not location.is_complete:
                return None
            pages, bytes_read = read_column_pages(stream, location, leaf, row_count, source)
            metrics.bytes_read += bytes_read
            pages_by_leaf[leaf.index] = pages
        pages = pages_by_leaf[leaf.index]
        page_matches = np.fromiter((might_match(predicate, b) for b in pages.bounds), bool, len(pages.bounds))
        return None if page_matches.all() else np.repeat(page_matches, pages.row_counts)

    def all_of(masks: list[np.ndarray | None]) -> np.ndarray | None:
        present = [mask for mask in masks if mask is not None]
        return np.logical_and.reduce(present) if present else None

    def any_of(masks: list[np.ndarray | None]) -> np.ndarray | None:
        present = [mask for mask in masks if mask is not None]
        if len(present) < len(masks):
            return None
        return np.logical_or.reduce(present)

    def constant(value: bool) -> np.ndarray | None:
        return None if value else np.zeros(row_count, dtype=bool)

    return fold(node, leaf_mask, all_of, any_of, constant), pages_by_leaf


def _count_and_apply(
    plan: AccessPlan,
    row_group: int,
    keep: np.ndarray | None,
    pages_by_leaf: dict[int, ColumnPages],
    metrics: ScanMetrics,
) -> None:
    for pages in pages_by_leaf.values():
        metrics.pages_total += len(pages.first_rows)
    if keep is None:
        return
    rows_before = plan.selected_row_count(row_group)
    plan.select(row_group, keep)
    metrics.rows_pruned_by_page_index += rows_before - plan.selected_row_count(row_group)
    final = plan.selection(row_group)
    if final is None:
        metrics.row_groups_pruned_by_page_index += 1
        metrics.pages_pruned_by_page_index += sum(len(pages.first_rows) for pages in pages_by_leaf.values())
        return
    if isinstance(final, np.ndarray):
        for pages in pages_by_leaf.values():
            selected_per_page = np.add.reduceat(final.astype(np.int64), pages.first_rows)
            metrics.pages_pruned_by_page_index += int(np.count_nonzero(selected_per_page == 0))
