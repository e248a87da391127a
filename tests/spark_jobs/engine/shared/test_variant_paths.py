"""Variant paths: Spark's JSON path syntax, the spec's normalized keys, typed comparisons and bounds."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from spark_jobs.engine.shared import variant_encoding as ve
from spark_jobs.engine.shared.variant_paths import (
    bound_value,
    bounds_rule_out,
    compare,
    extraction_type,
    normalized_path,
    parse_path,
    value_at,
)


@pytest.mark.parametrize(
    ("text", "segments", "normalized"),
    [
        ("$", (), "$"),
        ("$.a.b", ("a", "b"), "$['a']['b']"),
        ("$['user.name']", ("user.name",), "$['user.name']"),
        ('$["it\'s"].x', ("it's", "x"), "$['it\\'s']['x']"),
        ("$.tags[2]", ("tags", 2), None),
    ],
)
def test_paths_parse_and_normalize_as_the_spec_keys_bounds(text, segments, normalized):
    assert parse_path(text) == segments
    assert normalized_path(segments) == normalized


@pytest.mark.parametrize(("text", "reason"), [("a.b", "must start with '\\$'"), ("$.a..b", "does not parse")])
def test_a_malformed_path_says_where(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_path(text)


def _encoded(fields: dict[str, bytes]) -> tuple[ve.VariantMetadata, bytes]:
    metadata = ve.VariantMetadata(ve.EMPTY_METADATA)
    value = ve.encode_object(metadata, fields)
    return ve.VariantMetadata(metadata.to_bytes()), value


def test_values_are_found_along_objects_and_arrays_and_missing_paths_are_null():
    metadata = ve.VariantMetadata(ve.EMPTY_METADATA)
    inner = ve.encode_object(metadata, {"b": ve.encode_primitive(ve.INT8, 7)})
    array = ve.encode_array([ve.encode_primitive(ve.STRING, "x"), ve.encode_primitive(ve.INT64, 9)])
    value = ve.encode_object(metadata, {"a": inner, "t": array})
    metadata = ve.VariantMetadata(metadata.to_bytes())
    assert value_at(metadata, value, ("a", "b")) == 7
    assert value_at(metadata, value, ("t", 1)) == 9
    assert value_at(metadata, value, ("t", 5)) is None
    assert value_at(metadata, value, ("a", "c")) is None
    assert value_at(metadata, value, ("t", "b")) is None  # a key into an array
    assert value_at(metadata, value, ("a", 0)) is None  # an index into an object


def test_types_compare_values_of_their_kind_only():
    int_type, string_type = extraction_type("int"), extraction_type("String")
    assert int_type.comparable(5) == 5 and int_type.comparable(2.5) == 2.5 and int_type.comparable(Decimal("1.5"))
    assert int_type.comparable("5") is None and int_type.comparable(True) is None
    assert int_type.comparable(float("nan")) is None
    assert string_type.comparable("x") == "x" and string_type.comparable(1) is None
    assert extraction_type("decimal(10, 2)").kind == "number"
    stamp = extraction_type("timestamp")
    moment = dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    assert stamp.comparable(moment) == stamp.parse_literal("2024-01-02T03:04:05.000006Z")
    assert stamp.comparable(moment.replace(tzinfo=None)) is None  # timestamp_ntz is another kind
    nanos = ve.VariantTimestampNanos(stamp.parse_literal("2024-01-02T03:04:05Z") + 1, adjusted_to_utc=True)
    assert stamp.comparable(nanos) > stamp.parse_literal("2024-01-02T03:04:05Z")


@pytest.mark.parametrize(("name", "literal"), [("int", "x"), ("int", Decimal("2.5")), ("date", "2024-13-01")])
def test_a_literal_of_the_wrong_type_is_refused(name, literal):
    with pytest.raises(ValueError):
        extraction_type(name).parse_literal(literal)


def test_an_unknown_type_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown variant_get type 'integr'; expected one of tinyint"):
        extraction_type("integr")


def test_rows_compare_with_sql_null_rules():
    assert compare("gt", 6, (5,)) and not compare("gt", None, (5,))
    assert not compare("ne", None, (5,)) and compare("is_null", None, ())
    assert compare("in", 5.0, (5, 7)) and not compare("not_in", None, (5,))


def test_bounds_rule_out_only_what_cannot_match():
    assert bounds_rule_out("gt", 0, 9, (9,)) and not bounds_rule_out("gt", 0, 9, (8,))
    assert bounds_rule_out("lt", 3, None, (3,)) and not bounds_rule_out("lt", None, 9, (3,))
    assert bounds_rule_out("in", 10, 20, (1, 30)) and not bounds_rule_out("in", 10, 20, (1, 15))
    assert not bounds_rule_out("ne", 5, 5, (5,))  # never by bounds
    assert not bounds_rule_out("eq", "a", "z", (5,))  # bounds of another kind prove nothing


def test_a_variant_bound_holds_one_value_per_normalized_path():
    metadata = ve.VariantMetadata(ve.EMPTY_METADATA)
    value = ve.encode_object(
        metadata, {"$['a']": ve.encode_primitive(ve.INT8, 3), "$['o']['b']": ve.encode_primitive(ve.STRING, "q")}
    )
    serialized = metadata.to_bytes() + value
    dictionaries: dict[bytes, ve.VariantMetadata] = {}
    assert bound_value(serialized, "$['a']", dictionaries) == 3
    assert bound_value(serialized, "$['o']['b']", dictionaries) == "q"
    assert bound_value(serialized, "$['c']") is None
    assert list(dictionaries) == [metadata.to_bytes()]  # decoded once
    with pytest.raises(ValueError, match="not an object"):
        bound_value(ve.EMPTY_METADATA + ve.encode_primitive(ve.INT8, 3), "$")
