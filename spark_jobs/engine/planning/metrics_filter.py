"""Which files' column metrics allow a match of the row filter, for all files of a manifest at once.

The same decisions as pyiceberg's ``_InclusiveMetricsEvaluator`` (and so as our per-file planning before), one
boolean per file, computed over numpy arrays (``file_statistics``) instead of one visit per file:

1. The filter is bound to the read schema with every NOT pushed down (``rewrite_not``), as pyiceberg does.
2. Each predicate gives a mask of files that might hold a matching row, following pyiceberg's rules in their order:
   a file whose field holds only nulls (or only NaNs) cannot match a comparison; a NaN bound proves nothing; a
   bound beyond the literal rules the file out; ``IN`` checks its literals against both bounds (no check past 200
   literals); ``!=``, ``NOT IN`` and anything the bounds cannot answer might match; ``starts_with`` compares the
   prefix with the bounds truncated to its length.
3. AND and OR combine masks; a file with no rows cannot match, a file whose row count is negative (unknown, from
   old writers) might.
4. Variant-path comparisons and geo box tests follow the rules of ``extended_metrics``.
5. ``key_set_may_match`` answers "may this file hold any of these keys" for the upsert key scan: a key lies within
   a file's bounds, tested with one ``searchsorted`` over the sorted keys instead of an ``IN`` of thousands.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, BoundPredicate, BoundTerm
from pyiceberg.expressions.literals import Literal
from pyiceberg.expressions.visitors import BoundBooleanExpressionVisitor, bind, rewrite_not, visit
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

from spark_jobs.engine.planning.extended_metrics import spatial_may_match, variant_path_may_match
from spark_jobs.engine.planning.file_statistics import Bounds, FileStatistics
from spark_jobs.engine.shared.extended_predicates import BoundSpatialPredicate, BoundVariantPathPredicate

IN_PREDICATE_LIMIT = 200  # pyiceberg's (and Java's) limit past which IN is not checked against bounds


class MetricsFilter:
    """A row filter bound once to a schema, evaluated against the statistics of many files at a time."""

    def __init__(self, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool = True) -> None:
        self.filters_rows = row_filter != AlwaysTrue()
        self._bound = bind(schema, rewrite_not(row_filter), case_sensitive) if self.filters_rows else AlwaysTrue()

    def may_match(self, statistics: FileStatistics, record_counts: np.ndarray) -> np.ndarray:
        """For each file, False when its metrics prove no row can match (module doc, steps 2 and 3)."""
        if not self.filters_rows:
            return record_counts > 0
        result = np.asarray(visit(self._bound, _MetricsMasks(statistics)), dtype=bool)
        if result.ndim == 0:
            result = np.full(statistics.num_files, bool(result))
        return np.where(record_counts == 0, False, np.where(record_counts < 0, True, result))


def key_set_may_match(statistics: FileStatistics, field: NestedField, sorted_keys: np.ndarray) -> np.ndarray:
    """For each file, False when no key of ``sorted_keys`` lies within its bounds for ``field`` (step 5).

    Null keys are never in ``sorted_keys`` (an equality with null matches nothing); a file whose field holds only
    nulls cannot match; a missing or NaN bound proves nothing.
    """
    if not len(sorted_keys):
        return np.zeros(statistics.num_files, dtype=bool)
    field_type = field.field_type
    if not isinstance(field_type, PrimitiveType):
        return np.ones(statistics.num_files, dtype=bool)
    masks = _MetricsMasks(statistics)
    lower = statistics.bounds("lower_bounds", field.field_id, field_type)
    upper = statistics.bounds("upper_bounds", field.field_id, field_type)
    first = np.zeros(statistics.num_files, dtype=np.int64)
    last = np.full(statistics.num_files, len(sorted_keys), dtype=np.int64)
    if lower.present.any():
        first = np.where(lower.present & ~lower.is_nan, _searchsorted(sorted_keys, lower.values, "left"), 0)
    if upper.present.any():
        last = np.where(upper.present & ~upper.is_nan, _searchsorted(sorted_keys, upper.values, "right"), last)
    return ~masks.nulls_only(field.field_id) & (last > first)


_INTEGER_BOUND_TYPES = (IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType)


def sorted_key_values(values: pa.Array, field_type: IcebergType) -> np.ndarray | None:
    """The distinct non-null ``values`` of a key column, sorted, as its bounds decode (for ``key_set_may_match``);
    None for a type whose bounds do not compare with its values here (keys of it prune nothing)."""
    present = values.drop_null()
    if isinstance(field_type, _INTEGER_BOUND_TYPES):
        if pa.types.is_date32(present.type) or pa.types.is_timestamp(present.type) or pa.types.is_time(present.type):
            present = present.view(pa.int32() if pa.types.is_date32(present.type) else pa.int64())
        if not pa.types.is_integer(present.type):
            return None
        return np.unique(present.cast(pa.int64()).to_numpy(zero_copy_only=False))
    if isinstance(field_type, (StringType, DecimalType, BinaryType)):
        python_values = present.to_pylist()
        array = np.empty(len(python_values), dtype=object)
        array[:] = python_values
        return np.unique(array) if len(array) else array
    return None


class _MetricsMasks(BoundBooleanExpressionVisitor[Any]):
    """pyiceberg's ``_InclusiveMetricsEvaluationVisitor`` with a boolean array in place of each bool."""

    def __init__(self, statistics: FileStatistics) -> None:
        self._statistics = statistics
        self._files = statistics.num_files

    def _all(self, value: bool) -> np.ndarray:
        return np.full(self._files, value, dtype=bool)

    def nulls_only(self, field_id: int) -> np.ndarray:
        """Files whose value and null counts are present, non-zero and equal."""
        values = self._statistics.counts("value_counts", field_id)
        nulls = self._statistics.counts("null_value_counts", field_id)
        return values.truthy() & nulls.truthy() & (values.values == nulls.values)

    def _nans_only(self, field_id: int) -> np.ndarray:
        nans = self._statistics.counts("nan_value_counts", field_id)
        values = self._statistics.counts("value_counts", field_id)
        return nans.truthy() & values.truthy() & (nans.values == values.values)

    def _may_contain_null(self, field_id: int) -> np.ndarray:
        # pyiceberg: the file's null-count map holds an entry (of any value) for the field
        return self._statistics.counts("null_value_counts", field_id).present

    def _cannot_compare(self, field_id: int) -> np.ndarray:
        return self.nulls_only(field_id) | self._nans_only(field_id)

    def _bounds(self, term: BoundTerm, name: str) -> tuple[PrimitiveType, Bounds]:
        field = term.ref().field
        if not isinstance(field.field_type, PrimitiveType):
            raise ValueError(f"Expected PrimitiveType: {field.field_type}")
        return field.field_type, self._statistics.bounds(name, field.field_id, field.field_type)

    def visit_bound_predicate(self, predicate: BoundPredicate) -> np.ndarray:
        """Variant-path and geo box predicates by their own rules (``extended_metrics``), the others as pyiceberg's."""
        if isinstance(predicate, BoundVariantPathPredicate):
            return variant_path_may_match(
                self._statistics, predicate, self.nulls_only(predicate.term.ref().field.field_id)
            )
        if isinstance(predicate, BoundSpatialPredicate):
            return spatial_may_match(self._statistics, predicate, self.nulls_only(predicate.term.ref().field.field_id))
        return super().visit_bound_predicate(predicate)

    def visit_true(self) -> np.ndarray:
        return self._all(True)

    def visit_false(self) -> np.ndarray:
        return self._all(False)

    def visit_not(self, child_result: np.ndarray) -> np.ndarray:
        raise ValueError(f"NOT should be rewritten: {child_result}")

    def visit_and(self, left_result: np.ndarray, right_result: np.ndarray) -> np.ndarray:
        return left_result & right_result

    def visit_or(self, left_result: np.ndarray, right_result: np.ndarray) -> np.ndarray:
        return left_result | right_result

    def visit_is_null(self, term: BoundTerm) -> np.ndarray:
        return ~self._statistics.counts("null_value_counts", term.ref().field.field_id).get_equals(0)

    def visit_not_null(self, term: BoundTerm) -> np.ndarray:
        return ~self.nulls_only(term.ref().field.field_id)

    def visit_is_nan(self, term: BoundTerm) -> np.ndarray:
        field_id = term.ref().field.field_id
        no_nans = self._statistics.counts("nan_value_counts", field_id).get_equals(0)
        return ~(no_nans | self.nulls_only(field_id))

    def visit_not_nan(self, term: BoundTerm) -> np.ndarray:
        return ~self._nans_only(term.ref().field.field_id)

    def visit_less_than(self, term: BoundTerm, literal: Literal[Any]) -> np.ndarray:
        return self._one_bound(term, literal, "lower_bounds", operator.ge)

    def visit_less_than_or_equal(self, term: BoundTerm, literal: Literal[Any]) -> np.ndarray:
        return self._one_bound(term, literal, "lower_bounds", operator.gt)

    def visit_greater_than(self, term: BoundTerm, literal: Literal[Any]) -> np.ndarray:
        return self._one_bound(term, literal, "upper_bounds", operator.le)

    def visit_greater_than_or_equal(self, term: BoundTerm, literal: Literal[Any]) -> np.ndarray:
        return self._one_bound(term, literal, "upper_bounds", operator.lt)

    def _one_bound(
        self, term: BoundTerm, literal: Literal[Any], name: str, rules_out: Callable[[Any, Any], Any]
    ) -> np.ndarray:
        """Might match unless nulls/NaNs only, or the bound (not NaN) stands ``rules_out`` of the literal."""
        field_id = term.ref().field.field_id
        cannot = self._cannot_compare(field_id)
        _, bounds = self._bounds(term, name)
        cannot |= bounds.present & ~bounds.is_nan & _compare(bounds, rules_out, literal.value)
        return ~cannot

    def visit_equal(self, term: BoundTerm, literal: Literal[Any]) -> np.ndarray:
        field_id = term.ref().field.field_id
        cannot = self._cannot_compare(field_id)
        _, lower = self._bounds(term, "lower_bounds")
        _, upper = self._bounds(term, "upper_bounds")
        lower_nan = lower.present & lower.is_nan
        cannot |= lower.present & ~lower.is_nan & _compare(lower, operator.gt, literal.value)
        # a NaN lower bound decides "might match" before the upper bound is looked at
        cannot |= ~lower_nan & upper.present & ~upper.is_nan & _compare(upper, operator.lt, literal.value)
        return ~cannot

    def visit_not_equal(self, term: BoundTerm, literal: Literal[Any]) -> np.ndarray:
        return self._all(True)

    def visit_in(self, term: BoundTerm, literals: set[Any]) -> np.ndarray:
        field_id = term.ref().field.field_id
        cannot = self._cannot_compare(field_id)
        if len(literals) > IN_PREDICATE_LIMIT:
            return ~cannot
        _, lower = self._bounds(term, "lower_bounds")
        _, upper = self._bounds(term, "upper_bounds")
        ordered = _sorted_values(literals, lower.values.dtype)
        count = len(ordered)
        first = np.zeros(self._files, dtype=np.int64)
        if lower.present.any():
            first = np.where(lower.present, _searchsorted(ordered, lower.values, "left"), 0)
        last = np.full(self._files, count, dtype=np.int64)
        if upper.present.any():
            last = np.where(upper.present, _searchsorted(ordered, upper.values, "right"), count)
        lower_nan = lower.present & lower.is_nan
        upper_nan = upper.present & upper.is_nan
        # in order: NaN lower -> might; none >= lower -> cannot; NaN upper -> might; none in [lower, upper] -> cannot
        none_above_lower = lower.present & ~lower_nan & (first >= count)
        none_between = upper.present & ~upper_nan & (last <= first)
        cannot |= ~lower_nan & (none_above_lower | (~upper_nan & none_between))
        return ~cannot

    def visit_not_in(self, term: BoundTerm, literals: set[Any]) -> np.ndarray:
        return self._all(True)

    def visit_starts_with(self, term: BoundTerm, literal: Literal[Any]) -> np.ndarray:
        field_id = term.ref().field.field_id
        cannot = self.nulls_only(field_id)
        _, lower = self._bounds(term, "lower_bounds")
        _, upper = self._bounds(term, "upper_bounds")
        prefix = literal.value
        width = len(prefix)
        for index in np.flatnonzero((lower.present | upper.present) & ~cannot):
            low = lower.values[index] if lower.present[index] else None
            high = upper.values[index] if upper.present[index] else None
            if (low and low[:width] > prefix) or (high is not None and high[:width] < prefix):
                cannot[index] = True
        return ~cannot

    def visit_not_starts_with(self, term: BoundTerm, literal: Literal[Any]) -> np.ndarray:
        field_id = term.ref().field.field_id
        _, lower = self._bounds(term, "lower_bounds")
        _, upper = self._bounds(term, "upper_bounds")
        prefix = literal.value
        width = len(prefix)
        cannot = np.zeros(self._files, dtype=bool)
        candidates = ~self._may_contain_null(field_id) & lower.present & upper.present
        for index in np.flatnonzero(candidates):
            low, high = lower.values[index], upper.values[index]
            if len(low) >= width and low[:width] == prefix and len(high) >= width and high[:width] == prefix:
                cannot[index] = True
        return ~cannot


