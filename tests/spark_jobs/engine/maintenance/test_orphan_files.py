"""Orphan files: listed under the table location, not reachable from metadata, older than the cutoff."""

import os
import time
from pathlib import Path

from spark_jobs.engine.maintenance import expire_snapshots, remove_orphan_files
from tests.support.table_history import build_table_history

DAY_S = 24 * 60 * 60


def _plant(path: Path, age_days: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not referenced by any snapshot")
    moment = time.time() - age_days * DAY_S
    os.utime(path, (moment, moment))
    return path


def _future_ms() -> int:
    return int(time.time() * 1000) + 60_000


def test_a_table_written_by_pyiceberg_has_no_orphans(sql_catalog):
    history = build_table_history(sql_catalog)
    result = remove_orphan_files(history.table, older_than_ms=_future_ms(), dry_run=True)
    assert result.files_listed > 0 and result.orphans == []
    expire_snapshots(history.table, older_than_ms=_future_ms(), retain_last=1)
    after = remove_orphan_files(sql_catalog.load_table("maint.events"), older_than_ms=_future_ms(), dry_run=True)
    assert after.orphans == [] and after.files_listed < result.files_listed


def test_planted_files_older_than_the_cutoff_are_found_and_removed(sql_catalog):
    history = build_table_history(sql_catalog)
    root = history.directory
    old = [
        _plant(root / "data" / "orphan-1.parquet", age_days=10),
        _plant(root / "metadata" / "stale-manifest.avro", age_days=4),
        _plant(root / "data" / "category=x" / "nested.parquet", age_days=30),
    ]
    fresh = _plant(root / "data" / "in-flight.parquet", age_days=1)  # newer than the default 3 days
    hidden = [_plant(root / "data" / ".part.crc", age_days=10), _plant(root / "_temporary" / "0" / "x", age_days=10)]

    planned = remove_orphan_files(history.table, dry_run=True)
    assert sorted(Path(o.location.removeprefix("file://")) for o in planned.orphans) == sorted(old)
    assert all(path.exists() for path in [*old, fresh, *hidden])
    assert planned.as_dict()["orphan_bytes"] == 3 * len(b"not referenced by any snapshot")

    removed = remove_orphan_files(history.table)
    assert len(removed.removal.removed) == 3 and removed.removal.failed == {}
    assert not any(path.exists() for path in old)
    assert all(path.exists() for path in [fresh, *hidden])
    table = sql_catalog.load_table("maint.events")
    for sid in history.snapshot_ids:
        assert table.scan(snapshot_id=sid).to_arrow().num_rows == history.rows_per_snapshot[sid]


def test_a_recent_cutoff_takes_the_fresh_file_too(sql_catalog):
    history = build_table_history(sql_catalog)
    fresh = _plant(history.directory / "data" / "in-flight.parquet", age_days=1)
    result = remove_orphan_files(history.table, older_than_ms=_future_ms(), dry_run=True)
    assert [o.location for o in result.orphans] == [f"file://{fresh}"]
