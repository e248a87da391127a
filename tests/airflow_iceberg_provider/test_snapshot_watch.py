"""New snapshots since a given one, by operation and summary, from table metadata (real pyiceberg tables)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_iceberg_provider.snapshot_watch import (
    SnapshotCondition,
    WatchCursor,
    changed_partitions,
    commit_event,
    find_new_snapshot,
    parse_snapshot_id,
    snapshots_since,
)


@pytest.fixture
def two_snapshots(testing_catalog, events_table):
    table = testing_catalog.load_table(events_table)
    first, second = table.snapshots()
    return table, first.snapshot_id, second.snapshot_id


def test_the_snapshot_after_the_given_one_is_new(two_snapshots) -> None:
    table, first, second = two_snapshots
    found = find_new_snapshot(table, SnapshotCondition(since_snapshot_id=first))
    assert found["snapshot_id"] == second
    assert found["parent_snapshot_id"] == first
    assert found["operation"] == "append"
    assert found["summary"]["added-records"] == "5"


def test_nothing_is_new_at_the_head(two_snapshots) -> None:
    table, _, second = two_snapshots
    assert find_new_snapshot(table, SnapshotCondition(since_snapshot_id=second)) is None


def test_without_a_starting_snapshot_the_head_is_new(two_snapshots) -> None:
    table, _, second = two_snapshots
    assert find_new_snapshot(table, SnapshotCondition())["snapshot_id"] == second


@pytest.mark.parametrize(
    ("condition", "expected_index"),
    [
        ({"operation": "overwrite"}, None),
        ({"operation": "append"}, 1),
        ({"summary": {"added-records": "10"}}, 0),
        ({"summary": {"added-records": 5}}, 1),
        ({"summary": {"added-records": "7"}}, None),
    ],
)
def test_operation_and_summary_select_the_newest_match(two_snapshots, condition: dict, expected_index) -> None:
    table, first, second = two_snapshots
    found = find_new_snapshot(table, SnapshotCondition(**condition))
    assert (found["snapshot_id"] if found else None) == (
        None if expected_index is None else (first, second)[expected_index]
    )


def test_an_unknown_branch_has_no_snapshot(two_snapshots) -> None:
    table, _, _ = two_snapshots
    assert find_new_snapshot(table, SnapshotCondition(branch="audit")) is None


@pytest.mark.parametrize(("value", "expected"), [(None, None), ("", None), ("None", None), ("42", 42), (7, 7)])
def test_snapshot_ids_from_templates(value, expected) -> None:
    assert parse_snapshot_id(value) == expected


def test_a_snapshot_id_that_is_not_a_number_is_named() -> None:
    with pytest.raises(ValueError, match="snapshot id 'abc' is not an integer"):
        parse_snapshot_id("abc")


# ---- the watcher's walk: every snapshot after a cursor, and what each changed ------------------------------------


def _partitioned_table(sql_catalog):
    """A table partitioned by category, with three appends (pyiceberg writes them)."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "category", StringType()))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.t", schema, partition_spec=spec)
    for ids, categories in (([1, 2], ["a", "b"]), ([3], ["b"]), ([4, 5, 6], ["c", "c", "a/b"])):
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "category": categories}))
    return table.refresh()


def test_every_snapshot_after_the_cursor_oldest_first(sql_catalog) -> None:
    table = _partitioned_table(sql_catalog)
    first, second, third = table.snapshots()
    assert [s.snapshot_id for s in snapshots_since(table, "main", None)] == [third.snapshot_id]
    after_first = snapshots_since(table, "main", WatchCursor.of(first))
    assert [s.snapshot_id for s in after_first] == [second.snapshot_id, third.snapshot_id]
    assert snapshots_since(table, "main", WatchCursor.of(third)) == []
    assert [s.snapshot_id for s in snapshots_since(table, "main", WatchCursor.of(first), limit=1)] == [
        second.snapshot_id
    ]
    # A cursor whose snapshot is gone (expired) still orders the others by sequence number; a bare id (the
    # official watcher's watermark) that is no ancestor leaves only the head.
    gone = WatchCursor(snapshot_id=12345, sequence_number=first.sequence_number, timestamp_ms=first.timestamp_ms)
    assert [s.snapshot_id for s in snapshots_since(table, "main", gone)] == [second.snapshot_id, third.snapshot_id]
    assert [s.snapshot_id for s in snapshots_since(table, "main", WatchCursor(12345))] == [third.snapshot_id]
    assert snapshots_since(table, "audit", None) == []


def test_a_commit_event_names_its_partitions_and_rows(sql_catalog) -> None:
    table = _partitioned_table(sql_catalog)
    _, second, third = table.snapshots()
    event = commit_event(table, "ns.t", "main", third, second.snapshot_id)
    assert (event["table"], event["branch"], event["snapshot_id"], event["previous_snapshot_id"]) == (
        "ns.t",
        "main",
        third.snapshot_id,
        second.snapshot_id,
    )
    assert event["operation"] == "append" and event["parent_snapshot_id"] == second.snapshot_id
    assert (event["partitions"], event["partition_count"]) == (["category=a%2Fb", "category=c"], 2)
    assert (event["rows_added"], event["rows_removed"], event["position_deletes_added"]) == (3, 0, 0)
    cursor = WatchCursor.from_value(WatchCursor.of(third).as_dict())
    assert cursor == WatchCursor.of(third) and WatchCursor.of(second).is_before(third)


def test_both_sides_read_the_same_partitions_from_a_snapshot(sql_catalog) -> None:
    """The watcher (Airflow side) and the ingest job (Spark side) read a snapshot's changes alike."""
    from spark_jobs.engine.commit.changed_partitions import changed_partitions as job_side

    table = _partitioned_table(sql_catalog)
    for snapshot in table.snapshots():
        assert changed_partitions(table, snapshot) == job_side(table, snapshot)
