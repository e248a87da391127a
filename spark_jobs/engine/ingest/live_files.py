"""The table's live data files an ingest touches, found through the read planner, as whole-file slices.

A live data file is one ``DataFileSlice`` covering the whole file, with its partition and the deletes the planner
attached; nothing else describes one. By mode:

1. Upsert / delete: ``files_that_may_hold_keys`` plans a read of the key columns under the range of the batch's
   keys (``key_range_filter``) and, when the batch's keys are on the driver, for each key column the set of its
   values (a file is kept only if one lies within its bounds), so files whose metrics rule the keys out are never
   listed, let alone read; each
   file's deletes (position, deletion vector, equality) stay attached in position mode: rows deleted already are
   not matched again (an older copy of a key, deleted by an equality delete, neither gets a position deleted again
   nor lends its ``_row_id`` to the row an upsert writes). Equality mode reads no deletes: a dead copy's key only
   adds an equality delete that deletes nothing. ``partitions_of`` numbers their partitions, which the delete
   files are written to, and ``key_scan_context`` reads their key columns with each row's position (the ``_pos``
   metadata column) and, for an upsert on v3 with position deletes, its ``_row_id``: the row written in its place
   keeps it.
2. Overwrite by filter: ``rows_to_keep`` plans one read under the filter: its files are the ones to remove, and
   the same tasks read where the filter is not true (``unmatched_rows``: NULL and NaN kept) are the rows to write
   back, on v3 with their lineage (``_row_id``, ``_last_updated_sequence_number``) for the new files to keep.
3. Dynamic overwrite: ``files_in_partitions`` lists the live data files of the partitions the new rows fall in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import AlwaysFalse, AlwaysTrue, And, BooleanExpression, GreaterThanOrEqual, LessThanOrEqual
from pyiceberg.manifest import ManifestContent
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

from spark_jobs.engine.commit.snapshot_change import PartitionKey
from spark_jobs.engine.ingest.unmatched_rows import unmatched_rows_filter
from spark_jobs.engine.planning.metrics_filter import sorted_key_values
from spark_jobs.engine.planning.scan_context import ROW_ID, ROW_POSITION, ScanContext, row_lineage_fields
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, ScanTask
from spark_jobs.engine.read.session import build_scan_context, open_read_session
from spark_jobs.engine.table.manifest_entries import partition_values, read_live_entries

# Key types whose range the planner can prune data files with (bounds compare exactly in both engines).
_RANGE_TYPES = (IntegerType, LongType, StringType)


def range_key_columns(key_schema: Schema) -> list[str]:
    """The key columns whose batch range prunes files: integers and strings."""
    return [f.name for f in key_schema.fields if isinstance(f.field_type, _RANGE_TYPES)]


def key_range_filter(columns: Sequence[str], bounds: Sequence[tuple[Any, Any]] | None) -> BooleanExpression:
    """Rows whose ``columns`` lie within the batch's (low, high) ``bounds``; None bounds: an empty batch, no row."""
    if not columns:
        return AlwaysTrue()
    if bounds is None:
        return AlwaysFalse()  # an empty batch deletes nothing
    condition: BooleanExpression = AlwaysTrue()
    for name, (low, high) in zip(columns, bounds, strict=True):
        # pyiceberg's predicates take (term, literal) positionally; the pydantic signature mypy sees does not.
        at_least, at_most = GreaterThanOrEqual(name, low), LessThanOrEqual(name, high)  # type: ignore[call-arg]
        condition = And(condition, And(at_least, at_most))
    return condition


