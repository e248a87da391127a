"""Prune row groups by their column chunk statistics (min, max, null count) from the footer.

1. For every row group the access plan still scans, and every column the filter names, turn the chunk statistics
   into ``ValueBounds``: bounds decoded from the raw physical values (``file_columns.decode_raw``), which refuses
   what it cannot order safely (INT96, unsigned, NaN bounds), and the null count when the writer recorded it.
2. Columns under a list or map, and columns without statistics, give no bounds: they never prune.
3. Evaluate the predicate tree with ``predicates.might_match`` at the leaves; when it cannot match, skip the row
   group and count it in ``row_groups_pruned_by_statistics``.

``FieldStatistics`` answers per field id: a field the file lacks reads as NULL (all-NULL bounds) unless it has an
initial default, an identity partition constant is known only when NULL, other fields use their leaf's statistics;
a variant (a group of leaves) has none. For a comparison on a path of a top-level variant, ``variant_path_bounds``
gives the statistics of the path's shredded ``typed_value`` leaf, converted to the comparison's domain, but only
where no row can hold the path's value elsewhere: every ``value`` leaf along the path (the variant's own, each
object field's) is all NULL in the row group. Otherwise, for a path with an array index or a key holding '.',
nothing is known.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow.parquet as pq
from pyiceberg.schema import Schema

from spark_jobs.engine.parquet.access_plan import AccessPlan
from spark_jobs.engine.parquet.file_columns import LeafColumn, decode_raw
from spark_jobs.engine.parquet.predicates import ColumnPredicate, FilterNode, ValueBounds, might_match, might_match_tree
from spark_jobs.engine.parquet.row_group_reader import FileColumnResolver
from spark_jobs.engine.shared.extended_predicates import VariantPathCondition
from spark_jobs.engine.shared.iceberg_model import is_variant
from spark_jobs.engine.shared.metrics import ScanMetrics

BoundsLookup = Callable[[int, int], ValueBounds | None]  # (row group, field id) -> bounds or None when unknown
# (row group, variant-path leaf) -> bounds of the path's shredded column or None when unknown
PathBoundsLookup = Callable[[int, ColumnPredicate], ValueBounds | None]
_EPOCH_DATE = dt.date(1970, 1, 1)


def statistics_bounds(row_group: pq.RowGroupMetaData, leaf: LeafColumn) -> ValueBounds | None:
    """What a row group's statistics say about one leaf column, or None when they say nothing usable."""
    if leaf.is_repeated:
        return None
    chunk = row_group.column(leaf.index)
    if not chunk.is_stats_set:
        return None
    statistics = chunk.statistics
    null_count = statistics.null_count if statistics.has_null_count else None
    lower = upper = None
    if statistics.has_min_max:
        lower = decode_raw(statistics.min_raw, leaf, is_upper_bound=False)
        upper = decode_raw(statistics.max_raw, leaf, is_upper_bound=True)
    return ValueBounds(row_group.num_rows, null_count, lower, upper, may_contain_nan=leaf.is_floating)


