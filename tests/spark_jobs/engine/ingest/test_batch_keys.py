"""A batch's keys in Arrow: their bounds, and the key scan's filter."""

from __future__ import annotations

import pyarrow as pa

from spark_jobs.engine.ingest.batch_keys import key_bounds, rows_with_keys


def test_bounds_of_each_column_and_none_without_keys() -> None:
    keys = pa.table({"id": pa.array([5, 2, 7], pa.int64()), "name": ["e", "b", "g"]})
    assert key_bounds(keys, ["id", "name"]) == [(2, 7), ("b", "g")]
    assert key_bounds(keys.slice(0, 0), ["id"]) is None


def test_only_rows_holding_a_batch_key_are_kept() -> None:
    rows = pa.record_batch(
        {
            "file_path": ["f"] * 6,
            "pos": pa.array(range(6), pa.int64()),
            "id": pa.array([1, 2, 3, 1, 2, 3], pa.int64()),
            "name": ["a", "a", "a", "b", "b", "b"],
        }
    )
    one_column = rows_with_keys(rows, pa.table({"id": pa.array([3, 1, 42], pa.int64())}))
    assert one_column.column("pos").to_pylist() == [0, 2, 3, 5]
    two_columns = rows_with_keys(
        rows, pa.table({"id": pa.array([1, 3], pa.int64()), "name": pa.array(["b", "a"], pa.string())})
    )
    assert sorted(two_columns.column("pos").to_pylist()) == [2, 3]
    assert two_columns.schema == pa.Table.from_batches([rows]).schema
    assert rows_with_keys(rows, pa.table({"id": pa.array([], pa.int64())})).num_rows == 0


def test_a_row_with_a_null_key_matches_no_batch_key() -> None:
    # Batch keys are never null (checked first); a table row's null key must not match, as in Spark's join.
    rows = pa.record_batch(
        {"pos": pa.array([0, 1, 2], pa.int64()), "id": pa.array([None, 1, None], pa.int64()), "name": [None, "a", "b"]}
    )
    assert rows_with_keys(rows, pa.table({"id": pa.array([1, 5], pa.int64())})).column("pos").to_pylist() == [1]
    both = pa.table({"id": pa.array([1, 5], pa.int64()), "name": pa.array(["a", "b"])})
    assert rows_with_keys(rows, both).column("pos").to_pylist() == [1]
