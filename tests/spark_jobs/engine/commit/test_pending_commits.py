"""Records of undecided commits beside a real table (SQLite catalog): written, read back, and settled by outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.engine.commit.outcome import PendingCommit
from spark_jobs.engine.commit.pending_commits import (
    new_record,
    pending_record_location,
    read_pending_records,
    record_summary,
    settle_pending_commits,
    write_pending_record,
)
from tests.support.rewrite_tables import SCHEMA, SPEC, append, rows


@pytest.fixture
def table(sql_catalog):
    """A format v2 table with two appends."""
    sql_catalog.create_namespace("ns")
    created = sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    append(created, rows([1], "a"), "t1")
    append(created, rows([2], "a"), "t2")
    return created


def _written_file(table, name: str) -> str:
    """A file the undecided commit wrote, under the table's data directory."""
    path = Path(table.metadata.location.removeprefix("file://")) / "data" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PAR1")
    return f"file://{path}"


def _record(table, snapshot_id: int, parent: int | None, files: list[str]):
    pending = PendingCommit(str(table.metadata.table_uuid), snapshot_id, "main", parent, "key-1")
    return new_record(table, pending, job="ingest", error=TimeoutError("no answer\n from catalog"), files=files)


def test_a_record_round_trips_beside_the_table(table) -> None:
    record = _record(table, 77, None, ["b", "a", "b"])
    location = write_pending_record(table, record)
    assert location == pending_record_location(table.metadata.location, 77)
    assert record.files == ["a", "b"] and record.error == "TimeoutError: no answer from catalog"
    assert read_pending_records(table) == {location: record}


def test_settling_deletes_only_what_can_never_land_and_keeps_what_may_still(table) -> None:
    head = table.current_snapshot()
    landed = _record(table, head.snapshot_id, head.parent_snapshot_id, [_written_file(table, "landed.parquet")])
    lost = _record(table, 901, head.parent_snapshot_id, [_written_file(table, "lost.parquet")])
    in_flight = _record(table, 902, head.snapshot_id, [_written_file(table, "in-flight.parquet")])
    for record in (landed, lost, in_flight):
        write_pending_record(table, record)

    settlement = settle_pending_commits(table)

    assert (settlement.landed, settlement.not_landed, settlement.undecided) == ([head.snapshot_id], [901], [902])
    assert settlement.files_deleted == lost.files and settlement.held_files == set(in_flight.files)
    assert [Path(f.removeprefix("file://")).exists() for f in (*landed.files, *lost.files, *in_flight.files)] == [
        True,
        False,
        True,
    ]
    assert [record.snapshot_id for record in read_pending_records(table).values()] == [902]
    assert record_summary(settlement)["pending_commit_files_deleted"] == 1
