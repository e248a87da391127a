"""Late materialization: evaluate the row filter conjunct by conjunct, cheapest first, on surviving rows only.

1. Split the filter on its top-level AND (``predicates.split_conjuncts``); each conjunct is a ``RowPredicate``
   (``FilterConjunct``) naming the field ids it needs. Equality delete sets are row predicates too.
2. Order predicates per row group by cost: the compressed bytes of the columns they still need to read (columns
   read for an earlier predicate are free); predicates on the column the file is sorted on go first.
3. ``surviving_rows`` reads a predicate's columns, evaluates it on the rows not yet rejected, and stops as soon as
   no row survives; the opener reads the other projected columns only when some row does.

Leaf semantics are those stated in ``predicates``: every leaf yields a definite True/False per row (NULL counts as
False except for IS NULL and NOT NAN), which after ``rewrite_not`` gives the same rows as SQL three-valued logic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from spark_jobs.engine.parquet.access_plan import ALL_ROWS, RowSelection
from spark_jobs.engine.parquet.extended_rows import extended_keep_mask
from spark_jobs.engine.parquet.predicates import (
    ColumnPredicate,
    FilterNode,
    fold,
    referenced_field_ids,
    split_conjuncts,
)
from spark_jobs.engine.parquet.row_group_reader import FileColumnResolver, RowGroupColumns, as_array
from spark_jobs.engine.parquet.schema_projection import ArrowColumn
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.shared.row_predicate import PredicateKind, RowPredicate


def evaluate_rows(node: FilterNode, columns: Mapping[int, ArrowColumn], num_rows: int) -> np.ndarray:
    """A boolean numpy mask of ``num_rows``: True where the row satisfies ``node``."""

    def leaf(predicate: ColumnPredicate) -> np.ndarray:
        return leaf_keep_mask(predicate, columns[predicate.field_id])

    def constant(value: bool) -> np.ndarray:
        return np.full(num_rows, value, dtype=bool)

    return fold(node, leaf, np.logical_and.reduce, np.logical_or.reduce, constant)


def leaf_keep_mask(predicate: ColumnPredicate, column: ArrowColumn) -> np.ndarray:
    """True where the column's value satisfies one leaf predicate (NULL rules as in ``predicates``)."""
    if predicate.condition is not None:
        return extended_keep_mask(predicate, column)
    numeric_result = _numpy_comparison(predicate, column)
    if numeric_result is not None:
        return numeric_result
    result = _leaf_result(predicate, _comparable_column(column))
    null_means = predicate.operation in ("not_nan",)
    if result.null_count:
        result = result.fill_null(null_means)
    return _to_numpy_bool(result)


_NUMPY_COMPARISONS: dict[str, Callable[[np.ndarray, Any], np.ndarray]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def _numpy_comparison(predicate: ColumnPredicate, column: ArrowColumn) -> np.ndarray | None:
    """A comparison of a NULL-free integer or float column done in numpy (no bitmap to unpack); else None.

    numpy follows the same IEEE rules as Arrow: NaN compares false except ``!=``, and ``-0.0 == 0.0``.
    """
    comparison = _NUMPY_COMPARISONS.get(predicate.operation)
    arrow_type = column.type
    if (
        comparison is None
        or column.null_count
        or not (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type))
    ):
        return None
    numpy_type = arrow_type.to_pandas_dtype()
    literal = predicate.literals[0]
    if pa.types.is_integer(arrow_type):
        limits = np.iinfo(numpy_type)
        if not isinstance(literal, int) or not limits.min <= literal <= limits.max:
            return None
    literal = numpy_type(literal)  # float columns compare with the literal rounded to their precision
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if not chunks:
        return np.zeros(0, dtype=bool)
    results = [comparison(chunk.to_numpy(zero_copy_only=True), literal) for chunk in chunks]
    return results[0] if len(results) == 1 else np.concatenate(results)