def files_that_may_hold_keys(
    table: Table,
    key: Sequence[str],
    key_range: BooleanExpression,
    *,
    with_position_deletes: bool,
    batch_keys: pa.Table | None = None,
) -> list[DataFileSlice]:
    """Whole live data files the read planner keeps under ``key_range`` (module doc, step 1), in plan order; with
    the batch's distinct ``batch_keys``, only files whose bounds may hold one of them in every key column."""
    key_sets = key_sets_of(table.schema(), key, batch_keys) if batch_keys is not None else None
    session = open_read_session(table.catalog, table, columns=list(key), row_filter=key_range, key_sets=key_sets)
    files: dict[str, DataFileSlice] = {}
    for task in session.tasks:
        for data_file in task.slices:
            if data_file.path in files:
                continue  # a large file split in several slices is one file
            whole = dataclasses.replace(data_file, start=0, length=data_file.file_size_in_bytes)
            if not with_position_deletes:
                whole = dataclasses.replace(whole, position_deletes=(), deletion_vector=None, equality_deletes=())
            files[data_file.path] = whole
    return list(files.values())


def key_sets_of(schema: Schema, key: Sequence[str], batch_keys: pa.Table) -> dict[int, np.ndarray]:
    """Per key column whose bounds can be compared with its values, the batch's distinct values, sorted."""
    key_sets = {}
    for name in key:
        field = schema.find_field(name)
        values = sorted_key_values(batch_keys.column(name).combine_chunks(), field.field_type)
        if values is not None:
            key_sets[field.field_id] = values
    return key_sets


def partitions_of(files: Iterable[DataFileSlice]) -> list[PartitionKey]:
    """The distinct (spec id, partition values) of ``files``, in first-seen order (their index is their ordinal)."""
    return list(dict.fromkeys((data_file.spec_id, data_file.partition) for data_file in files))


def keys_decide_partition(table: Table, key: Sequence[str], files: Iterable[DataFileSlice]) -> bool:
    """Whether the default spec partitions by key columns only and every file that may hold a key is in that spec.

    Then a key's partition follows from the key itself, so equality deletes can be written by the batch's
    partitions without reading the table.
    """
    spec, schema = table.spec(), table.schema()
    spec_sources = {schema.find_column_name(partition_field.source_id) for partition_field in spec.fields}
    return spec_sources <= set(key) and all(data_file.spec_id == spec.spec_id for data_file in files)


def key_scan_context(
    table: Table, key: Sequence[str], files: Sequence[DataFileSlice], *, with_row_id: bool = False
) -> ScanContext:
    """The context reading ``files``' key columns and each row's position (``_pos``), deletes applied; with
    ``with_row_id`` each row's ``_row_id`` too (a v3 upsert copies it into the row that replaces it)."""
    schema = table.schema()
    key_fields: list[NestedField] = [schema.find_field(name) for name in key]
    return build_scan_context(table, schema, [*key_fields, ROW_POSITION, *([ROW_ID] if with_row_id else [])], files)


@dataclass(frozen=True)
class RowsToKeep:
    """An overwrite by filter: the data files it removes, and the read of their rows the filter does not match."""

    removed_paths: frozenset[str]
    tasks: list[ScanTask]
    context: ScanContext


def rows_to_keep(table: Table, overwrite_filter: str) -> RowsToKeep:
    """One plan under the filter: its files are removed; its tasks, read where the filter is not true, keep rows."""
    matching = open_read_session(table.catalog, table, row_filter=overwrite_filter)
    plan = matching.plan
    slices = [data_file for task in plan.tasks for data_file in task.slices]
    context = build_scan_context(
        table,
        plan.schema,
        [*plan.schema.fields, *row_lineage_fields(table)],
        slices,
        row_filter=unmatched_rows_filter(plan.bound_filter, plan.schema),
        case_sensitive=plan.case_sensitive,
    )
    return RowsToKeep(frozenset(data_file.path for data_file in slices), list(plan.tasks), context)


def files_in_partitions(table: Table, partitions: set[PartitionKey]) -> set[str]:
    """Paths of the current snapshot's live data files in ``partitions``."""
    snapshot = table.current_snapshot()
    if snapshot is None or not partitions:
        return set()
    return {
        entry.data_file.file_path
        for manifest in snapshot.manifests(table.io)
        if manifest.content == ManifestContent.DATA
        for entry in read_live_entries(manifest, table.io)
        if (entry.data_file.spec_id, partition_values(entry.data_file)) in partitions
    }
