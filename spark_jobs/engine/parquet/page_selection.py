"""Read only the pages of a column chunk that hold a few selected rows, through the chunk's offset index.

pyarrow decodes a column chunk whole. When late materialization keeps a few rows of a large row group (a point
lookup), each other projected column needs only the pages holding those rows. For a top-level, non-repeated column
whose chunk has an offset index:

1. From the OffsetIndex (each page's offset, size and first row), the pages whose rows hold a selected row, and, when
   the chunk has a dictionary page, that page too (from ``dictionary_page_offset`` up to the first data page): a
   dictionary-encoded page cannot be decoded without it.
2. Only when those bytes are at most ``PAGE_READ_MAX_FRACTION`` of the chunk, take at most ``PAGE_READ_MAX_RANGES``
   ranges (adjacent pages are one range), and each range beyond the one the chunk would take saves at least
   ``REQUEST_COST_BYTES``: fetch them, concurrently (one request each on an object store); what the footer's tail
   holds costs nothing.
3. Lay them end to end in a small Parquet file in memory: ``PAR1``, the dictionary page, the pages, then a footer with
   one row group of this one column: the column's schema element copied byte for byte from the file's footer, its
   type, encodings, codec and ``created_by`` as written, and the new layout's offsets, sizes and row count. Pages are
   self-contained (their own header, levels and values), so pyarrow decodes them exactly as it would in the file.
4. Take the selected rows: their positions among the rows of the pages kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from spark_jobs.engine.parquet.file_columns import LeafColumn
from spark_jobs.engine.parquet.footer_cache import PARQUET_MAGIC, RANGE_READ_THREADS, ParquetFooter
from spark_jobs.engine.parquet.page_index import page_index_locations
from spark_jobs.engine.parquet.thrift_compact import CompactReader, CompactWriter, list_element_spans
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.thread_pools import process_thread_pool

# Pages (and dictionary) are read alone only when they are at most this share of their chunk's bytes: otherwise the
# chunk is read whole in one range, as before (a second layout costs more than the bytes it would save).
PAGE_READ_MAX_FRACTION = 0.5
# Nor when they take more than this many ranges (one request each on an object store; the chunk takes one).
PAGE_READ_MAX_RANGES = 3
# Each range beyond the chunk's one must save at least this many bytes: a request costs an object store about as much
# time as transferring this many bytes (as ``opener.INDEX_PREFETCH_MAX_BYTES``).
REQUEST_COST_BYTES = 1024 * 1024


@dataclass(frozen=True)
class PageRead:
    """What reading a column's selected rows by pages takes: byte ranges, and the pages' rows and places."""

    leaf: LeafColumn
    dictionary: tuple[int, int] | None  # (offset, length) of the chunk's bytes before its first indexed page
    dictionary_flagged: bool  # the chunk's metadata places a dictionary page there (else its data pages begin there)
    pages: list[tuple[int, int, int, int]]  # per kept page: (offset, length, first row, row count)
    selected_rows: np.ndarray  # the selected rows' indexes within the row group

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """The byte ranges to fetch: the dictionary page, then runs of adjacent pages."""
        ranges: list[tuple[int, int]] = [self.dictionary] if self.dictionary else []
        for offset, length, _, _ in self.pages:
            if ranges and ranges[-1][0] + ranges[-1][1] == offset:
                ranges[-1] = (ranges[-1][0], ranges[-1][1] + length)
            else:
                ranges.append((offset, length))
        return ranges

    @property
    def size(self) -> int:
        """Bytes the read takes."""
        return sum(length for _, length in self.ranges)


def plan_page_read(
    footer: ParquetFooter,
    row_group: int,
    leaf: LeafColumn,
    selected_rows: np.ndarray,
    read_offset_index: Callable[[int, int], bytes],
    *,
    request_cost_bytes: int = REQUEST_COST_BYTES,
) -> PageRead | None:
    """The page read of ``leaf`` for ``selected_rows`` (sorted row indexes in the row group), or None when the column
    is not eligible (nested, repeated, no offset index) or the pages would not save enough (module doc, 2)."""
    if leaf.is_repeated or "." in leaf.path or not len(selected_rows):
        return None
    locations = page_index_locations(footer)
    location = locations[row_group][leaf.index] if row_group < len(locations) else None
    if location is None or location.offset_index_offset is None or not location.offset_index_length:
        return None
    chunk = footer.metadata.row_group(row_group).column(leaf.index)
    offset_index = CompactReader(
        read_offset_index(location.offset_index_offset, location.offset_index_length), source=footer.path
    ).read_struct()
    page_locations = offset_index.get(1) or []
    if not page_locations:
        return None
    offsets = [page.get(1) for page in page_locations]
    lengths = [page.get(2) for page in page_locations]
    first_rows = np.array([page.get(3, 0) for page in page_locations], dtype=np.int64)
    num_rows = footer.metadata.row_group(row_group).num_rows
    row_counts = np.diff(np.append(first_rows, num_rows))
    if first_rows[0] != 0 or (row_counts <= 0).any() or not all(isinstance(v, int) for v in [*offsets, *lengths]):
        return None
    kept = np.unique(np.searchsorted(first_rows, selected_rows, side="right") - 1)
    pages = [(offsets[i], lengths[i], int(first_rows[i]), int(row_counts[i])) for i in kept.tolist()]
    # What precedes the first page the offset index lists is the dictionary page, whether or not the chunk's metadata
    # says so (some writers leave ``dictionary_page_offset`` unset and start the chunk with it at ``data_page_offset``).
    flagged = bool(chunk.has_dictionary_page and chunk.dictionary_page_offset)
    chunk_start = min(chunk.data_page_offset, chunk.dictionary_page_offset if flagged else chunk.data_page_offset)
    chunk_end = chunk_start + chunk.total_compressed_size
    if not 0 < chunk_start <= offsets[0] or any(
        not (offsets[0] <= offset and offset + length <= chunk_end)
        for offset, length in zip(offsets, lengths, strict=True)
    ):
        return None  # an offset index that does not describe this chunk: decode the chunk whole, as before
    dictionary = (chunk_start, offsets[0] - chunk_start) if chunk_start < offsets[0] else None
    read = PageRead(leaf, dictionary, flagged and dictionary is not None, pages, selected_rows)
    chunk_size = chunk.total_compressed_size
    ranges = len(read.ranges)
    if read.size > PAGE_READ_MAX_FRACTION * chunk_size or ranges > PAGE_READ_MAX_RANGES:
        return None
    if chunk_size - read.size < (ranges - 1) * request_cost_bytes:
        return None
    return read


def decode_page_read(
    footer: ParquetFooter, row_group: int, read: PageRead, fetched: dict[int, bytes]
) -> pa.Array | pa.ChunkedArray:
    """The selected rows of the column, decoded from the fetched ranges (``fetched``: bytes by range offset)."""
    body = bytearray(PARQUET_MAGIC)
    dictionary_offset = None
    data_offset = len(body)
    if read.dictionary:
        dictionary_offset = len(body) if read.dictionary_flagged else None
        body += _slice(fetched, *read.dictionary)
        data_offset = len(body) if read.dictionary_flagged else data_offset
    for offset, length, _, _ in read.pages:
        body += _slice(fetched, offset, length)
    rows = sum(count for _, _, _, count in read.pages)
    chunk_bytes = len(body) - (dictionary_offset if dictionary_offset is not None else data_offset)
    footer_bytes = _single_column_footer(
        footer,
        row_group,
        read.leaf,
        data_offset=data_offset,
        dictionary_offset=dictionary_offset,
        compressed=chunk_bytes,
        rows=rows,
    )
    body += footer_bytes + len(footer_bytes).to_bytes(4, "little") + PARQUET_MAGIC
    values = pq.ParquetFile(pa.BufferReader(bytes(body))).read_row_group(0, use_threads=False).column(0)
    if len(values) != rows:
        raise CorruptFileError(f"{footer.path}: pages of column {read.leaf.path} hold {len(values)} rows, not {rows}")
    page_first_rows = np.array([first for _, _, first, _ in read.pages], dtype=np.int64)
    page_starts = np.cumsum([0, *(count for _, _, _, count in read.pages)])[:-1]
    page_of_row = np.searchsorted(page_first_rows, read.selected_rows, side="right") - 1
    positions = page_starts[page_of_row] + (read.selected_rows - page_first_rows[page_of_row])
    return values.take(pa.array(positions))


def _slice(fetched: dict[int, bytes], offset: int, length: int) -> bytes:
    """``length`` bytes at ``offset`` from the fetched range holding them."""
    for start, data in fetched.items():
        if start <= offset and offset + length <= start + len(data):
            return data[offset - start : offset - start + length]
    raise KeyError(f"no fetched range holds [{offset}, {offset + length})")


def _single_column_footer(
    footer: ParquetFooter,
    row_group: int,
    leaf: LeafColumn,
    *,
    data_offset: int,
    dictionary_offset: int | None,
    compressed: int,
    rows: int,
) -> bytes:
    """The Thrift ``FileMetaData`` of the in-memory file: one row group holding this one column (module doc, 3)."""
    file_metadata = CompactReader(footer.footer_bytes, source=f"{footer.path} footer").read_struct()
    column_metadata = file_metadata[4][row_group][1][leaf.index][3]
    spans = list_element_spans(footer.footer_bytes, 2, source=f"{footer.path} footer")
    start, end = spans[_element_index_of_leaf(file_metadata[2], leaf.index, footer.path)]
    element = bytes(footer.footer_bytes[start:end])
    meta = (
        CompactWriter()
        .i32(1, column_metadata[1])
        .i32_list(2, list(column_metadata[2]))
        .binary_list(3, list(column_metadata[3]))
        .i32(4, column_metadata[4])
        .i64(5, rows)
        .i64(6, compressed)
        .i64(7, compressed)
        .i64(9, data_offset)
    )
    if dictionary_offset is not None:
        meta.i64(11, dictionary_offset)
    column_chunk = CompactWriter().i64(2, data_offset).struct(3, meta)
    group = CompactWriter().struct_list(1, [column_chunk.finish()]).i64(2, compressed).i64(3, rows)
    root = CompactWriter().binary(4, b"schema").i32(5, 1)
    writer = (
        CompactWriter()
        .i32(1, file_metadata.get(1, 1))
        .struct_list(2, [root.finish(), element])
        .i64(3, rows)
        .struct_list(4, [group.finish()])
    )
    if isinstance(file_metadata.get(6), bytes):
        writer.binary(6, file_metadata[6])
    return writer.finish()


def _element_index_of_leaf(elements: list[dict[int, Any]], leaf_index: int, path: str) -> int:
    """The position in the footer's schema list of the ``leaf_index``-th leaf (depth first, as Parquet lists them)."""
    leaves_seen = 0
    for position, element in enumerate(elements[1:], start=1):
        if not element.get(5):  # no children: a leaf
            if leaves_seen == leaf_index:
                return position
            leaves_seen += 1
    raise CorruptFileError(f"{path}: the footer's schema has no leaf column {leaf_index}")


