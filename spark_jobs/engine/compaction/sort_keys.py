"""The keys a sort or z-order rewrite orders rows by, as Arrow columns that pyarrow sorts the way Iceberg Java does.

A ``SortKeySpec`` is a list of key parts (picklable: schema and transforms travel as JSON and text):

1. A sort field (source column, transform, direction, null order) becomes two columns: a rank and the transformed
   value. The rank puts nulls first or last and NaN where Spark's ordering has it (NaN is larger than every number:
   last when ascending, first when descending), so pyarrow's own NaN and null placement never decide anything.
   Values in the null or NaN rank are set to null, so equal keys compare equal everywhere.
2. A z-order part becomes one fixed-width binary column, the interleaved bits of its columns (``zorder``),
   ascending with nulls last as Java's ``ICEZVALUE`` sort field. It is always the last part.
3. A rewrite into another partition spec than its files' own (``with_partition_prefix``) first orders rows by the
   output spec's partition fields, ascending with nulls first (Java's ``SortOrderUtil.buildSortOrder``), so each
   output partition's rows stay sorted.

``key_table`` builds the columns for some rows, ``sort_keys`` is the ``pc.sort_indices`` spec over them, and
``sort_rows`` orders rows by their keys (a stable sort).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortOrder
from pyiceberg.transforms import IdentityTransform, Transform, parse_transform
from pyiceberg.types import DoubleType, FloatType, IcebergType

from spark_jobs.engine.compaction.zorder import DEFAULT_MAX_OUTPUT_SIZE, DEFAULT_VAR_LENGTH_CONTRIBUTION, zorder_values
from spark_jobs.engine.write.partitioning import transform_values

SortKey = tuple[str, str, str]  # (column, "ascending"|"descending", "at_start"|"at_end") for pc.sort_indices
ZORDER_COLUMN = "_zvalue"


@dataclass(frozen=True)
class SortPart:
    """One sort field: the source field id, its transform (as text, e.g. ``bucket[16]``), direction, null order."""

    source_id: int
    transform: str
    descending: bool = False
    nulls_first: bool = True


@dataclass(frozen=True)
class ZOrderPart:
    """The z-order of these source fields, with Java's z-order options."""

    source_ids: tuple[int, ...]
    var_length_contribution: int = DEFAULT_VAR_LENGTH_CONTRIBUTION
    max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE


