"""Snapshot choice (id, ref, as-of time) and the schema a read uses, checked against tables Iceberg Java wrote."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from pyiceberg.types import StringType

from spark_jobs.engine.shared.errors import SnapshotNotFoundError, UserInputError
from spark_jobs.engine.table.snapshots import parse_as_of, resolve_read_target, resolve_snapshot, schema_for_snapshot
from tests.support.conformance import CORPUS_DIR, load_queries

TIME_TRAVEL_QUERIES = [q for q in load_queries() if q.snapshot_id is not None or q.as_of_timestamp_ms is not None]


def _expected(table_name: str) -> dict:
    return json.loads((CORPUS_DIR / "expected" / f"{table_name}.json").read_text())


def _iso_utc(timestamp_ms: int) -> str:
    return datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


@pytest.mark.parametrize("query", TIME_TRAVEL_QUERIES, ids=lambda q: q.id)
def test_every_time_travel_query_of_the_corpus_resolves_as_java_did(conformance_catalog, query):
    table = conformance_catalog.load_table(query.table)
    if query.snapshot_id is not None:
        expected_id = query.snapshot_id
        target = resolve_read_target(table, snapshot_id=query.snapshot_id)
    else:
        expected_id = query.resolves_to_snapshot_id
        target = resolve_read_target(table, as_of=query.as_of_timestamp_ms)
        assert resolve_snapshot(table, as_of=str(query.as_of_timestamp_ms)).snapshot_id == expected_id
        assert resolve_snapshot(table, as_of=_iso_utc(query.as_of_timestamp_ms)).snapshot_id == expected_id
    assert target.snapshot.snapshot_id == expected_id
    # Time travel reads with the snapshot's own schema: the columns Java returned.
    assert [field.name for field in target.schema.fields] == query.result_columns


def test_as_of_a_commit_time_is_that_snapshot_and_one_millisecond_earlier_is_its_parent(conformance_catalog):
    table = conformance_catalog.load_table("corpus.mor_v2_pos")
    for snapshot in _expected("mor_v2_pos")["snapshots"][1:]:
        at_commit = resolve_snapshot(table, as_of=snapshot["committed_at_ms"])
        just_before = resolve_snapshot(table, as_of=snapshot["committed_at_ms"] - 1)
        assert at_commit.snapshot_id == snapshot["snapshot_id"]
        assert just_before.snapshot_id == snapshot["parent_id"]


def test_current_read_uses_the_current_snapshot_and_schema(conformance_catalog):
    table = conformance_catalog.load_table("corpus.schema_evolution")
    full_scan = next(q for q in load_queries() if q.table == "corpus.schema_evolution" and q.name == "full_scan")
    target = resolve_read_target(table)
    assert target.snapshot.snapshot_id == _expected("schema_evolution")["current_snapshot_id"]
    assert [field.name for field in target.schema.fields] == full_scan.result_columns
    assert resolve_read_target(table, ref="main").schema == table.schema()


def test_parse_as_of_accepts_millis_digits_and_iso_8601_with_or_without_zone():
    millis = 1704450600123  # 2024-01-05T10:30:00.123Z
    assert parse_as_of(millis) == millis
    assert parse_as_of(str(millis)) == millis
    assert parse_as_of("2024-01-05T10:30:00.123Z") == millis
    assert parse_as_of("2024-01-05T10:30:00.123") == millis
    assert parse_as_of("2024-01-05T12:30:00.123+02:00") == millis
    assert parse_as_of("2024-01-05") == millis - (10 * 3600 + 30 * 60) * 1000 - 123


def test_bad_as_of_is_a_user_error():
    with pytest.raises(UserInputError, match="neither epoch milliseconds nor an ISO-8601"):
        parse_as_of("yesterday")


def test_more_than_one_selector_is_a_user_error(conformance_catalog):
    table = conformance_catalog.load_table("corpus.v1_cow")
    with pytest.raises(UserInputError, match=r"at most one of .*\['snapshot_id', 'as_of'\]"):
        resolve_snapshot(table, snapshot_id=1, as_of=2)


def test_unknown_snapshot_id_names_the_table_and_some_ids(conformance_catalog):
    table = conformance_catalog.load_table("corpus.v1_cow")
    current_id = _expected("v1_cow")["current_snapshot_id"]
    with pytest.raises(SnapshotNotFoundError) as error:
        resolve_snapshot(table, snapshot_id=42)
    message = str(error.value)
    assert "snapshot id 42 not found in table corpus.v1_cow" in message
    assert "4 snapshots" in message
    assert str(current_id) in message


def test_snapshot_ids_arrive_as_ints_or_digit_strings(conformance_catalog):
    table = conformance_catalog.load_table("corpus.small_files")
    assert resolve_snapshot(table, snapshot_id="19519460924124").snapshot_id == 19519460924124
    with pytest.raises(UserInputError, match=r"snapshot id 'latest' for table corpus\.small_files is not an integer"):
        resolve_snapshot(table, snapshot_id="latest")


def test_unknown_ref_lists_the_refs(conformance_catalog):
    table = conformance_catalog.load_table("corpus.v1_cow")
    with pytest.raises(
        SnapshotNotFoundError, match=r"ref 'nightly' not found in table corpus.v1_cow; refs: main \(branch\)"
    ):
        resolve_snapshot(table, ref="nightly")


def test_time_before_the_first_snapshot_names_the_first_snapshot_time(conformance_catalog):
    table = conformance_catalog.load_table("corpus.v1_cow")
    first_ms = _expected("v1_cow")["snapshots"][0]["committed_at_ms"]
    with pytest.raises(SnapshotNotFoundError) as error:
        resolve_snapshot(table, as_of=first_ms - 1)
    message = str(error.value)
    assert "table corpus.v1_cow" in message
    assert f"the first snapshot-log entry is at {_iso_utc(first_ms)}" in message


def test_table_without_snapshots_resolves_to_none_with_its_schema(sql_catalog):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.empty", schema=pa.schema([("id", pa.int64())]))
    target = resolve_read_target(table)
    assert target.snapshot is None
    assert target.schema == table.schema()
    assert resolve_snapshot(table, ref="main") is None


def test_tags_read_the_snapshot_schema_and_branches_the_current_schema(sql_catalog):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.refs", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    first = table.current_snapshot()
    table.manage_snapshots().create_tag(first.snapshot_id, "v1").create_branch(first.snapshot_id, "audit").commit()
    with table.update_schema() as update:
        update.add_column("note", StringType())
    table.append(pa.table({"id": pa.array([3], pa.int64()), "note": pa.array(["x"], pa.string())}))
    table = sql_catalog.load_table("ns.refs")

    tag = resolve_read_target(table, ref="v1")
    branch = resolve_read_target(table, ref="audit")
    by_id = resolve_read_target(table, snapshot_id=first.snapshot_id)
    current = resolve_read_target(table)

    assert tag.snapshot.snapshot_id == branch.snapshot.snapshot_id == first.snapshot_id
    assert [f.name for f in tag.schema.fields] == ["id"]
    assert [f.name for f in branch.schema.fields] == ["id", "note"]
    assert [f.name for f in by_id.schema.fields] == ["id"]
    assert [f.name for f in current.schema.fields] == ["id", "note"]
    assert schema_for_snapshot(table, first) == tag.schema
    assert schema_for_snapshot(table, first, ref="audit") == table.schema()


def test_as_of_resolves_through_the_snapshot_log_not_the_snapshot_list(sql_catalog):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.log", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    first = table.current_snapshot()
    table.append(pa.table({"id": pa.array([2], pa.int64())}))
    second = table.current_snapshot()
    # Roll main back to the first snapshot: the log gains an entry for it, the second stays in the snapshot list.
    table.manage_snapshots().rollback_to_snapshot(first.snapshot_id).commit()
    table = sql_catalog.load_table("ns.log")
    rollback_entry = table.metadata.snapshot_log[-1]
    assert rollback_entry.snapshot_id == first.snapshot_id

    later = rollback_entry.timestamp_ms + int(timedelta(hours=1) / timedelta(milliseconds=1))
    assert resolve_snapshot(table, as_of=later).snapshot_id == first.snapshot_id
    assert resolve_snapshot(table, as_of=second.timestamp_ms).snapshot_id == second.snapshot_id


def _appended(sql_catalog, name: str, count: int) -> tuple:
    """A new table ``ns.<name>`` and its ``count`` append snapshots, committed a few milliseconds apart."""
    sql_catalog.create_namespace_if_not_exists("ns")
    table = sql_catalog.create_table(f"ns.{name}", schema=pa.schema([("id", pa.int64())]))
    snapshots = []
    for value in range(count):
        time.sleep(0.005)  # distinct commit times
        table.append(pa.table({"id": pa.array([value], pa.int64())}))
        snapshots.append(table.current_snapshot())
    return table, snapshots


def test_as_of_a_time_when_main_was_at_an_expired_snapshot_is_an_error_not_an_older_snapshot(sql_catalog):
    from spark_jobs.engine.maintenance import expire_snapshots

    table, snapshots = _appended(sql_catalog, "expired", 4)
    first, second, third, fourth = snapshots
    table.manage_snapshots().create_tag(first.snapshot_id, "kept").commit()
    future = int(time.time() * 1000) + 60_000
    expire_snapshots(sql_catalog.load_table("ns.expired"), older_than_ms=future, retain_last=1)
    table = sql_catalog.load_table("ns.expired")
    assert {s.snapshot_id for s in table.snapshots()} == {first.snapshot_id, fourth.snapshot_id}
    # main was at the expired second and third snapshots then: the tagged first one never held those rows
    for expired in (second, third):
        with pytest.raises(SnapshotNotFoundError, match=r"ns\.expired as of .* which has expired"):
            resolve_snapshot(table, as_of=expired.timestamp_ms)
    assert resolve_snapshot(table, as_of=fourth.timestamp_ms).snapshot_id == fourth.snapshot_id
    assert resolve_snapshot(table, ref="kept").snapshot_id == first.snapshot_id


def test_as_of_an_expired_snapshot_before_a_rollback_is_an_error_not_the_older_snapshot(sql_catalog):
    from spark_jobs.engine.maintenance import expire_snapshots

    table, snapshots = _appended(sql_catalog, "rolled", 3)
    first, second, third = snapshots
    time.sleep(0.005)
    table.manage_snapshots().rollback_to_snapshot(first.snapshot_id).create_tag(first.snapshot_id, "kept").commit()
    time.sleep(0.005)
    table = sql_catalog.load_table("ns.rolled")
    table.append(pa.table({"id": pa.array([9], pa.int64())}))
    rolled_back_at = table.metadata.snapshot_log[-2].timestamp_ms
    fourth = table.current_snapshot()
    future = int(time.time() * 1000) + 60_000
    expire_snapshots(sql_catalog.load_table("ns.rolled"), older_than_ms=future, retain_last=1)
    table = sql_catalog.load_table("ns.rolled")
    assert {s.snapshot_id for s in table.snapshots()} == {first.snapshot_id, fourth.snapshot_id}
    # the log keeps the first snapshot's entry, then the rollback's: main was at the expired second and third between
    for expired in (second, third):
        with pytest.raises(SnapshotNotFoundError, match="which has expired"):
            resolve_snapshot(table, as_of=expired.timestamp_ms)
    assert resolve_snapshot(table, as_of=rolled_back_at).snapshot_id == first.snapshot_id
    assert resolve_snapshot(table, as_of=fourth.timestamp_ms).snapshot_id == fourth.snapshot_id


def _commit_without_parent(table) -> int:
    """A new main snapshot with the current one's files and no parent, as a REPLACE TABLE commit makes one."""
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate

    current = table.current_snapshot()
    replacement = Snapshot(
        snapshot_id=current.snapshot_id + 1,
        parent_snapshot_id=None,
        sequence_number=table.metadata.last_sequence_number + 1,
        timestamp_ms=current.timestamp_ms + 10,
        manifest_list=current.manifest_list,
        summary=current.summary,
        schema_id=current.schema_id,
    )
    updates = (
        AddSnapshotUpdate(snapshot=replacement),
        SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=replacement.snapshot_id),
    )
    table.catalog.commit_table(table, (AssertRefSnapshotId(ref="main", snapshot_id=current.snapshot_id),), updates)
    return replacement.snapshot_id


def test_as_of_after_an_expiry_by_another_tool_or_a_replace(sql_catalog):

    table, snapshots = _appended(sql_catalog, "other", 3)
    first, second, third = snapshots
    table.manage_snapshots().create_tag(first.snapshot_id, "kept").commit()
    # pyiceberg's own expiry records nothing: the third's parent is gone, and a commit came between it and the first
    sql_catalog.load_table("ns.other").maintenance.expire_snapshots().by_id(second.snapshot_id).commit()
    table = sql_catalog.load_table("ns.other")
    with pytest.raises(SnapshotNotFoundError, match="which has expired"):
        resolve_snapshot(table, as_of=second.timestamp_ms)
    assert resolve_snapshot(table, as_of=third.timestamp_ms).snapshot_id == third.snapshot_id
    # a parentless commit right after the head (REPLACE TABLE) keeps the history before it readable
    replaced = _commit_without_parent(table)
    table = sql_catalog.load_table("ns.other")
    assert table.current_snapshot().snapshot_id == replaced
    assert resolve_snapshot(table, as_of=third.timestamp_ms + 1).snapshot_id == third.snapshot_id
