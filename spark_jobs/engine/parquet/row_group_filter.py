"""Prune row groups by their column chunk statistics (min, max, null count) from the footer.

1. For every row group the access plan still scans, and every column the filter names, turn the chunk statistics
   into ``ValueBounds``: bounds decoded from the raw physical values (``file_columns.decode_raw``), which refuses
   what it cannot order safely (INT96, unsigned, NaN bounds), and the null count when the writer recorded it.
2. Columns under a list or map, and columns without statistics, give no bounds: they never prune.
3. Evaluate the predicate tree with ``predicates.might_match`` at the leaves; when it cannot match, skip the row
   group and count it in ``row_groups_pruned_by_statistics``.

``FieldStatistics`` answers per field id: a field the file lacks reads as NULL (all-NULL bounds) unless it has an
initial default, an identity partition constant is known only when NULL, other fields use their leaf's statistics.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow.parquet as pq
from pyiceberg.schema import Schema

from spark_jobs.engine.parquet.access_plan import AccessPlan
from spark_jobs.engine.parquet.file_columns import LeafColumn, decode_raw
from spark_jobs.engine.parquet.predicates import ColumnPredicate, FilterNode, ValueBounds, might_match, might_match_tree
from spark_jobs.engine.parquet.row_group_reader import FileColumnResolver
from spark_jobs.engine.shared.metrics import ScanMetrics

BoundsLookup = Callable[[int, int], ValueBounds | None]  # (row group, field id) -> bounds or None when unknown


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
        if self.read_schema.find_field(field_id).initial_default is None:
            return ValueBounds(row_count, row_count)  # a field the file lacks reads as NULL
        return None


def prune_by_statistics(plan: AccessPlan, node: FilterNode, bounds_of: BoundsLookup, metrics: ScanMetrics) -> None:
    """Skip every scanned row group whose statistics prove no row matches ``node``."""
    for row_group in list(plan.scanned_row_groups()):

        def leaf_might_match(predicate: ColumnPredicate, row_group: int = row_group) -> bool:
            return might_match(predicate, bounds_of(row_group, predicate.field_id))

        if not might_match_tree(node, leaf_might_match):
            plan.skip(row_group)
            metrics.row_groups_pruned_by_statistics += 1
