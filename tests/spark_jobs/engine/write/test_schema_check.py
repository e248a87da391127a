"""Schema check: nulls for missing optional fields, errors naming fields and types, evolution by fresh ids."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DoubleType,
    GeographyType,
    GeometryType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    UnknownType,
)

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.iceberg_model import VariantType
from spark_jobs.engine.write.schema_check import check_schema

TABLE = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "score", DoubleType(), required=False),
    schema_id=0,
)


def test_a_missing_optional_column_is_filled_and_promotions_are_allowed() -> None:
    source = pa.schema([pa.field("id", pa.int32()), pa.field("score", pa.float32())])
    checked = check_schema("ns.t", TABLE, source, allow_evolution=False)
    assert checked.schema == TABLE and checked.null_filled_columns == ["name"] and not checked.evolves


def test_a_type_mismatch_names_the_column_and_both_types() -> None:
    source = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.int64())])
    with pytest.raises(UserInputError, match=r"column 'name' has type long in the source but string in the table"):
        check_schema("ns.t", TABLE, source, allow_evolution=False)


def test_a_missing_required_column_is_an_error() -> None:
    with pytest.raises(UserInputError, match=r"required column 'id' is missing"):
        check_schema("ns.t", TABLE, pa.schema([pa.field("name", pa.string())]), allow_evolution=False)


def test_an_extra_column_is_an_error_unless_evolution_is_allowed() -> None:
    source = pa.schema([pa.field("id", pa.int64()), pa.field("extra", pa.int32())])
    with pytest.raises(UserInputError, match=r"'extra' are not in the table; pass --allow-schema-evolution"):
        check_schema("ns.t", TABLE, source, allow_evolution=False)
    checked = check_schema("ns.t", TABLE, source, allow_evolution=True)
    assert checked.added_columns == ["extra"]
    added = checked.schema.find_field("extra")
    assert added.field_id == 4 and added.field_type == IntegerType() and not added.required
    assert checked.schema.schema_id == 1


def test_every_problem_is_reported_at_once() -> None:
    source = pa.schema([pa.field("name", pa.float64()), pa.field("score", pa.string())])
    with pytest.raises(UserInputError) as raised:
        check_schema("ns.t", TABLE, source, allow_evolution=False)
    message = str(raised.value)
    assert "'id'" in message and "'name'" in message and "'score'" in message and "ns.t" in message


def test_nested_extra_columns_get_fresh_ids_for_every_nested_field() -> None:
    source = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("point", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])),
            pa.field("attrs", pa.map_(pa.string(), pa.int64())),
        ]
    )
    checked = check_schema("ns.t", TABLE, source, allow_evolution=True)
    assert checked.added_columns == ["tags", "point", "attrs"]
    assert str(checked.schema.find_field("tags")) == "4: tags: optional list<string>"
    assert checked.schema.find_field("tags.element").field_id == 5
    point = checked.schema.find_field("point")
    assert point.field_id == 6 and not point.required
    assert [(f.field_id, f.name) for f in point.field_type.fields] == [(7, "x"), (8, "y")]
    attrs = checked.schema.find_field("attrs")
    assert (attrs.field_id, attrs.field_type.key_id, attrs.field_type.value_id) == (9, 10, 11)
    assert checked.schema.highest_field_id == 11


NESTED = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "point", StructType(NestedField(3, "x", DoubleType(), required=True)), required=False),
    NestedField(4, "items", ListType(5, StructType(NestedField(6, "k", StringType(), required=False)))),
    NestedField(7, "attrs", MapType(8, StringType(), 9, StructType(NestedField(10, "a", IntegerType())))),
    schema_id=3,
)


def test_fields_added_inside_existing_structs_take_ids_after_the_last_column_id() -> None:
    source = pa.schema(
        [
            ("id", pa.int64()),
            ("point", pa.struct([("y", pa.float64()), ("x", pa.float64()), ("tag", pa.struct([("t", pa.string())]))])),
            ("items", pa.list_(pa.struct([("k", pa.string()), ("n", pa.int64())]))),
            ("attrs", pa.map_(pa.string(), pa.struct([("a", pa.int16()), ("b", pa.string())]))),
        ]
    )
    checked = check_schema("ns.t", NESTED, source, allow_evolution=True, last_column_id=20, next_schema_id=7)
    assert checked.added_columns == ["point.y", "point.tag", "items.element.n", "attrs.value.b"]
    assert checked.schema.schema_id == 7
    point = checked.schema.find_field("point")
    assert [(f.field_id, f.name, f.required) for f in point.field_type.fields] == [
        (3, "x", True),
        (21, "y", False),
        (22, "tag", False),
    ]
    assert checked.schema.find_field("point.tag.t").field_id == 23
    assert (
        str(checked.schema.find_field("items.element").field_type)
        == "struct<6: k: optional string, 24: n: optional long>"
    )
    assert checked.schema.find_field("attrs.value.b").field_id == 25
    assert checked.schema.find_field("attrs.value.a").field_type == IntegerType()  # a promotion keeps the table's type
    assert checked.schema.highest_field_id == 25


def test_nested_fields_are_not_added_without_evolution_and_absent_optional_ones_are_null_filled() -> None:
    source = pa.schema([("id", pa.int64()), ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())]))])
    with pytest.raises(UserInputError, match=r"source field\(s\) 'point.y' are not in the table; pass --allow"):
        check_schema("ns.t", NESTED, source, allow_evolution=False)
    same = check_schema(
        "ns.t",
        NESTED,
        pa.schema([("id", pa.int64()), ("point", pa.struct([("x", pa.float32())]))]),
        allow_evolution=False,
    )
    assert same.schema is NESTED and not same.evolves and same.null_filled_columns == ["items", "attrs"]


def test_unsafe_nested_changes_are_errors_naming_the_field() -> None:
    source = pa.schema(
        [
            ("id", pa.int64()),
            ("point", pa.struct([("y", pa.float64())])),
            ("items", pa.list_(pa.struct([("k", pa.int64())]))),
            ("attrs", pa.map_(pa.struct([("s", pa.string())]), pa.struct([("a", pa.int64())]))),
        ]
    )
    with pytest.raises(UserInputError) as raised:
        check_schema("ns.t", NESTED, source, allow_evolution=True)
    message = str(raised.value)
    assert "required field 'point.x' is missing from the source" in message
    assert "column 'items.element.k' has type long in the source but string in the table" in message
    assert "column 'attrs.key' has type struct<s: string> in the source but string in the table" in message
    assert "column 'attrs.value.a' has type long in the source but int in the table" in message
    narrowed = pa.schema([("id", pa.int64()), ("point", pa.int64())])
    with pytest.raises(UserInputError, match=r"column 'point' has type int64 in the source but struct"):
        check_schema("ns.t", NESTED, narrowed, allow_evolution=True)


SPARK_VARIANT = pa.struct(
    [pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False, metadata={"variant": "true"})]
)


def _spark_geo(kind: str, srid: int) -> pa.DataType:
    marks = {kind: "true", "srid": str(srid)}
    return pa.struct([pa.field("srid", pa.int32(), False), pa.field("wkb", pa.binary(), False, metadata=marks)])


V3_TABLE = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "v", VariantType()),
    NestedField(3, "g", GeometryType()),
    NestedField(4, "gg", GeographyType()),
    NestedField(5, "tn", TimestampNanoType()),
    NestedField(6, "u", UnknownType()),
    NestedField(7, "d", IntegerType(), required=True, initial_default=1, write_default=7),
    schema_id=0,
)


def test_format_v3_types_as_sources_give_them_fit() -> None:
    source = pa.schema(
        [
            ("id", pa.int64()),
            ("v", SPARK_VARIANT),
            ("g", _spark_geo("geometry", 4326)),
            ("gg", pa.binary()),  # WKB
            ("tn", pa.timestamp("us")),  # exact in nanoseconds
            ("u", pa.null()),
        ]
    )
    checked = check_schema("t", V3_TABLE, source, allow_evolution=False)
    assert checked.schema is V3_TABLE  # d is missing but has a write default: not an error, not null-filled
    assert "d" not in checked.null_filled_columns


@pytest.mark.parametrize(
    ("column", "arrow_type", "said"),
    [
        ("g", _spark_geo("geometry", 3857), "column 'g'"),
        ("gg", _spark_geo("geometry", 4326), "column 'gg'"),  # a geometry for a geography
        ("v", pa.string(), "column 'v'"),  # JSON text is no variant
        ("u", pa.int64(), "column 'u'"),  # an unknown column takes nulls only
        ("tn", pa.timestamp("ns", tz="UTC"), "column 'tn'"),
    ],
)
def test_format_v3_types_refuse_what_does_not_fit(column: str, arrow_type: pa.DataType, said: str) -> None:
    source = pa.schema([("id", pa.int64()), (column, arrow_type)])
    with pytest.raises(UserInputError, match=said):
        check_schema("t", V3_TABLE, source, allow_evolution=False)


def test_nanoseconds_do_not_fit_a_microsecond_column() -> None:
    table = Schema(NestedField(1, "ts", TimestampType()), schema_id=0)
    with pytest.raises(UserInputError, match="column 'ts'"):
        check_schema("t", table, pa.schema([("ts", pa.timestamp("ns"))]), allow_evolution=False)