def read_selected_rows(
    footer: ParquetFooter,
    row_group: int,
    leaves: dict[int, LeafColumn],
    selected_rows: np.ndarray,
    read_at: Callable[[int, int], bytes],
    *,
    request_cost_bytes: int = REQUEST_COST_BYTES,
) -> tuple[dict[int, pa.Array | pa.ChunkedArray], int]:
    """The selected rows of each column of ``leaves`` (by key) that pages can serve (module doc), with the bytes read
    from storage: every column's ranges fetched at once. ``read_at(length, offset)`` must be safe on several threads;
    the file's tail (``footer.tail``) serves what it holds without a request."""
    reads: dict[int, PageRead] = {}
    tail_start, tail = footer.tail

    def in_tail(offset: int, length: int) -> bool:
        return tail_start <= offset and offset + length <= tail_start + len(tail)

    def read_held(offset: int, length: int) -> bytes:
        if in_tail(offset, length):
            return tail[offset - tail_start : offset - tail_start + length]
        return read_at(length, offset)

    bytes_read = 0

    def read_offset_index(offset: int, length: int) -> bytes:  # on this thread only
        nonlocal bytes_read
        bytes_read += 0 if in_tail(offset, length) else length
        return read_held(offset, length)

    for key, leaf in leaves.items():
        read = plan_page_read(
            footer, row_group, leaf, selected_rows, read_offset_index, request_cost_bytes=request_cost_bytes
        )
        if read is not None:
            reads[key] = read
    wanted = sorted({byte_range for read in reads.values() for byte_range in read.ranges})
    bytes_read += sum(length for offset, length in wanted if not in_tail(offset, length))
    if not wanted:
        return {}, bytes_read
    pool = process_thread_pool("parquet-range-read", RANGE_READ_THREADS)
    results = list(pool.map(lambda byte_range: read_held(*byte_range), wanted))
    fetched = {offset: data for (offset, _), data in zip(wanted, results, strict=True)}
    for (offset, length), data in zip(wanted, results, strict=True):
        if len(data) != length:
            raise CorruptFileError(f"{footer.path}: expected {length} bytes at offset {offset}, got {len(data)}")
    columns = {key: decode_page_read(footer, row_group, read, fetched) for key, read in reads.items()}
    return columns, bytes_read
