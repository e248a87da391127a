"""A batch's keys in Arrow: checked from their groups, their bounds, and the key scan's filter."""

from __future__ import annotations

import functools

import pyarrow as pa
import pytest

from spark_jobs.engine.ingest.batch_keys import (
    NULLS_PREFIX,
    ROWS_COLUMN,
    checked_batch_keys,
    key_bounds,
    rows_with_keys,
)
from spark_jobs.engine.shared.errors import UserInputError


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


def _groups(ids: list, rows: list[int], name_nulls: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            ROWS_COLUMN: pa.array(rows, pa.int64()),
            NULLS_PREFIX + "name": pa.array(name_nulls, pa.int64()),
        }
    )


def test_checked_groups_give_the_distinct_keys() -> None:
    groups = _groups([4, 1, 9], [1, 1, 1], [0, 0, 0])
    keys = checked_batch_keys(groups, ["id"], unique=True, required=["name"], table_name="db.t")
    assert keys.column_names == ["id"] and keys.column("id").to_pylist() == [4, 1, 9]


def test_checked_groups_raise_what_the_row_checks_raise_in_their_order() -> None:
    check = functools.partial(checked_batch_keys, key=["id"], required=["name"], table_name="db.t")
    with pytest.raises(UserInputError, match=r"source has nulls in column\(s\) table db.t requires: 'name' in 3 row"):
        check(_groups([1, None, 2], [2, 1, 1], [1, 0, 2]), unique=True)
    with pytest.raises(
        UserInputError, match=r"^4 source row\(s\) have a null in key column\(s\) \['id'\] \(table db.t\)"
    ):
        check(_groups([1, None, 2], [2, 4, 1], [0, 0, 0]), unique=True)
    with pytest.raises(UserInputError, match=r"^2 key value\(s\) of \['id'\] occur more than once in the upsert batch"):
        check(_groups([1, 3, 2], [2, 3, 1], [0, 0, 0]), unique=True)
    assert check(_groups([1, 3, 2], [2, 3, 1], [0, 0, 0]), unique=False).num_rows == 3  # a delete batch may repeat
