"""Translate the filters Spark pushes to a Python data source into pyiceberg expressions, when that is exact.

Spark does not re-check a filter a Python data source accepts, so only filters whose Iceberg evaluation equals
Spark SQL's are accepted: top-level columns, literals of types whose comparison agrees in both (integers, strings,
booleans, dates), and no floating point (Spark orders NaN above everything and makes NaN = NaN true) nor timestamps
(the session time zone decides what a Spark literal means). Everything else returns None and stays with Spark.
"""

from __future__ import annotations

import datetime as dt

from pyiceberg.expressions import (
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotNull,
    StartsWith,
)
from pyspark.sql import datasource as spark_ds

# pyiceberg's predicates take (term, literal) positionally through their own __init__; the signature pydantic
# generates, which is what mypy sees, has keyword fields only. Calls below are checked against the real one by the
# tests, and marked ``type: ignore[call-arg]`` for mypy.
_COMPARISONS: dict[type, type] = {
    spark_ds.EqualTo: EqualTo,
    spark_ds.GreaterThan: GreaterThan,
    spark_ds.GreaterThanOrEqual: GreaterThanOrEqual,
    spark_ds.LessThan: LessThan,
    spark_ds.LessThanOrEqual: LessThanOrEqual,
}
_COMPARISON_FILTERS = (
    spark_ds.EqualTo,
    spark_ds.GreaterThan,
    spark_ds.GreaterThanOrEqual,
    spark_ds.LessThan,
    spark_ds.LessThanOrEqual,
)


def _exact_literal(value: object) -> bool:
    """True for literal types whose Iceberg and Spark comparisons agree."""
    if isinstance(value, bool | int | str):
        return True
    return isinstance(value, dt.date) and not isinstance(value, dt.datetime)


def _column(attribute: tuple[str, ...]) -> str | None:
    """The top-level column a filter names, or None for nested paths and names pyiceberg would read as paths."""
    if len(attribute) != 1 or "." in attribute[0]:
        return None
    return attribute[0]


def spark_filter_to_iceberg(spark_filter: spark_ds.Filter) -> BooleanExpression | None:
    """The pyiceberg expression equal to ``spark_filter`` under Spark SQL semantics, or None when not exact."""
    if isinstance(spark_filter, spark_ds.Not):
        return _negation(spark_filter.child)
    column = _column(getattr(spark_filter, "attribute", ()))
    if column is None:
        return None
    if isinstance(spark_filter, _COMPARISON_FILTERS):
        value = spark_filter.value
        exact = value is not None and _exact_literal(value)
        return _COMPARISONS[type(spark_filter)](column, value) if exact else None
    if isinstance(spark_filter, spark_ds.EqualNullSafe):
        if spark_filter.value is None:
            return IsNull(column)  # type: ignore[call-arg]
        return EqualTo(column, spark_filter.value) if _exact_literal(spark_filter.value) else None  # type: ignore[call-arg]
    if isinstance(spark_filter, spark_ds.In):
        values = tuple(spark_filter.value)
        if not values or not all(v is not None and _exact_literal(v) for v in values):
            return None
        return In(column, values)  # type: ignore[call-arg]
    if isinstance(spark_filter, spark_ds.IsNull):
        return IsNull(column)  # type: ignore[call-arg]
    if isinstance(spark_filter, spark_ds.IsNotNull):
        return NotNull(column)  # type: ignore[call-arg]
    if isinstance(spark_filter, spark_ds.StringStartsWith):
        return StartsWith(column, spark_filter.value) if isinstance(spark_filter.value, str) else None  # type: ignore[call-arg]
    return None


def _negation(child: spark_ds.Filter) -> BooleanExpression | None:
    """NOT of the few children whose negation keeps SQL's null semantics (a NULL row never survives)."""
    column = _column(getattr(child, "attribute", ()))
    if column is None:
        return None
    if isinstance(child, spark_ds.IsNull):
        return NotNull(column)  # type: ignore[call-arg]
    if isinstance(child, spark_ds.IsNotNull):
        return IsNull(column)  # type: ignore[call-arg]
    if isinstance(child, spark_ds.EqualTo) and child.value is not None and _exact_literal(child.value):
        return NotEqualTo(column, child.value)  # type: ignore[call-arg]
    return None
