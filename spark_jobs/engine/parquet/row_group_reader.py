"""Decode the columns of a run of row groups on demand, projected to the read schema, and serve them by field id.

Late materialization asks for columns of one row group in several rounds (a predicate's columns, then the rest);
row groups without filter conjuncts are read in runs of several, one decoding call per run. This reader:

1. Resolves each top-level read field once per file: an identity partition constant (never read from the file), a
   file column with the same field id (read by its name in the file), the ``_pos`` metadata column (each row's
   position in the file, from the row groups' row counts), or a field the file lacks (NULLs or the initial
   default).
2. Reads, in one ``read_row_groups`` call per round, only the file columns not read yet, projects each onto its
   read field (``schema_projection.project_column``) and keeps the result for later rounds. Over a run, each column
   is a chunked array with the run's row groups one after the other.
3. Serves a nested primitive field (inside structs) by walking the projected struct columns; a NULL parent makes the
   child NULL.
4. Counts the compressed bytes and rows it decoded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, StructType

from spark_jobs.engine.parquet.file_columns import LeafColumn
from spark_jobs.engine.parquet.schema_projection import ArrowColumn, constant_column, project_column
from spark_jobs.engine.parquet.sized_fragment import FragmentRowGroups
from spark_jobs.engine.planning.scan_context import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, ROW_POSITION
from spark_jobs.engine.shared.errors import InvalidFilterError
from spark_jobs.engine.shared.metrics import ScanMetrics

_LINEAGE_IDS = frozenset({ROW_ID.field_id, LAST_UPDATED_SEQUENCE_NUMBER.field_id})


@dataclass(frozen=True)
class FieldPath:
    """Where a read-schema field lives: its top-level field id and the struct child positions below it."""

    top_level_field_id: int
    child_positions: tuple[int, ...] = ()


def field_paths(read_schema: Schema) -> dict[int, FieldPath]:
    """Every field reachable from the top level through structs only, by field id."""
    paths: dict[int, FieldPath] = {}
    for top_field in read_schema.fields:
        paths[top_field.field_id] = FieldPath(top_field.field_id)
        _add_struct_children(top_field, FieldPath(top_field.field_id), paths)
    return paths


def _add_struct_children(field: NestedField, path: FieldPath, paths: dict[int, FieldPath]) -> None:
    if not isinstance(field.field_type, StructType):
        return
    for position, child in enumerate(field.field_type.fields):
        child_path = FieldPath(path.top_level_field_id, (*path.child_positions, position))
        paths[child.field_id] = child_path
        _add_struct_children(child, child_path, paths)


class FileColumnResolver:
    """Per file: how each top-level read field is produced, and what reading it costs per row group."""

    def __init__(
        self,
        read_schema: Schema,
        file_schema: Schema,
        leaves: list[LeafColumn],
        partition_constants: Mapping[int, Any],
        row_lineage: tuple[int | None, int] = (None, 0),
    ) -> None:
        self.read_schema = read_schema
        # (first row id, data sequence number) of the file: the values its rows inherit for the lineage columns
        self.row_lineage = row_lineage
        self.file_schema = file_schema
        self.paths = field_paths(read_schema)
        top_level_file_fields = {field.field_id: field for field in file_schema.fields}
        self.constants = {
            field.field_id: partition_constants[field.field_id]
            for field in read_schema.fields
            if field.field_id in partition_constants
        }
        self.file_fields = {
            field.field_id: top_level_file_fields[field.field_id]
            for field in read_schema.fields
            if field.field_id in top_level_file_fields and field.field_id not in self.constants
        }
        self.leaves_by_top_level_id: dict[int, list[LeafColumn]] = {}
        for leaf in leaves:
            if leaf.top_level_field_id is not None:
                self.leaves_by_top_level_id.setdefault(leaf.top_level_field_id, []).append(leaf)

    def top_level_ids(self, field_ids: Iterable[int]) -> set[int]:
        """The top-level read fields holding the given fields."""
        top_level_ids = set()
        for field_id in field_ids:
            path = self.paths.get(field_id)
            if path is None:
                raise InvalidFilterError(f"field id {field_id} is not in the read schema or sits inside a list or map")
            top_level_ids.add(path.top_level_field_id)
        return top_level_ids

    def compressed_bytes(self, row_group: pq.RowGroupMetaData, top_level_ids: Iterable[int]) -> int:
        """Compressed bytes of the file columns under these top-level fields in one row group."""
        return sum(
            row_group.column(leaf.index).total_compressed_size
            for top_level_id in top_level_ids
            if top_level_id in self.file_fields
            for leaf in self.leaves_by_top_level_id.get(top_level_id, ())
        )


class RowGroupColumns:
    """The projected columns of a run of row groups (often one), decoded on first request and kept for later rounds."""

    def __init__(
        self,
        parquet_file: pq.ParquetFile | FragmentRowGroups,
        row_groups: Sequence[int],
        resolver: FileColumnResolver,
        metrics: ScanMetrics,
        source: str,
        *,
        use_threads: bool = True,
    ) -> None:
        self.parquet_file = parquet_file
        self.use_threads = use_threads  # decode columns on Arrow's threads (never for Python file objects)
        self.row_groups = list(row_groups)
        self.resolver = resolver
        self.metrics = metrics
        self.source = source
        self.row_groups_metadata = [parquet_file.metadata.row_group(index) for index in self.row_groups]
        self.num_rows = sum(metadata.num_rows for metadata in self.row_groups_metadata)
        self.columns: dict[int, ArrowColumn] = {}
        self._rows_counted = False

    @property
    def first_row_group_metadata(self) -> pq.RowGroupMetaData:
        """The run's first row group: predicate costs and the sort column are estimated on it."""
        return self.row_groups_metadata[0]

    def load(self, top_level_ids: Iterable[int]) -> None:
        """Make sure the given top-level fields are decoded and projected."""
        wanted = [field_id for field_id in top_level_ids if field_id not in self.columns]
        if not wanted:
            return
        from_file = [field_id for field_id in wanted if field_id in self.resolver.file_fields]
        if from_file:
            names = [self.resolver.file_fields[field_id].name for field_id in from_file]
            table = self.parquet_file.read_row_groups(self.row_groups, columns=names, use_threads=self.use_threads)
            self.metrics.bytes_read += sum(
                self.resolver.compressed_bytes(metadata, from_file) for metadata in self.row_groups_metadata
            )
            if not self._rows_counted:
                self.metrics.rows_read += self.num_rows
                self._rows_counted = True
            for field_id, name in zip(from_file, names, strict=True):
                read_field = self.resolver.read_schema.find_field(field_id)
                file_field = self.resolver.file_fields[field_id]
                values = table.column(name)
                self.columns[field_id] = project_column(read_field, file_field, values, self.num_rows, self.source)
                if field_id in _LINEAGE_IDS:
                    self.columns[field_id] = self._row_lineage(field_id, self.columns[field_id])
        for field_id in wanted:
            if field_id in self.columns:
                continue
            read_field = self.resolver.read_schema.find_field(field_id)
            if field_id == ROW_POSITION.field_id:
                self.columns[field_id] = self._row_positions()
            elif field_id in _LINEAGE_IDS:
                self.columns[field_id] = self._row_lineage(field_id, None)
            elif field_id in self.resolver.constants:
                value = self.resolver.constants[field_id]
                self.columns[field_id] = constant_column(read_field.field_type, value, self.num_rows)
            else:
                self.columns[field_id] = project_column(read_field, None, None, self.num_rows, self.source)

    def _row_lineage(self, field_id: int, stored: ArrowColumn | None) -> ArrowColumn:
        """A lineage column (``_row_id`` or ``_last_updated_sequence_number``): the file's stored values, nulls
        (or a missing column) filled with what the rows inherit (spec: "Row Lineage"); null before v3."""
        first_row_id, data_sequence_number = self.resolver.row_lineage
        if first_row_id is None:  # a file of a table before v3: nothing to inherit
            inherited = pa.nulls(self.num_rows, pa.int64())
        elif field_id == ROW_ID.field_id:
            inherited = pc.add(self._row_positions(), pa.scalar(first_row_id, pa.int64()))
        else:
            inherited = pa.array(np.full(self.num_rows, data_sequence_number, dtype=np.int64))
        return inherited if stored is None else pc.coalesce(as_array(stored), inherited)

    def _row_positions(self) -> pa.Array:
        """Each row's position in the file (the ``_pos`` metadata column): the run's row groups' row ranges."""
        metadata = self.parquet_file.metadata
        first_rows = np.cumsum([0, *(metadata.row_group(i).num_rows for i in range(metadata.num_row_groups))])
        return pa.array(
            np.concatenate(
                [np.arange(first_rows[i], first_rows[i + 1], dtype=np.int64) for i in self.row_groups]
                or [np.empty(0, dtype=np.int64)]
            )
        )

    def field_column(self, field_id: int) -> ArrowColumn:
        """The projected column of any field reachable through structs (its top-level field must be loaded)."""
        path = self.resolver.paths[field_id]
        column = self.columns[path.top_level_field_id]
        if path.child_positions:
            column = pc.struct_field(column, list(path.child_positions))
        return column


def as_array(column: ArrowColumn) -> pa.Array:
    """A single Arrow array (row predicates take arrays, not chunked arrays)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()  # one chunk: no copy
