"""Arrow data conformed to the table schema: by name, in schema order, in the table's types, with field ids."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DateType,
    DecimalType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    UUIDType,
)

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


NESTED = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(
        2,
        "point",
        StructType(
            NestedField(3, "x", IntegerType(), required=True),
            NestedField(4, "at", StructType(NestedField(5, "day", DateType(), required=True)), required=True),
            NestedField(6, "tag", UUIDType(), required=True),
        ),
        required=False,
    ),
    NestedField(
        7,
        "items",
        ListType(8, StructType(NestedField(9, "d", DecimalType(10, 2), required=True)), element_required=False),
        required=False,
    ),
)


def _written_and_read(table: pa.Table) -> pa.Table:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return pq.read_table(io.BytesIO(sink.getvalue()))


def test_a_missing_struct_with_required_fields_is_written_as_null_structs() -> None:
    """Parquet refuses nulls in a required child even under a null parent: they get placeholders nobody sees."""
    conformed = conform_to_schema(pa.table({"id": pa.array([1, 2], pa.int64())}), NESTED)
    read = _written_and_read(conformed)
    assert read.column("point").to_pylist() == [None, None]
    assert read.column("items").to_pylist() == [None, None]


def test_null_structs_beside_present_ones_keep_their_values_and_nulls() -> None:
    target = file_arrow_schema(NESTED)
    point_type = target.field("point").type
    x = pa.array([10, None, 30], pa.int32())  # the null lies under the null struct of row 2
    at = pa.StructArray.from_arrays([pa.array([0, None, 2], pa.date32())], fields=list(point_type.field("at").type))
    tag = pa.array([b"a" * 16, None, b"c" * 16], point_type.field("tag").type.storage_type)
    tag = (
        pa.ExtensionArray.from_storage(point_type.field("tag").type, tag)
        if isinstance(point_type.field("tag").type, pa.BaseExtensionType)
        else tag
    )
    point = pa.StructArray.from_arrays([x, at, tag], fields=list(point_type), mask=pa.array([False, True, False]))
    item_type = target.field("items").type
    element = pa.StructArray.from_arrays(
        [pa.array([None, 1], item_type.value_type.field("d").type)],
        fields=list(item_type.value_type),
        mask=pa.array([True, False]),
    )
    items = pa.LargeListArray.from_arrays(pa.array([0, 2, 2, 2], pa.int64()), element, type=item_type)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "point": point, "items": items})

    read = _written_and_read(conform_to_schema(data, NESTED))

    points = read.column("point").to_pylist()
    assert points[1] is None
    assert [p["x"] for p in (points[0], points[2])] == [10, 30]
    assert [p["at"]["day"].toordinal() for p in (points[0], points[2])] == [719163, 719165]
    assert read.column("items").to_pylist()[0] == [None, {"d": 1}]


def test_a_required_child_null_under_a_present_parent_still_fails_the_write() -> None:
    """Such rows are bad input the ingest refuses before writing; the conform step must not hide them."""
    target = file_arrow_schema(NESTED)
    point_type = target.field("point").type
    point = pa.nulls(1, point_type)
    x = pa.array([None], pa.int32())
    present = pa.StructArray.from_arrays(
        [x, point.field(1), point.field(2)], fields=list(point_type), mask=pa.array([False])
    )
    data = pa.table({"id": pa.array([1], pa.int64()), "point": present})
    with pytest.raises(pa.ArrowInvalid, match="non-nullable"):
        _written_and_read(conform_to_schema(data, NESTED))