@dataclass(frozen=True)
class SortKeySpec:
    """How a rewrite orders rows (module doc); built on the driver, used on the executors."""

    schema_json: str
    parts: tuple[SortPart, ...] = ()
    zorder: ZOrderPart | None = None

    @classmethod
    def for_sort_order(cls, schema: Schema, order: SortOrder) -> SortKeySpec:
        """The keys of an Iceberg sort order."""
        parts = tuple(
            SortPart(
                source_id=field.source_id,
                transform=str(field.transform),
                descending=field.direction == SortDirection.DESC,
                nulls_first=field.null_order == NullOrder.NULLS_FIRST,
            )
            for field in order.fields
        )
        return cls(schema.model_dump_json(), parts)

    @classmethod
    def for_zorder(
        cls,
        schema: Schema,
        source_ids: tuple[int, ...],
        *,
        var_length_contribution: int = DEFAULT_VAR_LENGTH_CONTRIBUTION,
        max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE,
    ) -> SortKeySpec:
        """The key of a z-order over the given source fields."""
        return cls(schema.model_dump_json(), (), ZOrderPart(source_ids, var_length_contribution, max_output_size))

    def with_partition_prefix(self, spec: PartitionSpec) -> SortKeySpec:
        """These keys after the partition fields of ``spec`` (module doc, step 3)."""
        prefix = tuple(SortPart(field.source_id, str(field.transform)) for field in spec.fields)
        return SortKeySpec(self.schema_json, prefix + self.parts, self.zorder)

    @cached_property
    def schema(self) -> Schema:
        """The schema the source ids refer to."""
        return Schema.model_validate_json(self.schema_json)

    @property
    def source_ids(self) -> tuple[int, ...]:
        """Every source field the keys read, in key order."""
        ids = [part.source_id for part in self.parts]
        if self.zorder is not None:
            ids += self.zorder.source_ids
        return tuple(dict.fromkeys(ids))

    @property
    def sort_keys(self) -> list[SortKey]:
        """The ``pc.sort_indices`` keys over ``key_table`` columns."""
        keys: list[SortKey] = []
        for index, part in enumerate(self.parts):
            keys.append((f"_rank{index}", "ascending", "at_end"))
            keys.append((f"_key{index}", "descending" if part.descending else "ascending", "at_end"))
        if self.zorder is not None:
            keys.append((ZORDER_COLUMN, "ascending", "at_end"))
        return keys

    @property
    def key_column_names(self) -> list[str]:
        """The names of ``key_table``'s columns, in order."""
        return [name for name, _, _ in self.sort_keys] or ["_none"]

    def key_table(self, rows: pa.Table | pa.RecordBatch) -> pa.Table:
        """The key columns of ``rows`` (module doc, steps 1 and 2)."""
        columns: dict[str, pa.Array] = {}
        for index, part in enumerate(self.parts):
            field_type = self.schema.find_field(part.source_id).field_type
            values = source_values(rows, self.schema, part.source_id)
            transform: Transform[Any, Any] = parse_transform(part.transform)
            key = transform_values(values, field_type, transform)
            rank, key = _ranked(
                key, part, is_floating=isinstance(transform, IdentityTransform) and _floating(field_type)
            )
            columns[f"_rank{index}"] = rank
            columns[f"_key{index}"] = key
        if self.zorder is not None:
            zorder = self.zorder
            columns[ZORDER_COLUMN] = zorder_values(
                [source_values(rows, self.schema, source_id) for source_id in zorder.source_ids],
                [self.schema.find_field(source_id).field_type for source_id in zorder.source_ids],
                var_length_contribution=zorder.var_length_contribution,
                max_output_size=zorder.max_output_size,
            )
        if not columns:
            return pa.table({"_none": pa.nulls(rows.num_rows, pa.int8())})
        return pa.table(columns)

    def sort_indices(self, keys: pa.Table) -> np.ndarray:
        """Positions of ``keys``' rows in sorted order (stable)."""
        if not self.sort_keys:
            return np.arange(keys.num_rows)
        return pc.sort_indices(keys, sort_keys=self.sort_keys).to_numpy()

    def sort_rows(self, rows: pa.Table) -> pa.Table:
        """``rows`` ordered by their keys."""
        if rows.num_rows < 2:
            return rows
        return rows.take(self.sort_indices(self.key_table(rows)))


def source_values(rows: pa.Table | pa.RecordBatch, schema: Schema, field_id: int) -> pa.Array:
    """The values of a (possibly nested, through structs) field for every row; a null parent gives null."""
    path = _field_path(schema, field_id)
    column: Any = rows.column(path[0])
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    for name in path[1:]:
        column = pc.struct_field(column, [column.type.get_field_index(name)])
    return column


def _field_path(schema: Schema, field_id: int) -> list[str]:
    parents = schema._lazy_id_to_parent
    path = [schema.find_field(field_id).name]
    parent = parents.get(field_id)
    while parent is not None:
        path.insert(0, schema.find_field(parent).name)
        parent = parents.get(parent)
    return path


def _floating(field_type: IcebergType) -> bool:
    return isinstance(field_type, (FloatType, DoubleType))


def _ranked(key: pa.Array, part: SortPart, *, is_floating: bool) -> tuple[pa.Array, pa.Array]:
    """The rank column (nulls and NaN placed as Spark orders them) and the key with those values nulled."""
    nulls = key.is_null().to_numpy(zero_copy_only=False)
    nans = pc.fill_null(pc.is_nan(key), False).to_numpy(zero_copy_only=False) if is_floating else np.zeros_like(nulls)
    # Ranks, ascending: the group placed first gets 0. Values rank 1 between nulls and NaN, or at the edges.
    if part.nulls_first:
        null_rank, nan_rank, value_rank = (0, 2, 1) if not part.descending else (0, 1, 2)
    else:
        null_rank, nan_rank, value_rank = (2, 1, 0) if not part.descending else (2, 0, 1)
    rank = np.full(len(key), value_rank, dtype=np.int8)
    rank[nans] = nan_rank
    rank[nulls] = null_rank
    if nans.any():
        key = pc.if_else(pa.array(nans), pa.nulls(len(key), key.type), key)
    return pa.array(rank, pa.int8()), key
