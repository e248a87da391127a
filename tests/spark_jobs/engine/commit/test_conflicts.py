"""Validation of the commits that landed after a change was planned, on a real SQLite catalog and real files."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.conflicts import validate_concurrent_commits
from spark_jobs.engine.commit.producer import CommitConflictError
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data, write_position_delete_rows

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "part", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="part"))


def _table(sql_catalog) -> Table:
    sql_catalog.create_namespace("ns")
    return sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})


def _data_files(table: Table, part: str, ids: list[int], tag: str) -> list:
    rows = pa.table({"id": pa.array(ids, pa.int64()), "part": pa.array([part] * len(ids))})
    return [to_data_file(f) for f in write_data(rows, WriteContext.for_table(table), tag)]


def _append(table: Table, part: str, ids: list[int], tag: str) -> list:
    files = _data_files(table, part, ids, tag)
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    table.refresh()
    return files


def test_a_pure_append_is_never_refused(sql_catalog) -> None:
    table = _table(sql_catalog)
    _append(table, "a", [1], "first")
    start = table.current_snapshot().snapshot_id
    _append(table, "a", [2], "concurrent")
    validate_concurrent_commits(table, SnapshotChange(Operation.APPEND, _data_files(table, "a", [3], "mine")), start)


def test_new_data_in_a_partition_the_change_keeps_free_is_a_conflict(sql_catalog) -> None:
    table = _table(sql_catalog)
    _append(table, "a", [1], "first")
    start = table.current_snapshot().snapshot_id
    (concurrent,) = _append(table, "b", [2], "concurrent")
    mine = SnapshotChange(Operation.OVERWRITE, _data_files(table, "a", [3], "mine"))
    mine.no_new_data_in_partitions = {(0, ("a",))}
    validate_concurrent_commits(table, mine, start)  # partition b is not kept free
    mine.no_new_data_in_partitions = {(0, ("b",))}
    with pytest.raises(CommitConflictError, match=rf"added data file {concurrent.file_path} in a partition"):
        validate_concurrent_commits(table, mine, start)
    mine.no_new_data_in_partitions = None  # every partition
    with pytest.raises(CommitConflictError, match="commit aborted"):
        validate_concurrent_commits(table, mine, start)


def test_a_removed_data_file_gone_meanwhile_is_a_conflict(sql_catalog) -> None:
    table = _table(sql_catalog)
    (target,) = _append(table, "a", [1, 2], "first")
    start = table.current_snapshot().snapshot_id
    concurrent = SnapshotChange(Operation.OVERWRITE, removed_data_file_paths={target.file_path})
    concurrent.no_new_data_in_partitions = None
    commit_change(table, concurrent)
    table.refresh()
    positions = pa.table({"file_path": [target.file_path], "pos": pa.array([0], pa.int64())})
    deletes = write_position_delete_rows(positions, WriteContext.for_table(table), 0, ("a",), "mine")
    mine = SnapshotChange(Operation.DELETE, added_delete_files=[to_data_file(f) for f in deletes])
    mine.required_data_file_paths = {target.file_path}
    with pytest.raises(CommitConflictError, match=r"1 data file\(s\) this commit removes or deletes rows from"):
        validate_concurrent_commits(table, mine, start)


def test_new_position_deletes_for_a_file_the_change_removes_are_a_conflict(sql_catalog) -> None:
    table = _table(sql_catalog)
    (target,) = _append(table, "a", [1, 2], "first")
    (other,) = _append(table, "b", [3], "second")
    start = table.current_snapshot().snapshot_id
    positions = pa.table({"file_path": [other.file_path], "pos": pa.array([0], pa.int64())})
    deletes = write_position_delete_rows(positions, WriteContext.for_table(table), 0, ("b",), "concurrent")
    commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=[to_data_file(f) for f in deletes]))
    table.refresh()
    rewrite = SnapshotChange(Operation.REPLACE, removed_data_file_paths={target.file_path})
    rewrite.no_new_deletes_for_removed_files = True
    validate_concurrent_commits(table, rewrite, start)  # the deletes are for a file the rewrite keeps
    rewrite.removed_data_file_paths = {other.file_path}
    with pytest.raises(CommitConflictError, match=r"added position deletes .* for data files this commit removes"):
        validate_concurrent_commits(table, rewrite, start)


def test_a_start_that_is_no_longer_an_ancestor_is_a_conflict(sql_catalog) -> None:
    table = _table(sql_catalog)
    _append(table, "a", [1], "first")
    change = SnapshotChange(Operation.DELETE, required_data_file_paths=set())
    change.no_new_data_in_partitions = None
    with pytest.raises(CommitConflictError, match="no longer descends from snapshot 42"):
        validate_concurrent_commits(table, change, 42)
