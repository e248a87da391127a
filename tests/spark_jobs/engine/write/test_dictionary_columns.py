"""Dictionary columns: a dictionary where it is smaller than the plain values, Arrow's default on nested leaves."""

from __future__ import annotations

import io
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

from spark_jobs.engine.write.dictionary_columns import SAMPLE_ROWS, dictionary_columns

LIMIT = 2 << 20


def _leaf_paths(table: pa.Table) -> list[str]:
    """The leaf column paths of ``table`` written as Parquet by Arrow."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    schema = pq.ParquetFile(io.BytesIO(buffer.getvalue())).schema
    return [schema.column(index).path for index in range(len(schema))]


def test_repeated_values_keep_a_dictionary_and_distinct_values_do_not() -> None:
    count = 20_000
    rows = pa.table(
        {
            "id": pa.array(range(count), pa.int64()),
            "price": pa.array([i * 1.37 for i in range(count)], pa.float64()),
            "note": [f"note-{i}" for i in range(count)],
            "cat": [("alpha", "beta", "gamma")[i % 3] for i in range(count)],
            "qty": pa.array([i % 500 for i in range(count)], pa.int32()),
            "amount": pa.array([Decimal(i % 40) / 4 for i in range(count)], pa.decimal128(18, 4)),
            "flag": [i % 2 == 0 for i in range(count)],
            "empty": pa.nulls(count, pa.string()),
        }
    )
    assert dictionary_columns(rows, LIMIT) == ["cat", "qty", "amount", "empty"]


def test_a_dictionary_larger_than_the_page_limit_is_not_chosen() -> None:
    # Each value repeats 4 times (a dictionary would be smaller); the distinct values take 16,384 x 210 bytes.
    rows = pa.table({"text": [f"{i // 4:06d}" + "x" * 200 for i in range(SAMPLE_ROWS)]})
    assert dictionary_columns(rows, 4 << 20) == ["text"]
    assert dictionary_columns(rows, 3 << 20) == []


def test_only_the_first_rows_are_judged() -> None:
    repeated = [7] * SAMPLE_ROWS
    rows = pa.table({"n": pa.array(repeated + list(range(SAMPLE_ROWS)), pa.int64())})
    assert dictionary_columns(rows, LIMIT) == ["n"]
    assert dictionary_columns(rows.slice(SAMPLE_ROWS), LIMIT) == []


def test_nested_columns_keep_a_dictionary_on_every_parquet_leaf() -> None:
    rows = pa.table(
        {
            "s": pa.array([{"a": 1, "b.c": "x"}]),
            "l": pa.array([[1, 2]]),
            "m": pa.array([[("k", 1.0)]], pa.map_(pa.string(), pa.float64())),
            "ls": pa.array([[{"x": [1]}]]),
            "f": pa.array([1.5]),
        }
    )
    leaves = _leaf_paths(rows)
    assert dictionary_columns(rows, LIMIT) == [path for path in leaves if path != "f"]
    assert "m.key_value.value" in leaves and "ls.list.element.x.list.element" in leaves
