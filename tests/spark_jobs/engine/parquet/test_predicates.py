"""Translation of bound filters into the predicate tree, and "might match" over value bounds."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pyiceberg.expressions import (
    AlwaysFalse,
    EqualTo,
    GreaterThan,
    In,
    IsNaN,
    LessThan,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotStartsWith,
    Or,
    StartsWith,
)
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, DoubleType, FloatType, LongType, NestedField, StringType

from spark_jobs.engine.parquet.predicates import (
    AllOf,
    AnyOf,
    ColumnPredicate,
    Constant,
    ValueBounds,
    might_match,
    must_match,
    referenced_field_ids,
    split_conjuncts,
    translate_filter,
)

SCHEMA = Schema(
    NestedField(1, "x", LongType(), required=False),
    NestedField(2, "s", StringType(), required=False),
    NestedField(3, "f", DoubleType(), required=False),
    NestedField(4, "d", DecimalType(9, 2), required=False),
    NestedField(5, "g", FloatType(), required=False),
)


def _leaf(expression) -> ColumnPredicate:
    node = translate_filter(bind(SCHEMA, expression, case_sensitive=True))
    assert isinstance(node, ColumnPredicate)
    return node


def test_not_is_pushed_to_the_leaves_and_ands_flatten() -> None:
    node = translate_filter(
        bind(SCHEMA, Not(Or(GreaterThan("x", 5), StartsWith("s", "a"))) & EqualTo("f", 1.0), case_sensitive=True)
    )
    assert isinstance(node, AllOf)
    assert [child.operation for child in node.children] == ["le", "not_starts_with", "eq"]
    assert referenced_field_ids(node) == {1, 2, 3}
    assert len(split_conjuncts(node)) == 3
    assert split_conjuncts(translate_filter(None)) == []
    assert translate_filter(bind(SCHEMA, AlwaysFalse(), case_sensitive=True)) == Constant(False)


def test_or_of_ors_flattens() -> None:
    node = translate_filter(bind(SCHEMA, Or(Or(EqualTo("x", 1), EqualTo("x", 2)), EqualTo("x", 3)), True))
    assert isinstance(node, AnyOf) and len(node.children) == 3


@pytest.mark.parametrize(
    ("expression", "bounds", "expected"),
    [
        (LessThan("x", 5), ValueBounds(10, 0, 5, 9), False),
        (LessThan("x", 6), ValueBounds(10, 0, 5, 9), True),
        (GreaterThan("x", 9), ValueBounds(10, 0, 5, 9), False),
        (EqualTo("x", 4), ValueBounds(10, 0, 5, 9), False),
        (In("x", [1, 7]), ValueBounds(10, 0, 5, 9), True),
        (In("x", [1, 10]), ValueBounds(10, 0, 5, 9), False),
        (NotEqualTo("x", 5), ValueBounds(10, 3, 5, 5), False),
        (NotIn("x", [5, 6]), ValueBounds(10, 0, 5, 5), False),
        (NotIn("x", [5, 6]), ValueBounds(10, 0, 5, 6), True),
        (EqualTo("x", 5), ValueBounds(10, 10), False),  # all NULL
        (NotNaN("f"), ValueBounds(10, 10), True),  # NULL is not NaN
        (IsNaN("f"), ValueBounds(10, 10), False),
        (IsNaN("f"), ValueBounds(10, 0, 1.0, 2.0, may_contain_nan=True), True),
        (NotEqualTo("f", 1.0), ValueBounds(10, 0, 1.0, 1.0, may_contain_nan=True), True),  # NaN != 1.0
        (LessThan("f", 1.0), ValueBounds(10, 0, 1.0, 2.0, may_contain_nan=True), False),  # NaN < 1.0 is false
        (StartsWith("s", "b"), ValueBounds(10, 0, b"ab", b"az"), False),
        (StartsWith("s", "a"), ValueBounds(10, 0, b"ab", b"az"), True),
        (StartsWith("s", "ac"), ValueBounds(10, 0, b"ab", b"az"), True),
        (StartsWith("s", "ba"), ValueBounds(10, 0, b"a", b"b"), False),
        (NotStartsWith("s", "a"), ValueBounds(10, 0, b"ab", b"az"), False),
        (NotStartsWith("s", "a"), ValueBounds(10, 0, b"ab", b"b"), True),
        (EqualTo("s", "é"), ValueBounds(10, 0, b"a", b"z"), False),  # UTF-8 byte order
        (EqualTo("d", Decimal("1.50")), ValueBounds(10, 0, Decimal("1.00"), Decimal("1.49")), False),
        (EqualTo("x", 5), None, True),
        (EqualTo("x", 5), ValueBounds(10, None, None, None), True),
    ],
)
def test_might_match(expression, bounds: ValueBounds | None, expected: bool) -> None:
    assert might_match(_leaf(expression), bounds) is expected


def test_float_literals_compare_in_float_precision() -> None:
    # A float column holding 0.1f has bounds 0.10000000149...; "= 0.1" must still match it.
    float_value = 0.10000000149011612
    assert might_match(_leaf(EqualTo("g", 0.1)), ValueBounds(1, 0, float_value, float_value))


@pytest.mark.parametrize(
    ("expression", "bounds", "expected"),
    [
        (LessThan("x", 10), ValueBounds(10, 0, 5, 9), True),
        (LessThan("x", 9), ValueBounds(10, 0, 5, 9), False),
        (LessThan("x", 10), ValueBounds(10, 1, 5, 9), False),  # a NULL fails
        (LessThan("x", 10), ValueBounds(10, None, 5, 9), False),  # unknown null count
        (GreaterThan("x", 4), ValueBounds(10, 0, 5, 9), True),
        (EqualTo("x", 5), ValueBounds(10, 0, 5, 5), True),
        (In("x", [5, 6]), ValueBounds(10, 0, 5, 5), True),
        (NotEqualTo("x", 4), ValueBounds(10, 0, 5, 9), True),
        (NotIn("x", [1, 10]), ValueBounds(10, 0, 5, 9), True),
        (NotIn("x", [1, 7]), ValueBounds(10, 0, 5, 9), False),
        (LessThan("f", 10.0), ValueBounds(10, 0, 1.0, 2.0, may_contain_nan=True), False),  # NaN < 10 is false
        (NotEqualTo("f", 10.0), ValueBounds(10, 0, 1.0, 2.0, may_contain_nan=True), True),  # NaN != 10 is true
        (NotNaN("f"), ValueBounds(10, 0, 1.0, 2.0, may_contain_nan=True), False),
        (StartsWith("s", "ab"), ValueBounds(10, 0, b"ab", b"abz"), True),
        (StartsWith("s", "ab"), ValueBounds(10, 0, b"ab", b"ac"), False),
        (NotStartsWith("s", "b"), ValueBounds(10, 0, b"ab", b"az"), True),
        (NotStartsWith("s", "a"), ValueBounds(10, 0, b"ab", b"az"), False),
        (EqualTo("x", 5), None, False),
    ],
)
def test_must_match(expression, bounds: ValueBounds | None, expected: bool) -> None:
    assert must_match(_leaf(expression), bounds) is expected
