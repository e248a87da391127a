"""A commit refuses delete files scoped to a data file of another partition, naming both files, and leaves the table
and the storage as they were; deletes in the data file's own partition commit as before."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data, write_position_delete_rows

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "category", StringType()))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))


@pytest.fixture
def table(sql_catalog):
    """A format v2 table partitioned by category, holding one data file in partition a."""
    sql_catalog.create_namespace("ns")
    created = sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "category": ["a"] * 3})
    files = [to_data_file(item) for item in write_data(rows, WriteContext.for_table(created), "t0")]
    commit_change(created, SnapshotChange(Operation.APPEND, added_data_files=files))
    return created


def _file_scoped_deletes(table, partition: tuple) -> list:
    data_file = next(iter(table.scan().plan_files())).file
    deletes = pa.table({"file_path": [data_file.file_path], "pos": pa.array([0], pa.int64())})
    written = write_position_delete_rows(deletes, WriteContext.for_table(table), data_file.spec_id, partition, "d")
    return [to_data_file(item) for item in written]


def test_a_delete_file_naming_a_data_file_of_another_partition_is_refused_naming_both(table):
    before = table.metadata.current_snapshot_id
    (wrong,) = _file_scoped_deletes(table, ("b",))
    data_path = next(iter(table.scan().plan_files())).file.file_path
    with pytest.raises(CorruptFileError) as raised:
        commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=[wrong]))
    assert wrong.file_path in str(raised.value) and data_path in str(raised.value)
    assert "partition tuples" in str(raised.value)
    assert table.refresh().metadata.current_snapshot_id == before
    assert not Path(wrong.file_path.removeprefix("file://")).exists()  # the refused commit's file is gone


def test_a_delete_file_in_the_data_files_partition_commits(table):
    (right,) = _file_scoped_deletes(table, ("a",))
    result = commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=[right]))
    assert result.summary["added-position-deletes"] == "1"
