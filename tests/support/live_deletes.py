"""The deletion vectors, data files and row lineage of a table's current snapshot: what v3 write tests assert on."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.table import Table

from spark_jobs.engine.deletes.deletion_vectors import read_deletion_vector
from spark_jobs.engine.planning.delete_index import file_scope
from spark_jobs.engine.planning.scan_context import ROW_LINEAGE
from spark_jobs.engine.planning.scan_tasks import DeletionVector
from spark_jobs.engine.read.session import build_scan_context, open_read_session
from spark_jobs.engine.read.task_scan import read_slices
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_entries import (
    content_offset,
    content_size_in_bytes,
    first_row_id,
    read_live_entries,
    read_manifest_list,
    referenced_data_file,
)


def live_deletion_vectors(
    table: Table, *, position_delete_files: bool = False
) -> list[tuple[DeletionVector, list[int]]]:
    """Every live deletion vector and its positions; fails on a position delete file (v3 writes none) unless
    ``position_delete_files`` (a table that was v2 may keep some)."""
    found = []
    for manifest in table.current_snapshot().manifests(table.io):
        for entry in read_live_entries(manifest, table.io):
            data_file = entry.data_file
            if data_file.content != DataFileContent.POSITION_DELETES:
                continue
            if data_file.file_format != FileFormat.PUFFIN:
                assert position_delete_files, f"{data_file.file_path} is a position delete file"
                continue
            vector = DeletionVector(
                data_file.file_path,
                content_offset(data_file),
                content_size_in_bytes(data_file),
                data_file.record_count,
                referenced_data_file(data_file),
                entry.sequence_number,
            )
            found.append((vector, read_deletion_vector(vector, io=table.io).tolist()))
    return found


def live_data_file_rows(table: Table) -> dict[str, int]:
    """Every live data file of the current snapshot and its row count (deletes not applied)."""
    rows = {}
    for manifest in table.current_snapshot().manifests(table.io):
        for entry in read_live_entries(manifest, table.io):
            if entry.data_file.content == DataFileContent.DATA:
                rows[entry.data_file.file_path] = entry.data_file.record_count
    return rows


def live_position_delete_files(table: Table) -> dict[str, str | None]:
    """Every live position delete file (Parquet, not a deletion vector) and the one data file it is scoped to
    (``referenced_data_file``, or equal ``file_path`` bounds), None when it may name several."""
    found = {}
    for manifest in table.current_snapshot().manifests(table.io):
        for entry in read_live_entries(manifest, table.io):
            data_file = entry.data_file
            if data_file.content == DataFileContent.POSITION_DELETES and data_file.file_format != FileFormat.PUFFIN:
                found[data_file.file_path] = file_scope(data_file)
    return found


def live_data_file_first_row_ids(table: Table) -> dict[str, int | None]:
    """Every live data file of the current snapshot and its first row id (v3 row lineage, inherited as read)."""
    found = {}
    for manifest in read_manifest_list(table.current_snapshot(), table.io):
        for entry in read_live_entries(manifest, table.io):
            if entry.data_file.content == DataFileContent.DATA:
                found[entry.data_file.file_path] = first_row_id(entry.data_file)
    return found


def live_row_lineage(table: Table, key: str = "id") -> dict[object, tuple[int | None, int | None]]:
    """Every row of the current snapshot's live data files (deletes not applied), by ``key``: its ``_row_id`` and
    ``_last_updated_sequence_number``, the values its file stores or else the inherited ones (first row id +
    position, the file's data sequence number)."""
    found: dict[object, tuple[int | None, int | None]] = {}
    for manifest in read_manifest_list(table.current_snapshot(), table.io):
        for entry in read_live_entries(manifest, table.io):
            data_file = entry.data_file
            if data_file.content != DataFileContent.DATA:
                continue
            data = pq.read_table(data_file.file_path.removeprefix("file://"))
            stored = [
                data.column(name).to_pylist() if name in data.column_names else [None] * data.num_rows
                for name in ("_row_id", "_last_updated_sequence_number")
            ]
            first = first_row_id(data_file)
            for position, (value, row_id, sequence) in enumerate(
                zip(data.column(key).to_pylist(), *stored, strict=True)
            ):
                inherited_id = None if first is None else first + position
                found[value] = (
                    inherited_id if row_id is None else row_id,
                    entry.sequence_number if sequence is None else sequence,
                )
    return found


def read_row_lineage(table: Table, key: str = "id") -> list[tuple[Any, int | None, int | None]]:
    """Every live row of the current snapshot (deletes applied) as (``key``, ``_row_id``,
    ``_last_updated_sequence_number``), the lineage as our reader serves it (the engine's per-task scan), sorted."""
    session = open_read_session(table.catalog, table, columns=[key])
    slices = [data_file for task in session.tasks for data_file in task.slices]
    schema = table.schema()
    context = build_scan_context(table, schema, [schema.find_field(key), *ROW_LINEAGE], slices)
    rows = pa.Table.from_batches(list(read_slices(slices, context, ScanMetrics())), schema=context.output_schema)
    return sorted(zip(*(column.to_pylist() for column in rows.columns), strict=True))