def _leaf_result(predicate: ColumnPredicate, column: ArrowColumn) -> ArrowColumn:
    operation = predicate.operation
    if operation == "is_null":
        return pc.is_null(column)
    if operation == "not_null":
        return pc.is_valid(column)
    if operation in ("is_nan", "not_nan"):
        if not pa.types.is_floating(column.type):
            return _constant_result(len(column), operation == "not_nan")
        is_nan = pc.is_nan(column)
        return is_nan if operation == "is_nan" else pc.invert(is_nan)
    if operation in ("in", "not_in"):
        value_set = pa.array(_set_members(predicate.literals, column.type), type=column.type)
        is_in = pc.is_in(column, value_set=value_set, skip_nulls=True)
        return is_in if operation == "in" else pc.and_(pc.is_valid(column), pc.invert(is_in))
    literal = _arrow_literal(predicate.literals[0], column.type)
    if operation == "starts_with":
        return pc.starts_with(column, pattern=literal.as_py())
    if operation == "not_starts_with":
        return pc.invert(pc.starts_with(column, pattern=literal.as_py()))
    comparison = _COMPARISONS[operation]
    return comparison(column, literal)


def _arrow_literal(value: Any, column_type: pa.DataType) -> pa.Scalar:
    """The literal as an Arrow scalar of the column's type (an integer beyond the type's range stays int64)."""
    try:
        return pa.scalar(value, type=column_type)
    except (pa.ArrowInvalid, OverflowError):
        if pa.types.is_integer(column_type) and isinstance(value, int):
            return pa.scalar(value, type=pa.int64())
        raise


def _set_members(literals: tuple[Any, ...], column_type: pa.DataType) -> list[Any]:
    """IN literals as hashed set members; for floats both signed zeros, since ``-0.0 = 0.0`` holds as in ``=``."""
    if pa.types.is_floating(column_type) and any(literal == 0 for literal in literals):
        return [*literals, 0.0, -0.0]
    return list(literals)


_COMPARISONS: dict[str, Callable[[ArrowColumn, pa.Scalar], ArrowColumn]] = {
    "eq": pc.equal,
    "ne": pc.not_equal,
    "lt": pc.less,
    "le": pc.less_equal,
    "gt": pc.greater,
    "ge": pc.greater_equal,
}


def _comparable_column(column: ArrowColumn) -> ArrowColumn:
    """Extension columns (uuid) compare by their storage bytes."""
    if isinstance(column.type, pa.BaseExtensionType):
        if isinstance(column, pa.ChunkedArray):
            return pa.chunked_array([chunk.storage for chunk in column.chunks], type=column.type.storage_type)
        return column.storage
    return column


def _constant_result(length: int, value: bool) -> pa.Array:
    return pa.array(np.full(length, value, dtype=bool))


def _to_numpy_bool(result: ArrowColumn) -> np.ndarray:
    return np.asarray(result.to_numpy(zero_copy_only=False), dtype=bool)


@dataclass(frozen=True)
class FilterConjunct:
    """One conjunct of the row filter as a ``RowPredicate``."""

    node: FilterNode

    @property
    def field_ids(self) -> frozenset[int]:
        """The field ids the conjunct reads."""
        return referenced_field_ids(self.node)

    @property
    def kind(self) -> PredicateKind:
        """Always ``PredicateKind.FILTER``."""
        return PredicateKind.FILTER

    @property
    def cache_identity(self) -> None:
        """None: a filter's rejections are not remembered (filters vary per query; decoding them is the scan)."""
        return None

    def keep_mask(self, columns: Mapping[int, pa.Array], num_rows: int) -> np.ndarray:
        """True where the row satisfies the conjunct."""
        return evaluate_rows(self.node, columns, num_rows)


def filter_conjuncts(node: FilterNode) -> list[FilterConjunct]:
    """The row filter split on its top-level AND, one row predicate per conjunct."""
    return [FilterConjunct(conjunct) for conjunct in split_conjuncts(node)]


def order_by_cost(
    predicates: Sequence[RowPredicate],
    cost_of_fields: Callable[[frozenset[int]], int],
    sorted_field_ids: frozenset[int] = frozenset(),
) -> list[RowPredicate]:
    """Predicates on the file's sort column first, then by the compressed bytes of their columns (stable)."""
    return sorted(
        predicates,
        key=lambda predicate: (not (predicate.field_ids & sorted_field_ids), cost_of_fields(predicate.field_ids)),
    )