class FieldStatistics:
    """Per file: the leaf column holding a filter field (when the file has one) and what metadata says about it."""

    def __init__(
        self,
        metadata: pq.FileMetaData,
        resolver: FileColumnResolver,
        leaves: list[LeafColumn],
        read_schema: Schema,
    ) -> None:
        self.metadata = metadata
        self.resolver = resolver
        self.leaf_by_field_id = {leaf.field_id: leaf for leaf in leaves if leaf.field_id is not None}
        self.read_schema = read_schema
        self._leaves = leaves

    def leaf_of_field(self, field_id: int) -> LeafColumn | None:
        """The file's leaf column for a field the reader takes from the file; None for constants and missing ones."""
        resolver = self.resolver
        if field_id in resolver.constants or resolver.paths[field_id].top_level_field_id not in resolver.file_fields:
            return None
        return self.leaf_by_field_id.get(field_id)

    def bounds_of(self, row_group: int, field_id: int) -> ValueBounds | None:
        """What the row group's statistics (or the field's absence) say about the field; None when nothing."""
        row_count = self.metadata.row_group(row_group).num_rows
        top_level_id = self.resolver.paths[field_id].top_level_field_id
        if top_level_id in self.resolver.constants:
            return ValueBounds(row_count, row_count) if self.resolver.constants[top_level_id] is None else None
        leaf = self.leaf_of_field(field_id)
        if leaf is not None:
            return statistics_bounds(self.metadata.row_group(row_group), leaf)
        field = self.read_schema.find_field(field_id)
        if is_variant(field.field_type) and top_level_id in self.resolver.file_fields:
            return None  # a variant's leaves carry no field id: nothing is known of it as a whole
        if field.initial_default is None:
            return ValueBounds(row_count, row_count)  # a field the file lacks reads as NULL
        return None

    def variant_path_bounds(self, row_group: int, predicate: ColumnPredicate) -> ValueBounds | None:
        """What the row group's shredded column of a variant path says about the path's values (module doc)."""
        condition = predicate.condition
        if not isinstance(condition, VariantPathCondition) or predicate.field_id in self.resolver.constants:
            return None
        if any(isinstance(key, int) or "." in key for key in condition.path):
            return None
        leaves = {leaf.path: leaf for leaf in self._leaves if leaf.top_level_field_id == predicate.field_id}
        if not leaves or predicate.field_id not in {field.field_id for field in self.read_schema.fields}:
            return None
        root = next(iter(leaves)).split(".")[0]
        levels = [
            root + "".join(f".typed_value.{key}" for key in condition.path[:depth])
            for depth in range(len(condition.path) + 1)
        ]
        typed_leaf = leaves.get(levels[-1] + ".typed_value")
        if typed_leaf is None or typed_leaf.is_repeated:
            return None
        metadata = self.metadata.row_group(row_group)
        for level in levels:
            residual = leaves.get(level + ".value")
            if residual is not None and not _all_null(metadata, residual):
                return None
        bounds = statistics_bounds(metadata, typed_leaf)
        if bounds is None:
            return None
        kind = condition.value_type.kind
        lower = _in_domain(bounds.lower, typed_leaf, kind)
        upper = _in_domain(bounds.upper, typed_leaf, kind)
        return ValueBounds(bounds.row_count, bounds.null_count, lower, upper)


def _all_null(row_group: pq.RowGroupMetaData, leaf: LeafColumn) -> bool:
    chunk = row_group.column(leaf.index)
    statistics = chunk.statistics if chunk.is_stats_set else None
    return statistics is not None and statistics.has_null_count and statistics.null_count == row_group.num_rows


def _in_domain(bound: Any, leaf: LeafColumn, kind: str) -> Any:
    """A shredded column's bound as ``variant_paths`` compares values of ``kind``; None when it is of another kind."""
    if bound is None:
        return None
    logical = leaf.logical_type
    numeric = logical in ("NONE", "INT") and leaf.physical_type in ("INT32", "INT64", "FLOAT", "DOUBLE")
    if kind == "number" and (numeric or logical == "DECIMAL"):
        return bound
    if kind == "string" and logical == "STRING":
        try:
            return bytes(bound).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if kind == "boolean" and leaf.physical_type == "BOOLEAN":
        return bool(bound)
    if kind == "date" and logical == "DATE":
        return _EPOCH_DATE + dt.timedelta(days=bound)
    return None


def prune_by_statistics(
    plan: AccessPlan,
    node: FilterNode,
    bounds_of: BoundsLookup,
    metrics: ScanMetrics,
    path_bounds_of: PathBoundsLookup | None = None,
) -> None:
    """Skip every scanned row group whose statistics prove no row matches ``node`` (``path_bounds_of`` answers for
    variant-path leaves)."""
    for row_group in list(plan.scanned_row_groups()):

        def leaf_might_match(predicate: ColumnPredicate, row_group: int = row_group) -> bool:
            if isinstance(predicate.condition, VariantPathCondition):
                bounds = path_bounds_of(row_group, predicate) if path_bounds_of is not None else None
                return might_match(predicate, bounds)
            return might_match(predicate, bounds_of(row_group, predicate.field_id))

        if not might_match_tree(node, leaf_might_match):
            plan.skip(row_group)
            metrics.row_groups_pruned_by_statistics += 1
