"""The live files an ingest touches, found through the read planner: pruned by the batch's keys, with partitions,
deletes and row positions; an overwrite filter's files and kept rows; a dynamic overwrite's partitions."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.expressions import AlwaysFalse, AlwaysTrue
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.ingest.live_files import (
    files_in_partitions,
    files_that_may_hold_keys,
    key_range_filter,
    key_scan_context,
    keys_decide_partition,
    partitions_of,
    range_key_columns,
    rows_to_keep,
)
from spark_jobs.engine.read.task_scan import read_slice, read_tasks_to_table
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import (
    WriteContext,
    write_data,
    write_equality_delete_rows,
    write_position_delete_rows,
)

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "part", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="part"))


@pytest.fixture
def table(sql_catalog) -> Table:
    """Three data files: ids 0-9 in a, 10-19 in b, 20-29 in a; position 3 of the first file deleted."""
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    for part, start in (("a", 0), ("b", 10), ("a", 20)):
        rows = pa.table({"id": pa.array(range(start, start + 10), pa.int64()), "part": [part] * 10})
        files = [to_data_file(f) for f in write_data(rows, WriteContext.for_table(table), f"{part}{start}")]
        commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
        table.refresh()
    first = _path_holding(table, 0)
    positions = pa.table({"file_path": [first], "pos": pa.array([3], pa.int64())})
    deletes = write_position_delete_rows(positions, WriteContext.for_table(table), 0, ("a",), "deletes")
    commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=[to_data_file(f) for f in deletes]))
    table.refresh()
    return table


def _path_holding(table: Table, first_id: int) -> str:
    files = table.inspect.files()
    (path,) = [
        p
        for p, content, bounds in zip(
            files.column("file_path").to_pylist(),
            files.column("content").to_pylist(),
            files.column("lower_bounds").to_pylist(),
            strict=True,
        )
        if content == 0 and dict(bounds)[1] == first_id.to_bytes(8, "little")
    ]
    return path


def test_the_batch_key_range_prunes_files_and_keeps_partitions_and_deletes(table: Table) -> None:
    assert range_key_columns(SCHEMA.select("id", "part")) == ["id", "part"]
    files = files_that_may_hold_keys(table, ["id"], key_range_filter(["id"], [(2, 12)]), with_position_deletes=True)
    assert sorted(f.path for f in files) == sorted([_path_holding(table, 0), _path_holding(table, 10)])
    assert all(f.is_whole_file and not f.equality_deletes for f in files)
    by_path = {f.path: f for f in files}
    assert len(by_path[_path_holding(table, 0)].position_deletes) == 1
    assert partitions_of(files) == list(dict.fromkeys((0, f.partition) for f in files))
    assert {f.partition for f in files} == {("a",), ("b",)}
    bare = files_that_may_hold_keys(table, ["id"], key_range_filter(["id"], [(2, 12)]), with_position_deletes=False)
    assert all(not f.has_deletes for f in bare)
    assert files_that_may_hold_keys(table, ["id"], key_range_filter(["id"], None), with_position_deletes=True) == []


def test_the_batch_keys_keep_only_files_whose_bounds_hold_one(table: Table) -> None:
    """Keys 5 and 25 lie in the range of all three files, but in the bounds of the first and the last only."""
    key_range = key_range_filter(["id"], [(5, 25)])
    keys = pa.table({"id": pa.array([25, 5, None, 5], pa.int64())})
    files = files_that_may_hold_keys(table, ["id"], key_range, with_position_deletes=True, batch_keys=keys)
    assert {f.path for f in files} == {_path_holding(table, 0), _path_holding(table, 20)}
    every = files_that_may_hold_keys(table, ["id"], key_range, with_position_deletes=True)
    assert len(every) == 3
    none = pa.table({"id": pa.array([30, 31], pa.int64())})
    assert files_that_may_hold_keys(table, ["id"], AlwaysTrue(), with_position_deletes=True, batch_keys=none) == []


def test_string_keys_prune_by_their_bounds_too(table: Table) -> None:
    keys = pa.table({"id": pa.array([12], pa.int64()), "part": pa.array(["b"], pa.string())})
    files = files_that_may_hold_keys(table, ["id", "part"], AlwaysTrue(), with_position_deletes=True, batch_keys=keys)
    assert [f.path for f in files] == [_path_holding(table, 10)]


def test_key_range_filters_without_bounded_columns_or_keys() -> None:
    assert key_range_filter([], None) == AlwaysTrue()
    assert key_range_filter(["id"], None) == AlwaysFalse()


def test_only_a_spec_of_key_columns_decides_a_keys_partition(table: Table) -> None:
    files = files_that_may_hold_keys(table, ["id"], AlwaysTrue(), with_position_deletes=True)
    assert not keys_decide_partition(table, ["id"], files)
    assert keys_decide_partition(table, ["part", "id"], files)


def test_key_columns_are_read_with_each_live_rows_position(table: Table) -> None:
    files = files_that_may_hold_keys(table, ["id"], key_range_filter(["id"], [(0, 5)]), with_position_deletes=True)
    (first,) = files
    rows = [
        row
        for batch in read_slice(first, key_scan_context(table, ["id"], files), ScanMetrics())
        for row in batch.to_pylist()
    ]
    assert rows == [{"id": i, "_pos": i} for i in range(10) if i != 3]


def test_rows_an_equality_delete_removed_are_not_matched_again_in_position_mode(table: Table) -> None:
    """A key upserted before with equality deletes has a dead copy in its old file: position mode must not read it
    (it would get a position deleted again and lend its ``_row_id`` to the row an upsert writes)."""
    keys = pa.table({"id": pa.array([12, 14], pa.int64())})
    deletes = write_equality_delete_rows(
        keys, WriteContext.for_table(table), key_names=["id"], spec_id=0, partition_values=("b",), task_tag="eq"
    )
    commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=[to_data_file(f) for f in deletes]))
    table.refresh()
    files = files_that_may_hold_keys(table, ["id"], key_range_filter(["id"], [(10, 15)]), with_position_deletes=True)
    (second,) = files
    assert len(second.equality_deletes) == 1
    rows = [
        row
        for batch in read_slice(second, key_scan_context(table, ["id"], files), ScanMetrics())
        for row in batch.to_pylist()
    ]
    assert rows == [{"id": i, "_pos": i - 10} for i in range(10, 20) if i not in (12, 14)]
    bare = files_that_may_hold_keys(table, ["id"], key_range_filter(["id"], [(10, 15)]), with_position_deletes=False)
    assert all(not f.equality_deletes for f in bare)


def test_an_overwrite_filter_removes_the_files_it_may_match_and_keeps_their_other_rows(table: Table) -> None:
    keep = rows_to_keep(table, "id >= 15 and id < 25")
    assert keep.removed_paths == {_path_holding(table, 10), _path_holding(table, 20)}
    kept = read_tasks_to_table(keep.tasks, keep.context, ScanMetrics())
    assert kept.column_names == ["id", "part"]
    assert sorted(kept.column("id").to_pylist()) == [*range(10, 15), *range(25, 30)]


def test_a_dynamic_overwrite_replaces_the_live_files_of_its_partitions(table: Table) -> None:
    assert files_in_partitions(table, {(0, ("a",))}) == {_path_holding(table, 0), _path_holding(table, 20)}
    assert files_in_partitions(table, {(0, ("c",))}) == set()
    assert files_in_partitions(table, set()) == set()
