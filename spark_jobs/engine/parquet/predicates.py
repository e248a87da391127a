"""Translate a bound pyiceberg row filter into a small predicate tree that every pruning stage can walk.

1. Push NOT down to the leaves with pyiceberg's ``rewrite_not``; the tree then holds only AND, OR, constants and
   column predicates (``ColumnPredicate``: an operation on one field id with its Iceberg literals).
2. ``split_conjuncts`` splits the top-level AND for late materialization; ``fold`` evaluates the tree with any leaf
   evaluator (statistics, bloom filters, page index, rows).
3. ``might_match`` decides for one leaf, from what metadata says about a set of rows (``ValueBounds``: row count,
   null count, lower and upper bound, whether NaN may hide outside the bounds), whether any row can match; it only
   answers False when no row can.
   A variant-path comparison or a geo box test (``extended_predicates``) is a leaf whose ``condition`` says what
   it tests; its bounds are those of the path's shredded column (``row_group_filter``), and it is never proven
   for a whole row group.
4. ``must_match`` is its dual: True only when every row matches, so a conjunct proven for a whole row group is not
   evaluated there (nor its columns read, unless they are output).

Row semantics (shared with ``row_filter``): a comparison, ``=``, ``!=``, IN, NOT IN, STARTS WITH and NOT STARTS WITH
are false on NULL; ``<``, ``<=``, ``>``, ``>=``, ``=`` and IN are false on NaN while ``!=`` and NOT IN are true;
IS NAN is false on NULL and NOT NAN is true on NULL (as Iceberg's and Spark's ``isnan`` define them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundEqualTo,
    BoundGreaterThan,
    BoundGreaterThanOrEqual,
    BoundIn,
    BoundIsNaN,
    BoundIsNull,
    BoundLessThan,
    BoundLessThanOrEqual,
    BoundNotEqualTo,
    BoundNotIn,
    BoundNotNaN,
    BoundNotNull,
    BoundNotStartsWith,
    BoundPredicate,
    BoundStartsWith,
    Not,
    Or,
)
from pyiceberg.expressions.visitors import rewrite_not
from pyiceberg.types import DoubleType, FloatType, PrimitiveType

from spark_jobs.engine.parquet.file_columns import comparable_literal
from spark_jobs.engine.shared.errors import InvalidFilterError
from spark_jobs.engine.shared.extended_predicates import (
    BoundSpatialPredicate,
    BoundVariantPathPredicate,
    SpatialCondition,
    VariantPathCondition,
)
from spark_jobs.engine.shared.variant_paths import bounds_rule_out

_OPERATION_OF_PREDICATE: dict[type, str] = {
    BoundEqualTo: "eq",
    BoundNotEqualTo: "ne",
    BoundLessThan: "lt",
    BoundLessThanOrEqual: "le",
    BoundGreaterThan: "gt",
    BoundGreaterThanOrEqual: "ge",
    BoundIn: "in",
    BoundNotIn: "not_in",
    BoundIsNull: "is_null",
    BoundNotNull: "not_null",
    BoundIsNaN: "is_nan",
    BoundNotNaN: "not_nan",
    BoundStartsWith: "starts_with",
    BoundNotStartsWith: "not_starts_with",
}


@dataclass(frozen=True)
class ColumnPredicate:
    """One leaf: ``operation`` applied to the column of ``field_id`` (read schema type) with its literal values."""

    operation: str
    field_id: int
    field_type: PrimitiveType
    literals: tuple[Any, ...] = ()
    # A variant-path comparison (operation "variant_path") or a geo box test ("spatial"): what it tests.
    condition: VariantPathCondition | SpatialCondition | None = None

    @property
    def is_floating(self) -> bool:
        """True for float and double columns (NaN rules apply)."""
        return isinstance(self.field_type, (FloatType, DoubleType))


@dataclass(frozen=True)
class AllOf:
    """True when every child is true."""

    children: tuple[FilterNode, ...]


@dataclass(frozen=True)
class AnyOf:
    """True when any child is true."""

    children: tuple[FilterNode, ...]


@dataclass(frozen=True)
class Constant:
    """Always true or always false."""

    value: bool


FilterNode = ColumnPredicate | AllOf | AnyOf | Constant
T = TypeVar("T")


def translate_filter(row_filter: BooleanExpression | None) -> FilterNode:
    """The predicate tree of a bound pyiceberg filter (None means no filter: ``Constant(True)``)."""
    if row_filter is None:
        return Constant(True)
    return _translate(rewrite_not(row_filter))


def _translate(expression: BooleanExpression) -> FilterNode:
    if isinstance(expression, AlwaysTrue):
        return Constant(True)
    if isinstance(expression, AlwaysFalse):
        return Constant(False)
    if isinstance(expression, And):
        return AllOf((*_flatten(_translate(expression.left), AllOf), *_flatten(_translate(expression.right), AllOf)))
    if isinstance(expression, Or):
        return AnyOf((*_flatten(_translate(expression.left), AnyOf), *_flatten(_translate(expression.right), AnyOf)))
    if isinstance(expression, Not):
        raise InvalidFilterError(f"NOT left after rewrite_not in {expression!r}")
    if isinstance(expression, BoundVariantPathPredicate | BoundSpatialPredicate):
        field = expression.term.ref().field
        kind = "variant_path" if isinstance(expression, BoundVariantPathPredicate) else "spatial"
        return ColumnPredicate(kind, field.field_id, field.field_type, (), expression.condition)  # type: ignore[arg-type]
    if isinstance(expression, BoundPredicate):
        operation = _OPERATION_OF_PREDICATE.get(type(expression))
        if operation is None:
            raise InvalidFilterError(f"unsupported predicate {expression!r}")
        field = expression.term.ref().field
        if not isinstance(field.field_type, PrimitiveType):
            raise InvalidFilterError(f"predicate on non-primitive column {field.name} (id {field.field_id})")
        literals: tuple[Any, ...] = ()
        if hasattr(expression, "literals"):
            literals = tuple(sorted({literal.value for literal in expression.literals}, key=repr))
        elif hasattr(expression, "literal"):
            literals = (expression.literal.value,)
        return ColumnPredicate(operation, field.field_id, field.field_type, literals)
    raise InvalidFilterError(f"row filter must be bound to the read schema, got {expression!r}")


def _flatten(node: FilterNode, kind: type[AllOf] | type[AnyOf]) -> tuple[FilterNode, ...]:
    return node.children if isinstance(node, kind) else (node,)


def split_conjuncts(node: FilterNode) -> list[FilterNode]:
    """The top-level AND's children (or the node itself); an always-true filter has none."""
    if isinstance(node, Constant) and node.value:
        return []
    return list(node.children) if isinstance(node, AllOf) else [node]


