"""Aggregates folded from Arrow batches: parsing, binding to a schema, partials, and Spark's result rules."""

from __future__ import annotations

import decimal
import math

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    DecimalType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    TimeType,
)

from spark_jobs.engine.read.aggregates import (
    Aggregate,
    AggregateOverflowError,
    bind_aggregates,
    json_safe,
    parse_aggregates,
)
from spark_jobs.engine.shared.errors import UserInputError

SCHEMA = Schema(
    NestedField(1, "i", IntegerType(), required=False),
    NestedField(2, "l", LongType(), required=False),
    NestedField(3, "d", DoubleType(), required=False),
    NestedField(4, "amount", DecimalType(38, 2), required=False),
    NestedField(5, "s", StringType(), required=False),
    NestedField(6, "t", TimeType(), required=False),
    NestedField(7, "tags", ListType(8, StringType(), element_required=False), required=False),
    NestedField(9, "small", DecimalType(9, 2), required=False),
    NestedField(10, "bin", BinaryType(), required=False),
)


def _values(spec: str, *batches: pa.RecordBatch, ansi: bool = True, split: bool = False) -> dict:
    """Fold ``batches`` as one task (or one task per batch with ``split``) and combine them."""
    plan = bind_aggregates(parse_aggregates(spec), SCHEMA, "db.t")
    partials = [plan.partial_of([batch]) for batch in batches] if split else [plan.partial_of(batches)]
    return plan.combine(partials, ansi=ansi)


def _batch(**columns: pa.Array) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns))


def test_parsing_reads_items_with_spaces_case_and_backquotes():
    assert parse_aggregates(" COUNT( * ) , sum(price),max(`odd name`)") == [
        Aggregate("count", None),
        Aggregate("sum", "price"),
        Aggregate("max", "odd name"),
    ]
    assert [a.label for a in parse_aggregates(["count(*)", "avg(x)"])] == ["count(*)", "avg(x)"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("sum price", "cannot read 'sum price'"),
        ("median(l)", "unknown function 'median'"),
        ("max(*)", "only count takes *"),
        ("sum(l),sum(l)", "sum(l) twice"),
        ("", "none given"),
        ("sum(l) max(l)", "cannot read"),
    ],
)
def test_malformed_aggregates_are_refused_with_the_reason(spec, message):
    with pytest.raises(UserInputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        parse_aggregates(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("sum(nope)", "aggregate sum(nope): table db.t has no column 'nope'"),
        ("sum(s)", "aggregate sum(s) of table db.t: column 's' is string, which sum does not support"),
        ("avg(amount)", "avg of decimals: use sum and count"),
        ("min(t)", "column 't' is time"),
        ("max(tags)", "column 'tags' is list<string>"),
    ],
)
def test_an_aggregate_the_column_cannot_take_names_aggregate_table_and_column(spec, message):
    with pytest.raises(UserInputError) as raised:
        bind_aggregates(parse_aggregates(spec), SCHEMA, "db.t")
    assert message in str(raised.value)


def test_count_of_any_column_counts_its_non_null_values_and_count_star_every_row():
    tags = pa.array([["a"], None, []], pa.list_(pa.string()))
    values = _values("count(*),count(tags),count(d)", _batch(tags=tags, d=pa.array([math.nan, None, 1.0])))
    assert values == {"count(*)": 3, "count(tags)": 2, "count(d)": 2}  # NaN is a value, as in Spark


def test_no_rows_give_zero_counts_and_null_sums_averages_and_extremes():
    empty = _batch(l=pa.array([], pa.int64()), d=pa.array([], pa.float64()))
    all_null = _batch(l=pa.array([None, None], pa.int64()), d=pa.array([None, None], pa.float64()))
    for batches in ((), (empty,), (all_null,)):
        values = _values("count(*),count(l),sum(l),avg(d),min(l),max(d)", *batches)
        assert values["count(l)"] == 0 and values["sum(l)"] is None and values["avg(d)"] is None
        assert values["min(l)"] is None and values["max(d)"] is None


