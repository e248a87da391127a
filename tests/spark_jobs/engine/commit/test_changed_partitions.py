"""The partitions a committed snapshot changed, read back from its manifests (real SQLite catalog, files written
and committed by the engine's writer and committer)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.transforms import DayTransform, HourTransform, IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

from spark_jobs.engine.commit.changed_partitions import changed_partitions
from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data
from spark_jobs.job_contract import PARTITION_CHANGE_FIELDS

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "ts", TimestamptzType(), required=False),
)
UTC = dt.UTC


def _rows(ids: list[int], categories: list[str | None], days: list[int], hour: int = 0) -> pa.Table:
    stamps = [dt.datetime(2024, 1, day, hour, 30, tzinfo=UTC) for day in days]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "category": pa.array(categories, pa.string()),
            "ts": pa.array(stamps, pa.timestamp("us", tz="UTC")),
        }
    )


def _append(table, data: pa.Table, tag: str = "t") -> list:
    """Write ``data`` into ``table`` and commit it as an append; the data files it added."""
    files = [to_data_file(item) for item in write_data(data, WriteContext.for_table(table), tag)]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    return files


def _changes(table) -> dict[str, dict]:
    table = table.refresh()
    return {change["partition"]: change for change in changed_partitions(table, table.current_snapshot())}


def test_an_append_names_each_partition_it_wrote_as_its_partition_path(sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    spec = PartitionSpec(
        PartitionField(source_id=3, field_id=1000, transform=DayTransform(), name="ts_day"),
        PartitionField(source_id=2, field_id=1001, transform=IdentityTransform(), name="category"),
    )
    table = sql_catalog.create_table("ns.t", SCHEMA, partition_spec=spec)
    _append(table, _rows([1, 2, 3, 4], ["a b/c", "a b/c", None, "x"], [5, 5, 5, 6]))
    changes = _changes(table)
    assert set(changes) == {
        "ts_day=2024-01-05/category=a+b%2Fc",
        "ts_day=2024-01-05/category=null",
        "ts_day=2024-01-06/category=x",
    }
    first = changes["ts_day=2024-01-05/category=a+b%2Fc"]
    assert set(first) == PARTITION_CHANGE_FIELDS
    assert (first["spec_id"], first["data_files_added"], first["rows_added"], first["data_files_removed"]) == (
        0,
        1,
        2,
        0,
    )
    # The next append changes only its own partitions.
    _append(table.refresh(), _rows([5], ["x"], [6]), "t2")
    assert list(_changes(table)) == ["ts_day=2024-01-06/category=x"]


def test_files_a_snapshot_removed_count_in_their_partitions(sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))
    table = sql_catalog.create_table("ns.t", SCHEMA, partition_spec=spec)
    files = _append(table, _rows([1, 2, 3], ["a", "a", "b"], [1, 1, 1]))
    removed = {f.file_path for f in files if f.partition[0] == "a"}
    commit_change(table.refresh(), SnapshotChange(Operation.DELETE, removed_data_file_paths=removed))
    changes = _changes(table)
    assert list(changes) == ["category=a"]
    assert (changes["category=a"]["data_files_removed"], changes["category=a"]["rows_removed"]) == (1, 2)
    assert changes["category=a"]["data_files_added"] == 0


def test_hours_an_unpartitioned_table_and_an_evolved_spec(sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    plain = sql_catalog.create_table("ns.plain", SCHEMA)
    _append(plain, _rows([1], ["a"], [1]))
    assert list(_changes(plain)) == [""]

    spec = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=HourTransform(), name="ts_hour"))
    table = sql_catalog.create_table("ns.hourly", SCHEMA, partition_spec=spec)
    _append(table, _rows([1, 2], ["a", "b"], [7, 7], hour=13))
    assert list(_changes(table)) == ["ts_hour=2024-01-07-13"]
    with table.update_spec() as update:
        update.add_identity("category")
    _append(table.refresh(), _rows([3], ["c"], [8], hour=1), "t2")
    (change,) = _changes(table).values()
    assert (change["partition"], change["spec_id"]) == ("ts_hour=2024-01-08-01/category=c", 1)
