"""Snapshot expiration and orphan removal under faults, on real SQLite and PostgreSQL catalogs.

Expiration commits no manifest, so its phases are the catalog call (before it is sent, unreachable, raising after
it landed), the reload after it, and the file cleanup. After each: the table reads at every snapshot it still has
with the rows it had, every file its metadata references exists, and a file was deleted only when the expiration
landed (a file that could not be deleted is reported). Orphan removal commits nothing: a reload that fails deletes
nothing, and a delete that fails is reported.
"""

from __future__ import annotations

import time

import pytest

from spark_jobs.engine.maintenance import expire_snapshots, remove_orphan_files
from spark_jobs.engine.maintenance.reachable_files import normalize_location, reachable_locations
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import EngineError
from spark_jobs.engine.table.catalog import load_catalog
from tests.spark_jobs.faults.phases import PHASES, Phase
from tests.spark_jobs.faults.tables import new_table
from tests.support import faults
from tests.support.fault_checks import files_under, table_directory

EXPIRATION_PHASES = [
    Phase(p.name, p.plan, p.lands, "error" if p.ends == "unknown" else p.ends)
    for p in PHASES
    if "write" not in p.name and p.name != "cleanup"
] + [Phase("cleanup", {"deletes_failing": True})]


def _ids_at(catalog_name: str, identifier: str, snapshot_id: int) -> list[int]:
    data = open_read_session(catalog_name, identifier, snapshot_id=snapshot_id, columns=["id"]).to_arrow()
    return sorted(data.column("id").to_pylist())


@pytest.mark.parametrize("phase", EXPIRATION_PHASES, ids=[p.name.replace(" ", "-") for p in EXPIRATION_PHASES])
def test_expire_snapshots_under_a_fault(faulty_catalog, phase) -> None:
    table, identifier = new_table(faulty_catalog)
    ids_by_snapshot = {s.snapshot_id: _ids_at(faulty_catalog, identifier, s.snapshot_id) for s in table.snapshots()}
    head = table.current_snapshot().snapshot_id
    before = files_under(table)
    plan = faults.reset_plan(**phase.plan)
    result, error = None, None
    try:
        result = expire_snapshots(table, older_than_ms=int(time.time() * 1000) + 1000, retain_last=1)
    except EngineError as raised:
        error = raised
    finally:
        faults.reset_plan()
    assert plan.fired

    table = load_catalog(faulty_catalog).load_table(identifier)
    remaining = {s.snapshot_id for s in table.snapshots()}
    assert remaining == ({head} if phase.lands else set(ids_by_snapshot))
    for snapshot_id in remaining:
        assert _ids_at(faulty_catalog, identifier, snapshot_id) == ids_by_snapshot[snapshot_id]
    referenced = reachable_locations(table.metadata, table.metadata_location, table.io)
    referenced = {path for path in referenced if not path.endswith("/version-hint.text")}  # Hadoop tables only
    assert referenced - files_under(table) == set(), "a file the table references was deleted"
    deleted = before - files_under(table)
    if phase.ends == "ok":
        assert error is None, f"{phase.name}: {error!r}"
        removable = {normalize_location(p) for p in result.files.all()}
        assert deleted <= removable
        if phase.plan.get("deletes_failing"):
            assert not deleted and set(result.removal.failed) == result.files.all() != set()
        else:
            assert deleted == removable != set() and not result.removal.failed
    else:
        assert error is not None and not deleted and "\n" not in str(error) and identifier in str(error)


def test_orphan_removal_deletes_nothing_when_the_table_cannot_be_reloaded(sqlite_faulty_catalog) -> None:
    table, _ = new_table(sqlite_faulty_catalog)
    orphan = table_directory(table) / "data" / "orphan.parquet"
    orphan.write_bytes(b"unreferenced")
    plan = faults.reset_plan(reloads_failing=99)
    try:
        with pytest.raises(faults.InjectedFaultError):
            remove_orphan_files(table, older_than_ms=int(time.time() * 1000) + 1000, allow_short_retention=True)
    finally:
        faults.reset_plan()
    assert plan.fired and orphan.exists()


def test_orphan_removal_reports_a_file_it_cannot_delete(sqlite_faulty_catalog) -> None:
    table, identifier = new_table(sqlite_faulty_catalog)
    orphan = table_directory(table) / "data" / "orphan.parquet"
    orphan.write_bytes(b"unreferenced")
    plan = faults.reset_plan(deletes_failing=True)
    try:
        result = remove_orphan_files(table, older_than_ms=int(time.time() * 1000) + 1000, allow_short_retention=True)
    finally:
        faults.reset_plan()
    assert plan.failed_deletes == [f"file://{orphan}"] and orphan.exists()
    assert list(result.as_dict()["files_failed"]) == [f"file://{orphan}"]
    assert open_read_session(sqlite_faulty_catalog, identifier).to_arrow().num_rows == 16