def test_integer_sums_are_exact_across_batches_and_tasks_and_overflow_follows_ansi():
    big = 2**62
    batches = [_batch(l=pa.array([big, big, None], pa.int64())), _batch(l=pa.array([-big, 5], pa.int64()))]
    assert _values("sum(l)", *batches)["sum(l)"] == big + 5
    assert _values("sum(l)", *batches, split=True)["sum(l)"] == big + 5
    over = [_batch(l=pa.array([2**63 - 1, 2], pa.int64()))]
    with pytest.raises(AggregateOverflowError, match=r"sum\(l\) = 9223372036854775809 overflows bigint"):
        _values("sum(l)", *over, ansi=True)
    assert _values("sum(l)", *over, ansi=False)["sum(l)"] == -(2**63) + 1  # wrapped, as Spark's non-ANSI sum


def test_decimal_sums_widen_by_ten_digits_and_overflow_follows_ansi():
    small = _batch(small=pa.array([decimal.Decimal("9999999.99")] * 3, pa.decimal128(9, 2)))
    assert _values("sum(small)", small)["sum(small)"] == decimal.Decimal("29999999.97")
    near = decimal.Decimal("9" * 36 + ".99")  # decimal(38, 2)'s largest value: the sum's type is decimal(38, 2) too
    wide = _batch(amount=pa.array([near, decimal.Decimal("0.01"), None], pa.decimal128(38, 2)))
    with pytest.raises(AggregateOverflowError, match="overflows decimal"):
        _values("sum(amount)", wide, ansi=True)
    assert _values("sum(amount)", wide, ansi=False)["sum(amount)"] is None  # Spark's non-ANSI sum: NULL
    fits = _batch(amount=pa.array([near, decimal.Decimal("-1.00")], pa.decimal128(38, 2)))
    back = _batch(amount=pa.array([decimal.Decimal("0.50")], pa.decimal128(38, 2)))
    assert _values("sum(amount)", fits, back, split=True)["sum(amount)"] == decimal.Decimal("9" * 36 + ".49")


def test_nan_orders_above_every_number_as_in_spark():
    with_nan = _batch(d=pa.array([1.0, math.nan, None, -math.inf], pa.float64()))
    values = _values("min(d),max(d),sum(d)", with_nan)
    assert values["min(d)"] == -math.inf and math.isnan(values["max(d)"]) and math.isnan(values["sum(d)"])
    only_nan = _batch(d=pa.array([math.nan, None], pa.float64()))
    numbers = _batch(d=pa.array([2.0], pa.float64()))
    split = _values("min(d),max(d)", only_nan, numbers, split=True)
    assert split["min(d)"] == 2.0 and math.isnan(split["max(d)"])
    assert math.isnan(_values("min(d)", only_nan)["min(d)"])


def test_min_and_max_of_strings_and_binary_order_by_bytes_and_avg_is_a_double():
    batch = _batch(
        s=pa.array(["b", "é", None, "a"]),
        bin=pa.array([b"\x7f", b"\xff", b"\x00", None]),
        i=pa.array([1, 2, None, None], pa.int32()),
    )
    values = _values("min(s),max(s),min(bin),max(bin),avg(i)", batch)
    assert (values["min(s)"], values["max(s)"]) == ("a", "é")
    assert (values["min(bin)"], values["max(bin)"]) == (b"\x00", b"\xff")
    assert values["avg(i)"] == 1.5


def test_json_safe_values_are_strings_for_decimals_times_binary_and_non_finite_floats():
    import datetime as dt

    values = {
        "a": decimal.Decimal("1.50"),
        "b": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "c": dt.date(2024, 1, 2),
        "d": b"\x00\xff",
        "e": math.nan,
        "f": -math.inf,
        "g": 3,
        "h": None,
    }
    assert json_safe(values) == {
        "a": "1.50",
        "b": "2024-01-02T03:04:05+00:00",
        "c": "2024-01-02",
        "d": "AP8=",
        "e": "NaN",
        "f": "-Infinity",
        "g": 3,
        "h": None,
    }
