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


def _schema(*extra: NestedField) -> Schema:
    return Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()), *extra)


def test_a_schema_of_types_we_write_is_writable() -> None:
    nested = StructType(NestedField(11, "x", LongType()), NestedField(12, "y", ListType(13, StringType())))
    assert unsupported_v3_feature(_schema(NestedField(10, "n", nested))) is None


@pytest.mark.parametrize(
    ("field_type", "name"),
    [
        (TimestampNanoType(), "timestamp_ns"),
        (TimestamptzNanoType(), "timestamptz_ns"),
        (UnknownType(), "unknown"),
        (GeometryType(), "geometry"),
        (GeographyType(), "geography"),
    ],
)
def test_a_type_new_in_v3_is_named_with_its_column(field_type: IcebergType, name: str) -> None:
    assert (
        unsupported_v3_feature(_schema(NestedField(7, "col", field_type)))
        == f"the {name} type (column col, field id 7)"
    )


def test_a_type_new_in_v3_is_found_inside_lists_maps_and_structs() -> None:
    in_map = MapType(21, StringType(), 22, StructType(NestedField(23, "deep", TimestampNanoType())))
    problem = unsupported_v3_feature(_schema(NestedField(20, "m", in_map)))
    assert problem == "the timestamp_ns type (column deep, field id 23)"


def test_default_values_are_named() -> None:
    field = NestedField(5, "flag", LongType(), initial_default=0, write_default=0)
    assert unsupported_v3_feature(_schema(field)) == "default values (column flag, field id 5)"


def test_a_refusal_is_bad_input() -> None:
    assert issubclass(UnwritableTableError, UserInputError)  # every job exits 2 on it
