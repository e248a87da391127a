"""Schema evolution by field id: files written with an old schema, read with a newer read schema."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from spark_jobs.engine.parquet.opener import read_data_file
from spark_jobs.engine.parquet.schema_projection import constant_column, project_column
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.metrics import ScanMetrics
from tests.spark_jobs.engine.parquet.scan_contexts import scan_context


def _field(name: str, arrow_type: pa.DataType, field_id: int, nullable: bool = True) -> pa.Field:
    return pa.field(name, arrow_type, nullable=nullable, metadata={b"PARQUET:field_id": str(field_id).encode()})


def _write(tmp_path: Path, table: pa.Table, name: str = "old.parquet") -> DataFileSlice:
    path = tmp_path / name
    pq.write_table(table, path)
    size = path.stat().st_size
    return DataFileSlice(f"file:{path}", size, table.num_rows, 0, length=size)


def _read(data_file: DataFileSlice, read_schema: Schema, output_ids: list[int] | None = None, **kwargs) -> pa.Table:
    output_ids = output_ids or [field.field_id for field in read_schema.fields]
    context = scan_context(read_schema, output_ids, **kwargs)
    batches = list(read_data_file(data_file, context, metrics=ScanMetrics()))
    return pa.Table.from_batches(batches, schema=context.output_schema)


def test_renamed_reordered_added_and_readded_columns_resolve_by_field_id(tmp_path: Path) -> None:
    old = pa.table(
        [pa.array([1, 2, 3], pa.int32()), pa.array(["a", "b", "c"]), pa.array([10, 20, 30], pa.int64())],
        schema=pa.schema([_field("id", pa.int32(), 1), _field("name", pa.string(), 2), _field("c", pa.int64(), 3)]),
    )
    data_file = _write(tmp_path, old)
    # "name" renamed to "label"; "c" dropped and re-added with a new id 5; "added" new with id 4; order changed.
    read_schema = Schema(
        NestedField(4, "added", LongType(), required=False),
        NestedField(2, "label", StringType(), required=False),
        NestedField(5, "c", LongType(), required=False),
        NestedField(1, "id", LongType(), required=True),
    )
    result = _read(data_file, read_schema)
    assert result.column_names == ["added", "label", "c", "id"]
    assert result.column("added").to_pylist() == [None, None, None]
    assert result.column("label").to_pylist() == ["a", "b", "c"]
    assert result.column("c").to_pylist() == [None, None, None]  # old values of the dropped column never reappear
    assert result.column("id").type == pa.int64()
    assert result.column("id").to_pylist() == [1, 2, 3]


def test_added_column_reads_its_initial_default(tmp_path: Path) -> None:
    data_file = _write(tmp_path, pa.table([pa.array([1, 2])], schema=pa.schema([_field("id", pa.int64(), 1)])))
    read_schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "level", IntegerType(), required=True, initial_default=7),
        NestedField(3, "tag", StringType(), required=False, initial_default="none"),
    )
    result = _read(data_file, read_schema)
    assert result.column("level").to_pylist() == [7, 7]
    assert result.column("tag").to_pylist() == ["none", "none"]


def test_required_column_missing_without_default_names_the_field(tmp_path: Path) -> None:
    data_file = _write(tmp_path, pa.table([pa.array([1])], schema=pa.schema([_field("id", pa.int64(), 1)])))
    read_schema = Schema(NestedField(1, "id", LongType()), NestedField(9, "needed", LongType(), required=True))
    with pytest.raises(CorruptFileError, match="needed"):
        _read(data_file, read_schema)


def test_type_promotions(tmp_path: Path) -> None:
    old = pa.table(
        [
            pa.array([1, -2], pa.int32()),
            pa.array([1.5, float("nan")], pa.float32()),
            pa.array([Decimal("1.25"), Decimal("-3.10")], pa.decimal128(5, 2)),
        ],
        schema=pa.schema(
            [_field("i", pa.int32(), 1), _field("f", pa.float32(), 2), _field("d", pa.decimal128(5, 2), 3)]
        ),
    )
    data_file = _write(tmp_path, old)
    read_schema = Schema(
        NestedField(1, "i", LongType(), required=False),
        NestedField(2, "f", DoubleType(), required=False),
        NestedField(3, "d", DecimalType(12, 2), required=False),
    )
    result = _read(data_file, read_schema)
    assert result.schema.field("i").type == pa.int64()
    assert result.schema.field("f").type == pa.float64()
    assert result.schema.field("d").type == pa.decimal128(12, 2)
    assert result.column("i").to_pylist() == [1, -2]
    assert result.column("f").to_pylist()[0] == 1.5
    assert np.isnan(result.column("f").to_pylist()[1])
    assert result.column("d").to_pylist() == [Decimal("1.25"), Decimal("-3.10")]


def test_nested_struct_with_added_field_and_null_struct(tmp_path: Path) -> None:
    point_type = pa.struct([_field("x", pa.int32(), 11)])
    old = pa.table(
        [pa.array([{"x": 1}, None, {"x": 3}], point_type)], schema=pa.schema([_field("point", point_type, 10)])
    )
    data_file = _write(tmp_path, old)
    read_schema = Schema(
        NestedField(
            10,
            "point",
            StructType(
                NestedField(12, "y", IntegerType(), required=False),
                NestedField(11, "x", LongType(), required=False),
            ),
            required=False,
        )
    )
    result = _read(data_file, read_schema)
    assert result.column("point").to_pylist() == [{"y": None, "x": 1}, None, {"y": None, "x": 3}]


def test_list_of_structs_keeps_null_lists_and_projects_elements(tmp_path: Path) -> None:
    element_type = pa.struct([_field("a", pa.int32(), 3)])
    list_type = pa.list_(_field("element", element_type, 2))
    old = pa.table(
        [pa.array([[{"a": 1}, {"a": 2}], None, [], [{"a": 4}]], list_type)],
        schema=pa.schema([_field("items", list_type, 1)]),
    )
    data_file = _write(tmp_path, old)
    read_schema = Schema(
        NestedField(
            1,
            "items",
            ListType(
                2,
                StructType(
                    NestedField(3, "a", LongType(), required=False), NestedField(4, "b", StringType(), required=False)
                ),
                element_required=False,
            ),
            required=False,
        )
    )
    result = _read(data_file, read_schema)
    assert result.column("items").to_pylist() == [
        [{"a": 1, "b": None}, {"a": 2, "b": None}],
        None,
        [],
        [{"a": 4, "b": None}],
    ]


def test_map_with_struct_values_keeps_null_maps(tmp_path: Path) -> None:
    value_type = pa.struct([_field("v", pa.int32(), 4)])
    map_type = pa.map_(_field("key", pa.string(), 2, nullable=False), _field("value", value_type, 3))
    old = pa.table(
        [pa.array([[("k", {"v": 1})], None, [("a", None)]], map_type)], schema=pa.schema([_field("m", map_type, 1)])
    )
    data_file = _write(tmp_path, old)
    read_schema = Schema(
        NestedField(
            1,
            "m",
            MapType(
                2,
                StringType(),
                3,
                StructType(
                    NestedField(4, "v", LongType(), required=False), NestedField(5, "w", LongType(), required=False)
                ),
                value_required=False,
            ),
            required=False,
        )
    )
    result = _read(data_file, read_schema)
    assert result.column("m").to_pylist() == [[("k", {"v": 1, "w": None})], None, [("a", None)]]


def test_primitive_types_time_uuid_fixed_binary_and_timestamps(tmp_path: Path) -> None:
    some_uuid = uuid.UUID("12345678-1234-5678-1234-567812345678")
    old = pa.table(
        [
            pa.array([1_000_000], pa.timestamp("us", tz="UTC")),
            pa.array([2_000], pa.timestamp("ms")),
            pa.array([3_000_000], pa.time64("us")),
            pa.array([some_uuid.bytes], pa.binary(16)),
            pa.array([b"abc"], pa.binary(3)),
            pa.array([b"\x00\x01"], pa.binary()),
            pa.array([19000], pa.date32()),
        ],
        schema=pa.schema(
            [
                _field("tz", pa.timestamp("us", tz="UTC"), 1),
                _field("ts", pa.timestamp("ms"), 2),
                _field("t", pa.time64("us"), 3),
                _field("u", pa.binary(16), 4),
                _field("fx", pa.binary(3), 5),
                _field("b", pa.binary(), 6),
                _field("d", pa.date32(), 7),
            ]
        ),
    )
    data_file = _write(tmp_path, old)
    read_schema = Schema(
        NestedField(1, "tz", TimestamptzType(), required=False),
        NestedField(2, "ts", TimestampType(), required=False),
        NestedField(3, "t", TimeType(), required=False),
        NestedField(4, "u", UUIDType(), required=False),
        NestedField(5, "fx", FixedType(3), required=False),
        NestedField(6, "b", BinaryType(), required=False),
        NestedField(7, "d", DateType(), required=False),
    )
    result = _read(data_file, read_schema)
    assert result.schema.field("tz").type == pa.timestamp("us", tz="UTC")
    assert result.schema.field("ts").type == pa.timestamp("us")
    assert result.column("tz").to_pylist() == [datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.UTC)]
    assert result.column("ts").to_pylist() == [datetime.datetime(1970, 1, 1, 0, 0, 2)]
    assert result.column("t").to_pylist() == [datetime.time(0, 0, 3)]
    assert result.column("u").to_pylist() == [some_uuid]
    assert result.column("fx").to_pylist() == [b"abc"]
    assert result.column("b").to_pylist() == [b"\x00\x01"]
    assert result.column("d").to_pylist() == [datetime.date(2022, 1, 8)]


def test_project_column_keeps_chunks_and_constant_column_types() -> None:
    read_field = NestedField(1, "i", LongType(), required=False)
    file_field = NestedField(1, "i", IntegerType(), required=False)
    chunked = pa.chunked_array([pa.array([1, None], pa.int32()), pa.array([3], pa.int32())])
    projected = project_column(read_field, file_field, chunked, 3, "test")
    assert projected.type == pa.int64()
    assert projected.num_chunks == 2
    assert projected.to_pylist() == [1, None, 3]
    assert constant_column(FloatType(), 1.5, 2).to_pylist() == [1.5, 1.5]
    assert constant_column(UUIDType(), uuid.UUID(int=5), 1).to_pylist() == [uuid.UUID(int=5)]
    assert constant_column(StringType(), None, 2).null_count == 2


@pytest.mark.parametrize("int96", [True, False])
def test_nanosecond_and_int96_timestamps_read_as_microseconds(tmp_path: Path, int96: bool) -> None:
    table = pa.table(
        [pa.array([1_500, 2_000_000], pa.timestamp("ns"))], schema=pa.schema([_field("t", pa.timestamp("ns"), 1)])
    )
    path = tmp_path / "ns.parquet"
    pq.write_table(table, path, use_deprecated_int96_timestamps=int96)
    data_file = DataFileSlice(f"file:{path}", path.stat().st_size, 2, 0)
    result = _read(data_file, Schema(NestedField(1, "t", TimestampType(), required=False)))
    assert result.schema.field("t").type == pa.timestamp("us")
    assert result.column("t").cast(pa.int64()).to_pylist() == [1, 2_000]
