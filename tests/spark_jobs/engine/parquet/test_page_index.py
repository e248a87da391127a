"""Page index pruning: ColumnIndex/OffsetIndex decoding, row selections, and exact results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, IsNull, LessThan, Or
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.parquet.file_columns import file_leaf_columns
from spark_jobs.engine.parquet.footer_cache import read_footer
from spark_jobs.engine.parquet.opener import read_data_file
from spark_jobs.engine.parquet.page_index import page_index_locations, read_column_pages
from spark_jobs.engine.shared.metrics import ScanMetrics
from tests.spark_jobs.engine.parquet.scan_contexts import scan_context


def _field(name: str, arrow_type: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, arrow_type, metadata={b"PARQUET:field_id": str(field_id).encode()})


SCHEMA = Schema(
    NestedField(1, "k", LongType(), required=False),
    NestedField(2, "noise", LongType(), required=False),
    NestedField(3, "s", StringType(), required=False),
)


def _table(rows: int = 2000) -> pa.Table:
    keys = np.arange(rows, dtype=np.int64)
    noise = np.random.default_rng(7).integers(0, 1000, rows)
    strings = [None if i % 97 == 0 else f"s{i:05d}" for i in range(rows)]
    return pa.table(
        [pa.array(keys), pa.array(noise), pa.array(strings)],
        schema=pa.schema([_field("k", pa.int64(), 1), _field("noise", pa.int64(), 2), _field("s", pa.string(), 3)]),
    )


def _write_options() -> dict:
    return {"row_group_size": 1000, "write_page_index": True, "max_rows_per_page": 100, "use_dictionary": False}


def test_column_and_offset_index_decode_per_page(tmp_path: Path) -> None:
    path = tmp_path / "pages.parquet"
    pq.write_table(_table(), path, **_write_options())
    with pa.OSFile(str(path)) as stream:
        footer, _ = read_footer(stream, str(path), path.stat().st_size)
        leaves = file_leaf_columns(footer.metadata.schema, footer.metadata.schema.to_arrow_schema())
        location = page_index_locations(footer)[1][0]
        pages, bytes_read = read_column_pages(stream, location, leaves[0], 1000, str(path))
    assert bytes_read > 0
    assert pages.first_rows.tolist() == list(range(0, 1000, 100))
    assert pages.row_counts.tolist() == [100] * 10
    assert [(bounds.lower, bounds.upper) for bounds in pages.bounds][:2] == [(1000, 1099), (1100, 1199)]
    assert all(bounds.null_count == 0 for bounds in pages.bounds)


def _read(data_file, expression) -> tuple[list[int], ScanMetrics]:
    metrics = ScanMetrics()
    batches = read_data_file(data_file, scan_context(SCHEMA, [1], expression), metrics=metrics)
    return [value for batch in batches for value in batch.column(0).to_pylist()], metrics


def test_page_index_selects_rows_and_keeps_results_exact(write_data_file) -> None:
    data_file = write_data_file(_table(), **_write_options())
    rows, metrics = _read(data_file, And(GreaterThanOrEqual("k", 1250), LessThan("k", 1420)))
    assert rows == list(range(1250, 1420))
    assert metrics.row_groups_pruned_by_statistics == 1
    assert metrics.pages_total == 10
    assert metrics.pages_pruned_by_page_index == 7  # pages 1200, 1300 and 1400 stay
    assert metrics.rows_pruned_by_page_index == 700


def test_or_across_columns_with_different_page_boundaries(write_data_file) -> None:
    data_file = write_data_file(_table(), **_write_options())
    expression = Or(LessThan("k", 30), EqualTo("s", "s01500"))
    rows, metrics = _read(data_file, expression)
    assert rows == [*range(30), 1500]
    assert metrics.rows_pruned_by_page_index > 0
    rows, _ = _read(data_file, Or(IsNull("s"), EqualTo("k", 5)))
    assert rows == sorted({5, *range(0, 2000, 97)})


def test_page_index_skips_whole_row_groups_statistics_keep(write_data_file) -> None:
    # Values 0..999 and 5000..5999 in one row group: statistics keep it for k = 3000, pages do not.
    keys = np.concatenate([np.arange(1000), np.arange(5000, 6000)]).astype(np.int64)
    table = pa.table([pa.array(keys)], schema=pa.schema([_field("k", pa.int64(), 1)]))
    data_file = write_data_file(table, row_group_size=2000, write_page_index=True, max_rows_per_page=100)
    schema = Schema(NestedField(1, "k", LongType(), required=False))
    metrics = ScanMetrics()
    batches = list(read_data_file(data_file, scan_context(schema, [1], EqualTo("k", 3000)), metrics=metrics))
    assert batches == []
    assert metrics.row_groups_pruned_by_statistics == 0
    assert metrics.row_groups_pruned_by_page_index == 1
    assert metrics.rows_read == 0
