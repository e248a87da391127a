"""Row-group pruning by statistics: counters move and results stay exact."""

from __future__ import annotations

import datetime
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import And, EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, NotEqualTo, NotNull
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, DoubleType, LongType, NestedField, StringType, TimestamptzType

from spark_jobs.engine.parquet.file_columns import file_leaf_columns
from spark_jobs.engine.parquet.opener import read_data_file
from spark_jobs.engine.parquet.row_group_filter import statistics_bounds
from spark_jobs.engine.shared.metrics import ScanMetrics
from tests.spark_jobs.engine.parquet.scan_contexts import scan_context


def _field(name: str, arrow_type: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, arrow_type, metadata={b"PARQUET:field_id": str(field_id).encode()})


def _read(data_file, schema: Schema, expression, output_ids=(1,)) -> tuple[pa.Table, ScanMetrics]:
    metrics = ScanMetrics()
    batches = list(read_data_file(data_file, scan_context(schema, output_ids, expression), metrics=metrics))
    return pa.Table.from_batches(batches) if batches else pa.table({}), metrics


def test_promoted_int_column_prunes_with_long_literals(write_data_file) -> None:
    table = pa.table([pa.array(np.arange(1000, dtype=np.int32))], schema=pa.schema([_field("x", pa.int32(), 1)]))
    data_file = write_data_file(table, row_group_size=100)
    schema = Schema(NestedField(1, "x", LongType(), required=False))
    result, metrics = _read(data_file, schema, And(GreaterThanOrEqual("x", 250), LessThan("x", 2**40)))
    assert result.column(0).to_pylist() == list(range(250, 1000))
    assert metrics.row_groups_pruned_by_statistics == 2
    result, metrics = _read(data_file, schema, GreaterThan("x", 2**35))
    assert result.num_rows == 0
    assert metrics.row_groups_pruned_by_statistics == 10


def test_nan_in_a_float_chunk_does_not_prune_not_equal(write_data_file) -> None:
    values = [1.0] * 50 + [float("nan")] + [1.0] * 49
    table = pa.table([pa.array(values)], schema=pa.schema([_field("f", pa.float64(), 1)]))
    data_file = write_data_file(table, row_group_size=50)
    schema = Schema(NestedField(1, "f", DoubleType(), required=False))
    result, _ = _read(data_file, schema, NotEqualTo("f", 1.0))
    assert result.num_rows == 1 and np.isnan(result.column(0)[0].as_py())
    result, metrics = _read(data_file, schema, GreaterThan("f", 1.0))
    assert result.num_rows == 0
    assert metrics.row_groups_pruned_by_statistics == 2


def test_decimal_timestamp_string_and_null_counts(write_data_file) -> None:
    timestamps = pa.array(np.arange(300, dtype=np.int64) * 1_000_000, pa.timestamp("us", tz="UTC"))
    table = pa.table(
        [
            pa.array([Decimal(i).scaleb(-2) for i in range(300)], pa.decimal128(9, 2)),
            timestamps,
            pa.array([f"k{i:03d}" for i in range(300)]),
            pa.array([None] * 100 + list(range(200)), pa.int64()),
        ],
        schema=pa.schema(
            [
                _field("d", pa.decimal128(9, 2), 1),
                _field("t", pa.timestamp("us", tz="UTC"), 2),
                _field("s", pa.string(), 3),
                _field("n", pa.int64(), 4),
            ]
        ),
    )
    data_file = write_data_file(table, row_group_size=100)
    schema = Schema(
        NestedField(1, "d", DecimalType(9, 2), required=False),
        NestedField(2, "t", TimestamptzType(), required=False),
        NestedField(3, "s", StringType(), required=False),
        NestedField(4, "n", LongType(), required=False),
    )
    cases = [
        (GreaterThanOrEqual("d", Decimal("2.50")), 50, 2),
        (LessThan("t", datetime.datetime(1970, 1, 1, 0, 1, 40, tzinfo=datetime.UTC).isoformat()), 100, 2),
        (EqualTo("s", "k150"), 1, 2),
        (NotNull("n"), 200, 1),
    ]
    for expression, expected_rows, expected_pruned in cases:
        result, metrics = _read(data_file, schema, expression)
        assert result.num_rows == expected_rows, expression
        assert metrics.row_groups_pruned_by_statistics == expected_pruned, expression


def test_int96_and_repeated_columns_give_no_bounds(tmp_path) -> None:
    path = tmp_path / "legacy.parquet"
    table = pa.table(
        [pa.array([1, 2], pa.timestamp("ns")), pa.array([[1], [2]], pa.list_(pa.int32()))],
        schema=pa.schema(
            [_field("t", pa.timestamp("ns"), 1), _field("l", pa.list_(_field("element", pa.int32(), 3)), 2)]
        ),
    )
    pq.write_table(table, path, use_deprecated_int96_timestamps=True)
    parquet_file = pq.ParquetFile(path)
    leaves = file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)
    assert leaves[0].physical_type == "INT96"
    bounds = statistics_bounds(parquet_file.metadata.row_group(0), leaves[0])
    assert bounds is None or (bounds.lower is None and bounds.upper is None)
    assert leaves[1].is_repeated and leaves[1].field_id == 3
    assert statistics_bounds(parquet_file.metadata.row_group(0), leaves[1]) is None


def test_conjuncts_proven_by_statistics_are_not_evaluated(write_data_file) -> None:
    table = pa.table(
        [pa.array(np.arange(1000, dtype=np.int64)), pa.array(np.arange(1000, dtype=np.int64) % 7)],
        schema=pa.schema([_field("x", pa.int64(), 1), _field("y", pa.int64(), 2)]),
    )
    data_file = write_data_file(table, row_group_size=100)
    schema = Schema(NestedField(1, "x", LongType(), required=True), NestedField(2, "y", LongType(), required=True))
    metadata = pq.read_metadata(data_file.path.removeprefix("file:"))
    _read(data_file, schema, GreaterThanOrEqual("x", 300))  # warm the footer cache: bytes_read counts columns only
    # x >= 300 holds for every row of row groups 3..9 and prunes 0..2, so x is never read: only y is.
    result, metrics = _read(data_file, schema, GreaterThanOrEqual("x", 300), output_ids=(2,))
    assert result.column(0).to_pylist() == [value % 7 for value in range(300, 1000)]
    assert metrics.rows_pruned_by_late_materialization == 0
    assert metrics.bytes_read == sum(metadata.row_group(rg).column(1).total_compressed_size for rg in range(3, 10))
