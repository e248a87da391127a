"""Deciding a commit's outcome from real table metadata (SQLite catalog), and the status check's bounds."""

from __future__ import annotations

import time

import pytest

from spark_jobs.engine.commit.outcome import (
    CommitOutcome,
    PendingCommit,
    ReloadFailedError,
    StatusCheck,
    files_live_at,
    outcome_in_table,
    reload_with_retries,
)
from spark_jobs.engine.maintenance import expire_snapshots
from spark_jobs.engine.shared.errors import UserInputError
from tests.support.rewrite_tables import SCHEMA, SPEC, append, rows


@pytest.fixture
def table(sql_catalog):
    """A format v2 table with two appends."""
    sql_catalog.create_namespace("ns")
    created = sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    append(created, rows([1], "a"), "t1")
    append(created, rows([2], "a"), "t2")
    return created


def _pending(table, snapshot_id: int, parent: int | None, uuid: str | None = None) -> PendingCommit:
    return PendingCommit(uuid or str(table.metadata.table_uuid), snapshot_id, "main", parent)


def test_a_snapshot_in_the_table_landed(table) -> None:
    head = table.current_snapshot()
    pending = _pending(table, head.snapshot_id, head.parent_snapshot_id)
    assert outcome_in_table(table.metadata, pending) is CommitOutcome.LANDED


def test_a_snapshot_expired_since_is_known_by_its_child(table) -> None:
    first, second = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    # As Iceberg Java expires it: the snapshot and its log entry go, its child keeps the parent id.
    expired = table.metadata.model_copy(
        update={
            "snapshots": [second],
            "snapshot_log": [e for e in table.metadata.snapshot_log if e.snapshot_id != first.snapshot_id],
        }
    )
    assert outcome_in_table(expired, _pending(table, first.snapshot_id, None)) is CommitOutcome.LANDED


def test_a_snapshot_expired_by_pyiceberg_is_known_by_its_live_files(table) -> None:
    first, _ = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    first_files = [e.data_file.file_path for m in first.manifests(table.io) for e in m.fetch_manifest_entry(table.io)]
    expire_snapshots(table, older_than_ms=int(time.time() * 1000) + 1000, retain_last=1)
    # pyiceberg clears the child's parent id: the metadata alone no longer shows the snapshot ...
    assert outcome_in_table(table.metadata, _pending(table, first.snapshot_id, None)) is CommitOutcome.NOT_LANDED
    # ... but its files are live at the head, so nothing of it may be deleted.
    assert files_live_at(table, "main", [*first_files, "file:///elsewhere/x.parquet"]) == set(first_files)


def test_an_absent_snapshot_whose_parent_is_no_longer_the_head_did_not_land(table) -> None:
    first, _ = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    pending = _pending(table, 42, first.snapshot_id)
    assert outcome_in_table(table.metadata, pending) is CommitOutcome.NOT_LANDED


def test_an_absent_snapshot_whose_parent_is_still_the_head_may_be_in_flight(table) -> None:
    pending = _pending(table, 42, table.current_snapshot().snapshot_id)
    assert outcome_in_table(table.metadata, pending) is CommitOutcome.IN_FLIGHT


def test_another_table_under_the_same_name_means_not_landed(table) -> None:
    pending = _pending(table, 42, table.current_snapshot().snapshot_id, uuid="00000000-0000-0000-0000-000000000000")
    assert outcome_in_table(table.metadata, pending) is CommitOutcome.NOT_LANDED


def test_status_check_waits_double_up_to_the_maximum_within_the_total_timeout() -> None:
    assert StatusCheck().waits_seconds() == [1.0, 2.0, 4.0]
    properties = {
        "commit.status-check.num-retries": "6",
        "commit.status-check.min-wait-ms": "100",
        "commit.status-check.max-wait-ms": "300",
        "commit.status-check.total-timeout-ms": "1000",
    }
    assert StatusCheck.of(properties).waits_seconds() == [0.1, 0.2, 0.3, 0.3]


def test_a_reload_that_keeps_failing_is_reported_with_its_cause(table, monkeypatch) -> None:
    calls = []

    def unreachable(identifier):
        calls.append(identifier)
        raise ConnectionRefusedError("catalog down")

    monkeypatch.setattr(table.catalog, "load_table", unreachable)
    with pytest.raises(ReloadFailedError, match="ConnectionRefusedError: catalog down") as raised:
        reload_with_retries(table, StatusCheck(retries=2, min_wait_ms=1))
    assert len(calls) == 3 and isinstance(raised.value.__cause__, ConnectionRefusedError)


def test_a_malformed_status_check_property_is_bad_input_naming_it() -> None:
    with pytest.raises(UserInputError, match=r"commit\.status-check\.max-wait-ms"):
        StatusCheck.of({"commit.status-check.max-wait-ms": "5s"})
