"""Decoding row groups on demand: field paths through structs, constants never read, counters."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, StructType

from spark_jobs.engine.parquet.file_columns import file_leaf_columns
from spark_jobs.engine.parquet.row_group_reader import FieldPath, FileColumnResolver, RowGroupColumns, field_paths
from spark_jobs.engine.parquet.schema_projection import file_schema_of
from spark_jobs.engine.shared.metrics import ScanMetrics


def _field(name: str, arrow_type: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, arrow_type, metadata={b"PARQUET:field_id": str(field_id).encode()})


READ_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(
        2,
        "point",
        StructType(
            NestedField(3, "x", DoubleType(), required=False), NestedField(4, "y", DoubleType(), required=False)
        ),
        required=False,
    ),
    NestedField(5, "region", StringType(), required=False),
)


def test_field_paths_walk_structs() -> None:
    assert field_paths(READ_SCHEMA) == {
        1: FieldPath(1),
        2: FieldPath(2),
        3: FieldPath(2, (0,)),
        4: FieldPath(2, (1,)),
        5: FieldPath(5),
    }


def test_columns_load_once_nested_children_inherit_nulls_and_constants_are_not_read(tmp_path) -> None:
    point_type = pa.struct([_field("x", pa.float64(), 3), _field("y", pa.float64(), 4)])
    table = pa.table(
        [
            pa.array([1, 2, 3]),
            pa.array([{"x": 1.0, "y": 2.0}, None, {"x": 5.0, "y": None}], point_type),
            ["a", "b", "c"],
        ],
        schema=pa.schema(
            [_field("id", pa.int64(), 1), _field("point", point_type, 2), _field("region", pa.string(), 5)]
        ),
    )
    path = tmp_path / "r.parquet"
    pq.write_table(table, path)
    parquet_file = pq.ParquetFile(path)
    leaves = file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)
    resolver = FileColumnResolver(READ_SCHEMA, file_schema_of(parquet_file.schema_arrow, str(path)), leaves, {5: "eu"})
    metrics = ScanMetrics()
    columns = RowGroupColumns(parquet_file, [0], resolver, metrics, str(path))

    columns.load([2])
    point_bytes = metrics.bytes_read
    assert point_bytes == sum(parquet_file.metadata.row_group(0).column(i).total_compressed_size for i in (1, 2))
    assert columns.field_column(3).to_pylist() == [1.0, None, 5.0]  # NULL struct -> NULL child
    assert columns.field_column(4).to_pylist() == [2.0, None, None]
    columns.load([2, 5])
    assert metrics.bytes_read == point_bytes  # the struct is not read again; the constant never is
    assert columns.field_column(5).to_pylist() == ["eu", "eu", "eu"]
    assert metrics.rows_read == 3
    assert resolver.top_level_ids([3, 5]) == {2, 5}


def test_a_run_of_row_groups_is_read_as_one_column_each(tmp_path) -> None:
    table = pa.table(
        [pa.array(range(10)), pa.array([f"r{i}" for i in range(10)])],
        schema=pa.schema([_field("id", pa.int64(), 1), _field("region", pa.string(), 5)]),
    )
    path = tmp_path / "run.parquet"
    pq.write_table(table, path, row_group_size=4)
    parquet_file = pq.ParquetFile(path)
    leaves = file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)
    resolver = FileColumnResolver(READ_SCHEMA, file_schema_of(parquet_file.schema_arrow, str(path)), leaves, {})
    metrics = ScanMetrics()
    columns = RowGroupColumns(parquet_file, [1, 2], resolver, metrics, str(path))

    columns.load([1, 5])

    assert columns.num_rows == 6
    assert columns.field_column(1).to_pylist() == list(range(4, 10))
    assert columns.field_column(5).to_pylist() == [f"r{i}" for i in range(4, 10)]
    assert metrics.rows_read == 6
    metadata = parquet_file.metadata
    assert metrics.bytes_read == sum(
        metadata.row_group(group).column(column).total_compressed_size for group in (1, 2) for column in (0, 1)
    )