def referenced_field_ids(node: FilterNode) -> frozenset[int]:
    """Every field id a leaf of the tree names."""
    if isinstance(node, ColumnPredicate):
        return frozenset((node.field_id,))
    if isinstance(node, (AllOf, AnyOf)):
        return frozenset().union(*(referenced_field_ids(child) for child in node.children))
    return frozenset()


def fold(
    node: FilterNode,
    leaf: Callable[[ColumnPredicate], T],
    all_of: Callable[[list[T]], T],
    any_of: Callable[[list[T]], T],
    constant: Callable[[bool], T],
) -> T:
    """Evaluate the tree bottom-up with the given leaf evaluator and combiners."""
    if isinstance(node, ColumnPredicate):
        return leaf(node)
    if isinstance(node, AllOf):
        return all_of([fold(child, leaf, all_of, any_of, constant) for child in node.children])
    if isinstance(node, AnyOf):
        return any_of([fold(child, leaf, all_of, any_of, constant) for child in node.children])
    return constant(node.value)


def might_match_tree(node: FilterNode, leaf: Callable[[ColumnPredicate], bool]) -> bool:
    """True unless the tree is false for every row, given a leaf evaluator that answers "might match"."""
    return fold(node, leaf, all, any, lambda value: value)


@dataclass(frozen=True)
class ValueBounds:
    """What metadata says about a column over a set of rows; unknown parts are None."""

    row_count: int
    null_count: int | None
    lower: Any = None  # comparable domain (see ``file_columns.decode_raw``)
    upper: Any = None
    may_contain_nan: bool = False  # float columns: Parquet bounds ignore NaN, so NaN may be present

    @property
    def is_all_null(self) -> bool:
        """True when every row is NULL."""
        return self.null_count is not None and self.null_count >= self.row_count


