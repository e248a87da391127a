"""Shredded variant columns reassembled into unshredded variants: primitives, objects (partially shredded too),
arrays, missing fields, variant nulls and SQL NULLs, checked by decoding the result."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from spark_jobs.engine.parquet.variant_shredding import unshredded_variant
from spark_jobs.engine.shared import variant_encoding as ve
from spark_jobs.engine.shared.errors import CorruptFileError

NOON_UTC = dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)


def _metadata(*keys: str) -> bytes:
    dictionary = ve.VariantMetadata(ve.EMPTY_METADATA)
    for key in keys:
        dictionary.id_of(key)
    return dictionary.to_bytes()


def _decoded(array: pa.Array) -> list:
    rows = []
    for row in array.to_pylist():
        rows.append(None if row is None else ve.decode(ve.VariantMetadata(row["metadata"]), row["value"]))
    return rows


def _group(fields: dict[str, pa.Array], mask: list[bool] | None = None) -> pa.StructArray:
    return pa.StructArray.from_arrays(
        list(fields.values()), names=list(fields), mask=pa.array(mask) if mask is not None else None
    )


def test_primitive_typed_values_and_fallback_values():
    metadata = pa.array([_metadata()] * 5, pa.binary())
    fallback = ve.encode_primitive(ve.STRING, "not a number")
    value = pa.array([None, None, fallback, None, None], pa.binary())
    typed = pa.array([Decimal("1.50"), Decimal("-2.25"), None, None, Decimal("0.00")], pa.decimal128(6, 2))
    column = _group({"metadata": metadata, "value": value, "typed_value": typed}, [False, False, False, False, True])
    assert _decoded(unshredded_variant(column, "f")) == [Decimal("1.50"), Decimal("-2.25"), "not a number", None, None]


@pytest.mark.parametrize(
    ("arrow_type", "values", "expected"),
    [
        (pa.int8(), [7], [7]),
        (pa.int64(), [2**40], [2**40]),
        (pa.float64(), [1.5], [1.5]),
        (pa.bool_(), [False], [False]),
        (pa.string(), ["a" * 70], ["a" * 70]),
        (pa.binary(), [b"\x00\x01"], [b"\x00\x01"]),
        (pa.date32(), [dt.date(2024, 2, 29)], [dt.date(2024, 2, 29)]),
        (
            pa.timestamp("us", "UTC"),
            [dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)],
            [dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)],
        ),
        (pa.timestamp("us"), [dt.datetime(2024, 1, 1, 12)], [dt.datetime(2024, 1, 1, 12)]),
        (pa.timestamp("ns"), [5], [ve.VariantTimestampNanos(5, False)]),
    ],
)
def test_each_primitive_type_becomes_its_variant_primitive(arrow_type, values, expected):
    column = _group(
        {
            "metadata": pa.array([_metadata()], pa.binary()),
            "value": pa.nulls(1, pa.binary()),
            "typed_value": pa.array(values, arrow_type),
        }
    )
    assert _decoded(unshredded_variant(column, "f")) == expected


def test_objects_merge_shredded_fields_with_the_residual_object():
    keys = _metadata("a", "b", "extra")
    dictionary = ve.VariantMetadata(keys)
    residual = ve.encode_object(dictionary, {"extra": ve.encode_primitive(ve.STRING, "kept")})
    a = _group({"value": pa.array([None, None, None], pa.binary()), "typed_value": pa.array([1, 2, None], pa.int32())})
    b = _group(
        {
            "value": pa.array([None, ve.encode_primitive(ve.INT64, 9), None], pa.binary()),
            "typed_value": pa.array(["x", None, None], pa.string()),
        }
    )
    typed = _group({"a": a, "b": b}, [False, False, True])
    column = _group(
        {
            "metadata": pa.array([keys] * 3, pa.binary()),
            "value": pa.array([residual, None, ve.encode_array([ve.NULL_VALUE])], pa.binary()),
            "typed_value": typed,
        }
    )
    assert _decoded(unshredded_variant(column, "f")) == [{"a": 1, "b": "x", "extra": "kept"}, {"a": 2, "b": 9}, [None]]


def test_shredded_field_names_missing_from_the_metadata_are_appended():
    typed = _group({"new": _group({"value": pa.nulls(1, pa.binary()), "typed_value": pa.array([3], pa.int16())})})
    column = _group({"metadata": pa.array([_metadata("z")], pa.binary()), "typed_value": typed})
    out = unshredded_variant(column, "f")
    assert _decoded(out) == [{"new": 3}]
    assert ve.VariantMetadata(out.field("metadata")[0].as_py()).keys == ["z", "new"]


def test_arrays_of_shredded_elements():
    element = _group(
        {"value": pa.array([None, ve.NULL_VALUE, None], pa.binary()), "typed_value": pa.array([1, None, 3])}
    )
    typed = pa.ListArray.from_arrays(pa.array([0, 2, 2, 3], pa.int32()), element, mask=pa.array([False, True, False]))
    column = _group(
        {
            "metadata": pa.array([_metadata()] * 3, pa.binary()),
            "value": pa.array([None, ve.encode_primitive(ve.STRING, "s"), None], pa.binary()),
            "typed_value": typed,
        }
    )
    assert _decoded(unshredded_variant(column, "f")) == [[1, None], "s", [3]]


def test_an_unshredded_group_is_passed_through_and_a_damaged_one_is_named():
    plain = _group(
        {"metadata": pa.array([_metadata()], pa.binary()), "value": pa.array([ve.encode_primitive(ve.INT32, 5)])}
    )
    assert _decoded(unshredded_variant(plain, "f")) == [5]
    damaged = _group({"metadata": pa.array([b"\x02"], pa.binary()), "typed_value": pa.array([1])})
    with pytest.raises(CorruptFileError, match=r"data\.parquet: a shredded variant"):
        unshredded_variant(damaged, "data.parquet")


def test_encoding_round_trips_through_decode():
    dictionary = ve.VariantMetadata(ve.EMPTY_METADATA)
    value = ve.encode_object(
        dictionary,
        {
            "n": ve.encode_primitive(ve.DECIMAL16, Decimal("12345678901234567890.5"), 1),
            "l": ve.encode_array([ve.encode_primitive(ve.DOUBLE, 0.25), ve.encode_primitive(ve.TRUE, True)]),
            "t": ve.encode_primitive(ve.TIME_NTZ, dt.time(1, 2, 3, 4)),
        },
    )
    assert ve.decode(ve.VariantMetadata(dictionary.to_bytes()), value) == {
        "n": Decimal("12345678901234567890.5"),
        "l": [0.25, True],
        "t": dt.time(1, 2, 3, 4),
    }
    assert ve.value_length(value) == len(value)
