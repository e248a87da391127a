"""Idempotency keys against a real SQLite catalog: recorded with the snapshot, kept after it is expired or rolled
back, pruned after the retention window, one property per branch."""

from __future__ import annotations

import json
import time

import pytest
from pyiceberg.table.snapshots import Operation

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.idempotency import (
    RETENTION_PROPERTY,
    key_digest,
    keys_property,
    recorded_keys,
    recorded_snapshot_id,
)
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.maintenance import expire_snapshots
from tests.support.rewrite_tables import SCHEMA, SPEC, ids_and_checksum, rows
from tests.support.rewrite_tables import append as append_files


@pytest.fixture
def table(sql_catalog):
    """An empty format v2 table partitioned by category."""
    sql_catalog.create_namespace("ns")
    return sql_catalog.create_table("ns.keys", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})


def _keyed_append(table, ids: list[int], key: str, tag: str, branch: str = "main"):
    from spark_jobs.engine.write.file_entries import to_data_file
    from spark_jobs.engine.write.write_context import WriteContext, write_data

    files = [to_data_file(item) for item in write_data(rows(ids, "a"), WriteContext.for_table(table), tag)]
    return commit_change(
        table, SnapshotChange(Operation.APPEND, added_data_files=files, idempotency_key=key), branch=branch
    )


def test_a_key_is_recorded_in_the_same_commit_as_its_snapshot(table) -> None:
    first = _keyed_append(table, [1], "dag/run-1/task", "t1")
    entry = recorded_keys(table.metadata.properties, "main")[key_digest("dag/run-1/task")]
    assert entry[0] == first.snapshot_id and abs(entry[1] - time.time() * 1000) < 60_000
    # The property changed in the metadata that added the snapshot: one metadata log entry for both.
    assert table.metadata.snapshot_log[-1].snapshot_id == first.snapshot_id


def test_a_retry_after_the_snapshot_was_expired_commits_nothing(table) -> None:
    first = _keyed_append(table, [1], "run-1", "t1")
    _keyed_append(table, [2], "run-2", "t2")
    _keyed_append(table, [3], "run-3", "t3")
    expire_snapshots(table, older_than_ms=int(time.time() * 1000) + 1000, retain_last=1)
    assert table.metadata.snapshot_by_id(first.snapshot_id) is None
    before = ids_and_checksum(table)
    again = _keyed_append(table, [1], "run-1", "t4")
    assert again.already_committed and again.snapshot_id == first.snapshot_id
    assert ids_and_checksum(table) == before == ([1, 2, 3], before[1])


def test_a_retry_after_a_rollback_commits_nothing(table) -> None:
    base = _keyed_append(table, [1], "run-1", "t1")
    rolled_back = _keyed_append(table, [2], "run-2", "t2")
    table.manage_snapshots().rollback_to_snapshot(base.snapshot_id).commit()
    assert table.current_snapshot().snapshot_id == base.snapshot_id
    again = _keyed_append(table, [2], "run-2", "t3")
    assert again.already_committed and again.snapshot_id == rolled_back.snapshot_id
    assert ids_and_checksum(table)[0] == [1]


def test_keys_older_than_the_retention_window_are_dropped_by_the_next_keyed_commit(table) -> None:
    with table.transaction() as transaction:
        transaction.set_properties({RETENTION_PROPERTY: "1"})
    _keyed_append(table, [1], "run-1", "t1")
    time.sleep(0.01)
    _keyed_append(table, [2], "run-2", "t2")
    recorded = json.loads(table.metadata.properties[keys_property("main")])
    assert list(recorded) == [key_digest("run-2")]


def test_each_branch_has_its_own_keys(table) -> None:
    base = _keyed_append(table, [0], "base", "t0")
    table.manage_snapshots().create_branch(base.snapshot_id, "audit").commit()
    main = _keyed_append(table, [1], "run-1", "t1")
    audit = _keyed_append(table, [2], "run-1", "t2", branch="audit")
    assert not audit.already_committed and audit.snapshot_id != main.snapshot_id
    assert recorded_snapshot_id(table.metadata, "run-1", "main") == main.snapshot_id
    assert recorded_snapshot_id(table.metadata, "run-1", "audit") == audit.snapshot_id


def test_a_property_that_is_not_json_is_ignored_and_replaced(table, caplog) -> None:
    with table.transaction() as transaction:
        transaction.set_properties({keys_property("main"): "not json"})
    first = _keyed_append(table, [1], "run-1", "t1")
    assert "is not JSON" in caplog.text
    assert recorded_snapshot_id(table.metadata, "run-1", "main") == first.snapshot_id


def test_keys_written_before_the_property_existed_are_found_in_the_history(table) -> None:
    first = append_files(table, rows([1], "a"), "t1")
    assert first  # a plain append, no key
    from spark_jobs.engine.commit.snapshot_change import IDEMPOTENCY_KEY_PROPERTY

    # An older writer recorded the key in the snapshot summary only.
    table.append(rows([5], "a"), snapshot_properties={IDEMPOTENCY_KEY_PROPERTY: "legacy-run"})
    legacy = table.current_snapshot().snapshot_id
    again = _keyed_append(table, [5], "legacy-run", "t2")
    assert again.already_committed and again.snapshot_id == legacy