def _compare(bounds: Bounds, compare: Callable[[Any, Any], Any], value: Any) -> np.ndarray:
    """``compare(bound, value)`` for each file with a bound (False where there is none)."""
    if not bounds.present.any():
        return np.zeros(len(bounds.present), dtype=bool)
    if bounds.values.dtype.kind != "O":
        return np.asarray(compare(bounds.values, value), dtype=bool) & bounds.present
    result = np.zeros(len(bounds.present), dtype=bool)
    present = np.flatnonzero(bounds.present)
    result[present] = [bool(compare(bound, value)) for bound in bounds.values[present]]
    return result


def _sorted_values(values: set[Any], dtype: np.dtype[Any]) -> np.ndarray:
    """The literals in order, as numbers of the bounds' dtype when the bounds are numbers, else as objects."""
    ordered = sorted(values)
    if dtype.kind != "O":
        return np.asarray(ordered, dtype=dtype)
    array = np.empty(len(ordered), dtype=object)
    array[:] = ordered
    return array


def _searchsorted(ordered: np.ndarray, bounds: np.ndarray, side: Any) -> np.ndarray:
    """Positions of ``bounds`` in ``ordered`` (works for object arrays of comparable values too)."""
    if "O" in (ordered.dtype.kind, bounds.dtype.kind):
        search = bisect_left if side == "left" else bisect_right
        values = list(ordered)
        return np.fromiter((search(values, bound) for bound in bounds), dtype=np.int64, count=len(bounds))
    return np.searchsorted(ordered, bounds, side=side)
