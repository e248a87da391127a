"""Which v3 schemas writes refuse, and the line that names the feature (a user's table, so nothing may be written)."""

from __future__ import annotations

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestamptzNanoType,
    UnknownType,
)

from spark_jobs.engine.commit.format_v3 import UnwritableTableError, unsupported_v3_feature
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.iceberg_model import VariantType


def _schema(*extra: NestedField) -> Schema:
    return Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()), *extra)


def test_a_schema_of_types_we_write_is_writable() -> None:
    nested = StructType(NestedField(11, "x", LongType()), NestedField(12, "y", ListType(13, StringType())))
    assert unsupported_v3_feature(_schema(NestedField(10, "n", nested))) is None


@pytest.mark.parametrize(
    "field_type",
    [
        TimestampNanoType(),
        TimestamptzNanoType(),
        UnknownType(),
        GeometryType(),
        GeographyType("srid:4269"),
        VariantType(),
    ],
)
def test_every_type_new_in_v3_is_writable(field_type: IcebergType) -> None:
    nested = StructType(NestedField(11, "inner", field_type))
    assert unsupported_v3_feature(_schema(NestedField(7, "col", field_type), NestedField(10, "s2", nested))) is None


def test_default_values_are_writable() -> None:
    field = NestedField(5, "flag", LongType(), initial_default=0, write_default=3)
    nanos = NestedField(6, "at", TimestampNanoType(), initial_default=1, write_default=1_000_000_001)
    assert unsupported_v3_feature(_schema(field, nanos)) is None


def test_unknown_inside_a_list_or_map_is_named() -> None:
    in_map = MapType(21, StringType(), 22, UnknownType())
    problem = unsupported_v3_feature(_schema(NestedField(20, "m", in_map)))
    assert problem == "the unknown type inside a list or map (column m, field id 22)"
    in_list = ListType(31, UnknownType())
    assert "field id 31" in (unsupported_v3_feature(_schema(NestedField(30, "l", in_list))) or "")


def test_a_refusal_is_bad_input() -> None:
    assert issubclass(UnwritableTableError, UserInputError)  # every job exits 2 on it
