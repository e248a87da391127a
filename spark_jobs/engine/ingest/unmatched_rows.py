"""The rows a filter does not match, as a filter: what an overwrite by filter keeps of the files it replaces.

A row matches only when the filter is true on it; where it is false or unknown the row is kept. Plain NOT is not
that: ``NOT (x > 5)`` is ``x <= 5``, false on a NULL ``x`` (and on NaN), so NOT alone would drop those rows. So:

1. Push NOT down to the leaves (pyiceberg's ``rewrite_not``) of the bound filter.
2. Rewrite "not true" down the tree: AND becomes OR of the parts' "not true", OR becomes AND, the constants swap.
3. At a leaf: IS NULL, NOT NULL, IS NAN and NOT NAN are never unknown, so their negation. Any other predicate is
   false on NULL (``parquet.predicates``' row semantics), so its negation OR the column IS NULL; on a float column,
   ``<``, ``<=``, ``>``, ``>=``, ``=`` and IN are also false on NaN, so OR the column IS NAN as well. A
   variant-path comparison or a geo box test says itself (``extended_predicates``: OR the path's value IS NULL).

The result is unbound, by column name, for a scan context to bind like any row filter.
"""

from __future__ import annotations

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
    BoundLiteralPredicate,
    BoundNotNaN,
    BoundNotNull,
    BoundPredicate,
    BoundSetPredicate,
    BoundUnaryPredicate,
    IsNaN,
    IsNull,
    Or,
)
from pyiceberg.expressions.visitors import rewrite_not
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, FloatType

from spark_jobs.engine.shared.extended_predicates import EXTENDED_BOUND_PREDICATES

_NEVER_UNKNOWN = (BoundIsNull, BoundNotNull, BoundIsNaN, BoundNotNaN)
_FALSE_ON_NAN = (BoundLessThan, BoundLessThanOrEqual, BoundGreaterThan, BoundGreaterThanOrEqual, BoundEqualTo, BoundIn)


def unmatched_rows_filter(bound_filter: BooleanExpression, schema: Schema) -> BooleanExpression:
    """The rows on which ``bound_filter`` (bound to ``schema``) is false or unknown, as an unbound filter."""
    return _not_true(rewrite_not(bound_filter), schema)


def _not_true(expression: BooleanExpression, schema: Schema) -> BooleanExpression:
    """Module doc, steps 2 and 3."""
    if isinstance(expression, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(expression, AlwaysFalse):
        return AlwaysTrue()
    if isinstance(expression, And):
        return Or(_not_true(expression.left, schema), _not_true(expression.right, schema))
    if isinstance(expression, Or):
        return And(_not_true(expression.left, schema), _not_true(expression.right, schema))
    if isinstance(expression, BoundPredicate):
        field = expression.term.ref().field
        name = schema.find_column_name(field.field_id)
        if name is None:
            raise ValueError(f"field id {field.field_id} of {expression} is not in the schema")
        if isinstance(expression, EXTENDED_BOUND_PREDICATES):
            return expression.not_true(name)
        negated = _unbound(~expression, name)
        if isinstance(expression, _NEVER_UNKNOWN):
            return negated
        # pyiceberg's predicates take the column positionally; the pydantic signature mypy sees does not.
        kept = Or(negated, IsNull(name))  # type: ignore[call-arg]
        if isinstance(expression, _FALSE_ON_NAN) and isinstance(field.field_type, (FloatType, DoubleType)):
            kept = Or(kept, IsNaN(name))  # type: ignore[call-arg]
        return kept
    raise TypeError(f"unexpected expression in a bound row filter: {expression!r}")


def _unbound(predicate: BooleanExpression, name: str) -> BooleanExpression:
    """A bound predicate as the same predicate on the column ``name``."""
    if isinstance(predicate, BoundUnaryPredicate):
        return predicate.as_unbound(name)
    if isinstance(predicate, BoundLiteralPredicate):
        return predicate.as_unbound(name, predicate.literal)
    if isinstance(predicate, BoundSetPredicate):
        return predicate.as_unbound(name, predicate.literals)
    raise TypeError(f"unexpected predicate in a bound row filter: {predicate!r}")