def surviving_rows(
    columns: RowGroupColumns,
    selection: RowSelection | None,
    predicates: list[RowPredicate],
    resolver: FileColumnResolver,
    metrics: ScanMetrics,
    *,
    on_whole_mask: Callable[[RowPredicate, np.ndarray], None] | None = None,
) -> np.ndarray | None:
    """A boolean mask of the row group's rows to keep (None = all), evaluating predicates on survivors only.

    While most rows are alive a predicate runs on whole columns and its answer is ANDed in (cheaper than gathering
    the survivors first); once fewer than half are alive, it runs on the gathered survivors only, unless its answer
    can be kept (``on_whole_mask`` given, predicate with a ``cache_identity``). A predicate's answer on whole
    columns is handed to ``on_whole_mask`` (before anything else uses it), so it can be kept.
    """
    alive = None if selection is None or selection is ALL_ROWS else selection
    if not predicates:
        return alive
    alive = None if alive is None else alive.copy()  # updated in place below
    row_group_metadata = columns.first_row_group_metadata
    sort_column_ids = sort_column_field_ids(row_group_metadata, resolver)

    def cost_of_fields(field_ids: frozenset[int]) -> int:
        unread = [field_id for field_id in resolver.top_level_ids(field_ids) if field_id not in columns.columns]
        return resolver.compressed_bytes(row_group_metadata, unread)

    deletes = [predicate for predicate in predicates if predicate.kind is PredicateKind.EQUALITY_DELETE]
    filters = [predicate for predicate in predicates if predicate.kind is not PredicateKind.EQUALITY_DELETE]
    row_count = columns.num_rows
    for predicate in [
        *order_by_cost(deletes, cost_of_fields),
        *order_by_cost(filters, cost_of_fields, sort_column_ids),
    ]:
        columns.load(resolver.top_level_ids(predicate.field_ids))
        alive_count = row_count if alive is None else int(np.count_nonzero(alive))
        # A predicate whose answer can be kept runs on whole columns: probing the extra rows costs less than
        # decoding its columns again on the next scan.
        keepable = on_whole_mask is not None and predicate.cache_identity is not None
        if alive is None or alive_count * 2 >= row_count or keepable:
            predicate_columns = {field_id: as_array(columns.field_column(field_id)) for field_id in predicate.field_ids}
            keep = np.asarray(predicate.keep_mask(predicate_columns, row_count), dtype=bool)
            if on_whole_mask is not None:
                on_whole_mask(predicate, keep)
            alive = keep if alive is None else alive & keep
        else:
            alive_rows = np.flatnonzero(alive)
            predicate_columns = {
                field_id: as_array(columns.field_column(field_id).take(alive_rows)) for field_id in predicate.field_ids
            }
            keep = np.asarray(predicate.keep_mask(predicate_columns, len(alive_rows)), dtype=bool)
            alive[alive_rows] = keep
        removed = alive_count - int(np.count_nonzero(alive))
        if predicate.kind is PredicateKind.EQUALITY_DELETE:
            metrics.rows_deleted_by_equality_deletes += removed
        else:
            metrics.rows_pruned_by_late_materialization += removed
        if removed == alive_count:
            break
    return None if alive is not None and alive.all() else alive  # every row survived: nothing to select


def sort_column_field_ids(row_group: pq.RowGroupMetaData, resolver: FileColumnResolver) -> frozenset[int]:
    """The field id of the column the row group is sorted on first, when the writer recorded one."""
    sorting_columns = row_group.sorting_columns
    if not sorting_columns:
        return frozenset()
    first_leaf = sorting_columns[0].column_index
    for leaves in resolver.leaves_by_top_level_id.values():
        for leaf in leaves:
            if leaf.index == first_leaf and leaf.field_id is not None:
                return frozenset((leaf.field_id,))
    return frozenset()
