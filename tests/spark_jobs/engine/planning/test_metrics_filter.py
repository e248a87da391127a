"""The vectorized metrics filter decides every file as pyiceberg's ``_InclusiveMetricsEvaluator`` does.

Property: for random files (counts present or absent, bounds present, absent, NaN or truncated, empty and
unknown-count files) and random filters over every kind of predicate, the mask equals pyiceberg's verdict file by
file. Unit cases pin the rules the property might draw rarely.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.conversions import to_bytes
from pyiceberg.expressions import (
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
)
from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluator
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
)

from spark_jobs.engine.planning.file_statistics import FileStatistics
from spark_jobs.engine.planning.metrics_filter import MetricsFilter, key_set_may_match

SCHEMA = Schema(
    NestedField(1, "l", LongType(), required=False),
    NestedField(2, "d", DoubleType(), required=False),
    NestedField(3, "s", StringType(), required=False),
    NestedField(4, "dt", DateType(), required=False),
    NestedField(5, "dec", DecimalType(10, 2), required=False),
    NestedField(6, "b", BooleanType(), required=False),
    NestedField(7, "i", IntegerType(), required=False),
    NestedField(8, "f", FloatType(), required=False),
    NestedField(9, "ts", TimestampType(), required=False),
)
_COUNTS = pa.map_(pa.int32(), pa.int64())
_BOUNDS = pa.map_(pa.int32(), pa.binary())

longs = st.integers(-50, 50)
doubles = st.one_of(st.floats(-50, 50, allow_nan=False), st.just(float("nan")))
strings = st.text(alphabet="abcé", max_size=4)
values_by_field = {
    1: longs,
    2: doubles,
    3: strings,
    4: st.integers(-20, 20),
    5: st.decimals(-100, 100, places=2, allow_nan=False, allow_infinity=False),
    6: st.booleans(),
    7: st.integers(-50, 50),
    8: st.floats(-50, 50, allow_nan=False, width=32),
    9: st.integers(-(10**6), 10**6),
}


@st.composite
def files(draw):
    """A DataFile with random statistics for a random subset of the fields."""
    value_counts, null_counts, nan_counts, lower, upper = {}, {}, {}, {}, {}
    for field in SCHEMA.fields:
        field_id = field.field_id
        if draw(st.booleans()):
            value_counts[field_id] = draw(st.integers(0, 5))
        if draw(st.booleans()):
            null_counts[field_id] = draw(st.integers(0, 5))
        if field_id in (2, 8) and draw(st.booleans()):
            nan_counts[field_id] = draw(st.integers(0, 5))
        if draw(st.booleans()):
            bounds = sorted([draw(values_by_field[field_id]) for _ in range(2)], key=_order_key)
            if draw(st.booleans()):
                lower[field_id] = to_bytes(field.field_type, bounds[0])
            if draw(st.booleans()):
                upper[field_id] = to_bytes(field.field_type, bounds[1])
    if 1 in lower and draw(st.booleans()):  # a bound written before int -> long promotion
        lower[1] = struct.pack("<i", max(-(2**31), min(2**31 - 1, struct.unpack("<q", lower[1])[0])))
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path="f",
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=draw(st.sampled_from([-1, 0, 1, 5, 10])),
        file_size_in_bytes=10,
        value_counts=value_counts or draw(st.sampled_from([None, {}])),
        null_value_counts=null_counts or draw(st.sampled_from([None, {}])),
        nan_value_counts=nan_counts or None,
        lower_bounds=lower or None,
        upper_bounds=upper or None,
    )


def _order_key(value):
    if isinstance(value, float) and math.isnan(value):
        return (1, 0.0)
    return (0, value)


def _not_nan(value) -> bool:
    return not (isinstance(value, float) and math.isnan(value))


@st.composite
def predicates(draw):
    field = draw(st.sampled_from(SCHEMA.fields))
    name = field.name
    values = values_by_field[field.field_id]
    kind = draw(st.sampled_from(["cmp", "in", "null", "nan", "prefix"]))
    if kind == "null":
        return draw(st.sampled_from([IsNull, NotNull]))(name)
    if kind == "nan" and field.field_id in (2, 8):
        return draw(st.sampled_from([IsNaN, NotNaN]))(name)
    if kind == "prefix" and field.field_id == 3:
        return draw(st.sampled_from([StartsWith, NotStartsWith]))(name, draw(strings))
    value = draw(values.filter(_not_nan))
    if kind == "in":
        others = draw(st.lists(values.filter(_not_nan), max_size=4))
        return draw(st.sampled_from([In, NotIn]))(name, [value, *others])
    operator = draw(st.sampled_from([EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual]))
    if isinstance(value, Decimal):
        value = str(value)
    return operator(name, value)


@st.composite
def expressions(draw, depth=2):
    if depth == 0 or draw(st.booleans()):
        return draw(predicates())
    left, right = draw(expressions(depth - 1)), draw(expressions(depth - 1))
    combined = draw(st.sampled_from([And, Or]))(left, right)
    return Not(combined) if draw(st.booleans()) else combined


def _as_columns(data_files: list[DataFile]) -> pa.Table:
    def mapped(name, arrow_type):
        values = [getattr(f, name) for f in data_files]
        return pa.array([None if v is None else list(v.items()) for v in values], arrow_type)

    return pa.table(
        {
            "value_counts": mapped("value_counts", _COUNTS),
            "null_value_counts": mapped("null_value_counts", _COUNTS),
            "nan_value_counts": mapped("nan_value_counts", _COUNTS),
            "lower_bounds": mapped("lower_bounds", _BOUNDS),
            "upper_bounds": mapped("upper_bounds", _BOUNDS),
        }
    )


def _vectorized(data_files: list[DataFile], expression: BooleanExpression) -> list[bool]:
    statistics = FileStatistics(_as_columns(data_files))
    record_counts = np.array([f.record_count for f in data_files], dtype=np.int64)
    return MetricsFilter(SCHEMA, expression).may_match(statistics, record_counts).tolist()


def _pyiceberg(data_files: list[DataFile], expression: BooleanExpression) -> list[bool]:
    evaluator = _InclusiveMetricsEvaluator(SCHEMA, expression)
    return [evaluator.eval(f) for f in data_files]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(files(), min_size=1, max_size=12), expressions())
def test_every_file_is_decided_as_pyiceberg_decides_it(data_files, expression):
    assert _vectorized(data_files, expression) == _pyiceberg(data_files, expression)


def _file(**kwargs) -> DataFile:
    arguments = {
        "content": DataFileContent.DATA,
        "file_path": "f",
        "file_format": FileFormat.PARQUET,
        "partition": Record(),
        "record_count": 10,
        "file_size_in_bytes": 10,
    }
    arguments.update(kwargs)
    return DataFile.from_args(**arguments)


def _long(value: int) -> bytes:
    return struct.pack("<q", value)


def test_a_point_filter_keeps_only_files_whose_bounds_hold_the_value():
    data_files = [
        _file(lower_bounds={1: _long(0)}, upper_bounds={1: _long(9)}),
        _file(lower_bounds={1: _long(10)}, upper_bounds={1: _long(19)}),
        _file(),  # no bounds: might match
        _file(record_count=0, lower_bounds={1: _long(10)}, upper_bounds={1: _long(19)}),  # empty
    ]
    assert _vectorized(data_files, EqualTo("l", 12)) == [False, True, True, False]


def test_in_with_more_than_200_values_is_not_checked_against_bounds():
    data_files = [_file(lower_bounds={1: _long(1000)}, upper_bounds={1: _long(2000)})]
    assert _vectorized(data_files, In("l", list(range(201)))) == [True]
    assert _vectorized(data_files, In("l", list(range(200)))) == [False]


def test_a_nan_lower_bound_proves_nothing():
    nan = struct.pack("<d", float("nan"))
    data_files = [_file(lower_bounds={2: nan}, upper_bounds={2: struct.pack("<d", 1.0)})]
    assert _vectorized(data_files, EqualTo("d", 5.0)) == [True]
    assert _vectorized(data_files, GreaterThan("d", 5.0)) == [False]


@pytest.mark.parametrize(
    ("keys", "expected"),
    [([5], [True, False, True]), ([10, 30], [False, True, True]), ([], [False, False, False]), ([-1, 40], [False] * 3)],
)
def test_a_key_set_keeps_files_whose_bounds_hold_a_key(keys, expected):
    data_files = [
        _file(lower_bounds={1: _long(0)}, upper_bounds={1: _long(9)}),
        _file(lower_bounds={1: _long(10)}, upper_bounds={1: _long(19)}),
        _file(value_counts={1: 10}, null_value_counts={1: 0}),  # no bounds: might hold any key
    ]
    if keys == [-1, 40]:
        data_files[2] = _file(value_counts={1: 10}, null_value_counts={1: 10})  # nulls only: holds no key
    statistics = FileStatistics(_as_columns(data_files))
    result = key_set_may_match(statistics, SCHEMA.find_field(1), np.array(sorted(keys), dtype=np.int64))
    assert result.tolist() == expected