def might_match(predicate: ColumnPredicate, bounds: ValueBounds | None) -> bool:
    """False only when no row described by ``bounds`` can satisfy ``predicate``."""
    if predicate.condition is not None:
        return _extended_might_match(predicate.condition, bounds)
    if bounds is None:
        return True
    operation = predicate.operation
    if operation == "is_null":
        return bounds.null_count is None or bounds.null_count > 0
    if operation == "not_null":
        return not bounds.is_all_null
    if operation == "is_nan":
        return predicate.is_floating and not bounds.is_all_null
    if operation == "not_nan":
        return True  # NULL and non-NaN values match; "all NaN" is never known from Parquet metadata
    if bounds.is_all_null:
        return False
    try:
        return _bounds_might_match(predicate, bounds)
    except TypeError:  # a bound of an unexpected type: be safe
        return True


def _extended_might_match(condition: VariantPathCondition | SpatialCondition, bounds: ValueBounds | None) -> bool:
    """A geo box test or a variant-path comparison (``bounds``: the path's shredded column, in the comparison's
    domain) matches no NULL; a path's IS NULL may always match."""
    if isinstance(condition, VariantPathCondition) and condition.operation == "is_null":
        return True
    if bounds is None:
        return True
    if bounds.is_all_null:
        return False
    if isinstance(condition, SpatialCondition):
        return True
    return not bounds_rule_out(condition.operation, bounds.lower, bounds.upper, condition.literals)


def _bounds_might_match(predicate: ColumnPredicate, bounds: ValueBounds) -> bool:
    operation = predicate.operation
    literals = [comparable_literal(value, predicate.field_type) for value in predicate.literals]
    lower, upper = bounds.lower, bounds.upper
    if operation == "lt":
        return lower is None or lower < literals[0]
    if operation == "le":
        return lower is None or lower <= literals[0]
    if operation == "gt":
        return upper is None or upper > literals[0]
    if operation == "ge":
        return upper is None or upper >= literals[0]
    if operation in ("eq", "in"):
        return any((lower is None or lower <= value) and (upper is None or value <= upper) for value in literals)
    if operation in ("ne", "not_in"):
        if bounds.may_contain_nan or lower is None or upper is None:
            return True
        return not (lower == upper and lower in literals)
    if operation == "starts_with":
        prefix = literals[0]
        if lower is not None and lower[: len(prefix)] > prefix:
            return False
        return upper is None or upper[: len(prefix)] >= prefix
    if operation == "not_starts_with":
        prefix = literals[0]
        return lower is None or upper is None or not (lower.startswith(prefix) and upper.startswith(prefix))
    return True


def must_match_tree(node: FilterNode, leaf: Callable[[ColumnPredicate], bool]) -> bool:
    """True only when the tree is true for every row, given a leaf evaluator that answers "must match"."""
    return fold(node, leaf, all, any, lambda value: value)


def must_match(predicate: ColumnPredicate, bounds: ValueBounds | None) -> bool:
    """True only when every row described by ``bounds`` satisfies ``predicate`` (so it need not be evaluated)."""
    if bounds is None or predicate.condition is not None:
        return False
    operation = predicate.operation
    if operation == "is_null":
        return bounds.is_all_null
    if operation == "not_null":
        return bounds.null_count == 0
    if operation == "is_nan":
        return False
    if operation == "not_nan":
        return not predicate.is_floating
    if bounds.null_count != 0 or bounds.lower is None or bounds.upper is None:
        return False  # NULL fails every other predicate; unknown bounds prove nothing
    if bounds.may_contain_nan and operation not in ("ne", "not_in"):
        return False  # NaN fails comparisons, = and IN
    try:
        return _bounds_must_match(predicate, bounds)
    except TypeError:
        return False


def _bounds_must_match(predicate: ColumnPredicate, bounds: ValueBounds) -> bool:
    operation = predicate.operation
    literals = [comparable_literal(value, predicate.field_type) for value in predicate.literals]
    lower, upper = bounds.lower, bounds.upper
    if operation == "lt":
        return upper < literals[0]
    if operation == "le":
        return upper <= literals[0]
    if operation == "gt":
        return lower > literals[0]
    if operation == "ge":
        return lower >= literals[0]
    if operation in ("eq", "in"):
        return lower == upper and lower in literals
    if operation in ("ne", "not_in"):
        return all(value < lower or value > upper for value in literals)
    if operation == "starts_with":
        return lower.startswith(literals[0]) and upper.startswith(literals[0])
    if operation == "not_starts_with":
        prefix = literals[0]
        return upper[: len(prefix)] < prefix or lower[: len(prefix)] > prefix
    return False
