"""Schema check: nulls for missing optional columns, errors naming columns and types, evolution by fresh ids."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType

from spark_jobs.engine.errors import UserInputError
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
