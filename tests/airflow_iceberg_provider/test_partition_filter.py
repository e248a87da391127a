"""A partition key back into a row filter: every partition of tables with every transform, read back through the
engine's reader with that filter, gives exactly the partition's rows (real SQLite catalog, files written and
committed by the engine)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from pyiceberg.types import (
    BooleanType,
    DateType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

from airflow_iceberg_provider.partition_filter import PartitionKeyError, parse_partition_key, partition_row_filter
from airflow_iceberg_provider.snapshot_watch import changed_partitions
from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "ts", TimestamptzType(), required=False),
    NestedField(4, "local_ts", TimestampType(), required=False),
    NestedField(5, "day", DateType(), required=False),
    NestedField(6, "flag", BooleanType(), required=False),
)
NAMES = ["a", "a/b", "it's", None, "null", "x=1 y", "abcdef", "abc", "abcdxyz", "a%b"]


def _rows() -> pa.Table:
    count = len(NAMES) * 3
    ids = list(range(count))
    base = dt.datetime(2023, 12, 31, 22, 30, tzinfo=dt.UTC)
    stamps = [None if i % 11 == 5 else base + dt.timedelta(hours=37 * i) for i in ids]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([NAMES[i % len(NAMES)] for i in ids], pa.string()),
            "ts": pa.array(stamps, pa.timestamp("us", tz="UTC")),
            "local_ts": pa.array([s.replace(tzinfo=None) if s else None for s in stamps], pa.timestamp("us")),
            "day": pa.array([s.date() if s else None for s in stamps], pa.date32()),
            "flag": pa.array([i % 3 == 0 for i in ids], pa.bool_()),
        }
    )


SPECS = {
    "identity_and_day": [(2, IdentityTransform(), "name"), (3, DayTransform(), "ts_day")],
    "hour_and_flag": [(4, HourTransform(), "local_hour"), (6, IdentityTransform(), "flag")],
    "month_and_year": [(5, MonthTransform(), "day_month"), (3, YearTransform(), "ts_year")],
    "truncate": [(1, TruncateTransform(10), "id_trunc"), (2, TruncateTransform(4), "name_trunc")],
    "identity_long_and_date": [(1, IdentityTransform(), "id"), (5, IdentityTransform(), "day")],
}


def _table(catalog, name: str, fields: list) -> object:
    spec = PartitionSpec(
        *(PartitionField(source_id=s, field_id=1000 + i, transform=t, name=n) for i, (s, t, n) in enumerate(fields))
    )
    table = catalog.create_table(f"ns.{name}", SCHEMA, partition_spec=spec)
    files = [to_data_file(item) for item in write_data(_rows(), WriteContext.for_table(table), "t")]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    return table.refresh()


def _ids(catalog, table, row_filter: str | None) -> set[int]:
    name = ".".join(table.name())
    return set(open_read_session(catalog, name, row_filter=row_filter).to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("spec_name", sorted(SPECS))
def test_each_partition_reads_back_exactly_its_rows(sql_catalog, spec_name: str) -> None:
    sql_catalog.create_namespace_if_not_exists("ns")
    table = _table(sql_catalog, spec_name, SPECS[spec_name])
    keys = [change["partition"] for change in changed_partitions(table, table.current_snapshot())]
    assert set(keys) == {path for path, _ in _files_by_partition(table)} and len(set(keys)) >= 3
    covered: set[int] = set()
    # A null string and the string 'null' have one path text (Iceberg's): one key, whose filter reads both.
    for key in dict.fromkeys(keys):
        found = partition_row_filter(table, key)
        assert found.uncovered == ()
        ids = _ids(sql_catalog, table, found.row_filter)
        expected = _ids_of_partition(table, key)
        assert ids == expected, (key, found.row_filter)
        assert not ids & covered  # partitions do not overlap
        covered |= ids
    assert covered == set(range(_rows().num_rows))


def _files_by_partition(table) -> list[tuple[str, str]]:
    """(partition path, data file path) of every live data file."""
    spec_of = table.specs()
    return [
        (spec_of[task.file.spec_id].partition_to_path(task.file.partition, table.schema()), task.file.file_path)
        for task in table.scan().plan_files()
    ]


def _ids_of_partition(table, key: str) -> set[int]:
    """The ids in the data files of the partition ``key`` names, read by pyarrow file by file."""
    import pyarrow.parquet as pq

    ids: set[int] = set()
    for path, file_path in _files_by_partition(table):
        if path == key:
            ids |= set(pq.read_table(file_path.removeprefix("file://"), columns=["id"])["id"].to_pylist())
    return ids


def test_bucket_fields_are_named_as_not_covered(sql_catalog) -> None:
    sql_catalog.create_namespace_if_not_exists("ns")
    table = _table(sql_catalog, "bucketed", [(2, IdentityTransform(), "name"), (1, BucketTransform(4), "id_bucket")])
    found = partition_row_filter(table, "name=a/id_bucket=3")
    assert (found.row_filter, found.uncovered) == ("name = 'a'", ("id_bucket",))


def test_a_key_of_no_spec_or_of_another_shape_is_named(sql_catalog) -> None:
    sql_catalog.create_namespace_if_not_exists("ns")
    table = _table(sql_catalog, "named", SPECS["identity_and_day"])
    with pytest.raises(PartitionKeyError, match=r"names fields \['ts_day'\] that no partition spec of ns.named"):
        partition_row_filter(table, "ts_day=2024-01-01")
    with pytest.raises(PartitionKeyError, match="is not a partition path"):
        parse_partition_key("2024-01-01")
    assert parse_partition_key("name=a%2Fb/ts_day=null") == [("name", "a/b"), ("ts_day", "null")]
