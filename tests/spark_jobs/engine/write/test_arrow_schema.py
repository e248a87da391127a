"""Arrow data conformed to the table schema: by name, in schema order, in the table's types, with field ids."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

from spark_jobs.engine.write.arrow_schema import conform_to_schema, file_arrow_schema

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "n", IntegerType(), required=False),
)


def test_the_file_schema_carries_field_ids() -> None:
    ids = [field.metadata[b"PARQUET:field_id"] for field in file_arrow_schema(SCHEMA)]
    assert ids == [b"1", b"2", b"3"]


def test_columns_are_ordered_cast_and_missing_ones_are_nulls() -> None:
    data = pa.table({"n": pa.array([7, 8], pa.int8()), "id": pa.array([1, 2], pa.int32())})
    conformed = conform_to_schema(data, SCHEMA)
    assert conformed.schema.equals(file_arrow_schema(SCHEMA), check_metadata=True)
    assert conformed.column("id").to_pylist() == [1, 2] and conformed.column("n").to_pylist() == [7, 8]
    assert conformed.column("name").null_count == 2
