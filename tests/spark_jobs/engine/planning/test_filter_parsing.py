"""The row-filter parser: pyiceberg's syntax with variant-path comparisons and geo box tests combined freely."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pyiceberg.expressions import And, EqualTo, Not, Or
from pyiceberg.expressions.parser import parse
from pyparsing import ParseException

from spark_jobs.engine.planning.filter_parsing import parse_row_filter
from spark_jobs.engine.shared.extended_predicates import SpatialPredicate, VariantPathPredicate
from spark_jobs.engine.shared.geo_boxes import Box


def test_plain_filters_parse_as_pyiceberg_parses_them():
    text = "id > 5 AND (cat = 'variant_get(' OR name IS NULL)"  # a call's name inside quotes is text
    assert parse_row_filter(text) == parse(text)


def test_variant_comparisons_in_every_form():
    parsed = parse_row_filter(
        "variant_get(v, '$.a.b', 'int') >= 5 AND try_variant_get(`v`, \"$['c']\", 'string') IN ('x', 'y') "
        "OR NOT variant_get(v, '$.d', 'double') IS NOT NULL"
    )
    assert isinstance(parsed, Or) and isinstance(parsed.left, And) and isinstance(parsed.right, Not)
    first, second = parsed.left.left, parsed.left.right
    assert isinstance(first, VariantPathPredicate) and first.term.name == "v"
    assert (first.condition.path, first.condition.operation, first.condition.literals) == (("a", "b"), "ge", (5,))
    assert (second.condition.path, second.condition.operation, second.condition.literals) == (("c",), "in", ("x", "y"))
    assert parsed.right.child.condition.operation == "not_null"
    decimal = parse_row_filter("variant_get(v, '$.p', 'decimal(9,2)') <> 2.50")
    assert (decimal.condition.operation, decimal.condition.literals) == ("ne", (Decimal("2.50"),))


def test_geo_box_tests():
    parsed = parse_row_filter("st_intersects(g, st_makeenvelope(-1, -2.5, 3e1, 4)) AND id = 1")
    assert isinstance(parsed, And) and parsed.right == EqualTo("id", 1)
    assert isinstance(parsed.left, SpatialPredicate) and parsed.left.condition.box == Box(-1, -2.5, 30, 4)
    disjoint = parse_row_filter("ST_Disjoint(g, ST_MakeEnvelope(170, 0, -170, 1))")
    assert not disjoint.condition.intersects and disjoint.condition.box.xmin == 170
    assert ~disjoint == parse_row_filter("st_intersects(g, st_makeenvelope(170, 0, -170, 1))")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("variant_get(v, '$.a') > 1", r"variant_get takes 3 arguments \(column, 'path', 'type'\), got 2"),
        ("variant_get(v, '$.a', 'int', 'x') > 1", "takes 3 arguments"),
        ("variant_get(v, '$.a', 'nosuch') > 1", "unknown variant_get type 'nosuch'"),
        ("variant_get(v, $.a, 'int') > 1", "path must be a quoted string"),
        ("variant_get(v, '$.a', 'int')", "must be followed by a comparison"),
        ("variant_get(v, '$.a', 'int') LIKE 'x'", "must be followed by a comparison"),
        ("variant_get(v, '$.a', 'int') > 1.5", "is not an integer"),
        ("variant_get(v, '$.a', 'string') = 5", "is not a string literal"),
        ("variant_get(v, '$.a', 'int') IN ()", "lists no values"),
        ("variant_get(v + 1, '$.a', 'int') = 1", "first argument must be a column name"),
        ("st_intersects(g)", r"st_intersects takes 2 arguments"),
        ("st_intersects(g, box(0, 0, 1, 1))", "must be st_makeenvelope"),
        ("st_intersects(g, st_makeenvelope(0, 0, 1))", "st_makeenvelope takes 4 arguments"),
        ("st_intersects(g, st_makeenvelope(0, 'a', 1, 1))", "takes numbers"),
        ("st_intersects(g, st_makeenvelope(0, 5, 1, 1))", "ymin must not exceed ymax"),
        ("variant_get(v, '$.a', 'int' > 1", "no closing parenthesis"),
    ],
)
def test_malformed_calls_say_what_was_expected(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_row_filter(text)


def test_a_syntax_error_beside_a_call_is_placed_in_the_text_as_written():
    text = "variant_get(v, '$.a', 'int') > 1 AND id >>= 3"
    with pytest.raises(ParseException) as caught:
        parse_row_filter(text)
    assert text[caught.value.loc :] == "id >>= 3"  # where pyiceberg's parser places it, in the text as written
