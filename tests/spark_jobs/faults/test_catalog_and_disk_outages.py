"""Real outages in the middle of an ingest: the SQLite catalog locked by another process, the PostgreSQL catalog
stopped, the disk of the warehouse full. Each job fails retryably (exit 1, one line), leaves no snapshot pointing
at partial data and no file unaccounted for, and the same job retried once the outage is over commits its rows
exactly once.

The ingest job runs through ``run_job`` in this process on the shared local Spark session. The outage starts just
before the commit is sent (the catalog's ``before_commit`` hook of ``tests.support.faults``), after the job wrote its
files: a second process takes SQLite's exclusive lock, or the PostgreSQL server is stopped. The full disk is a small
tmpfs mounted for the warehouse (the tests run as root); a file filling it is removed before the retry.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import compact as compact_job
from spark_jobs import ingest as ingest_job
from spark_jobs import maintain as maintain_job
from spark_jobs.engine.table.catalog import load_catalog
from spark_jobs.job_contract import EXIT_OK, EXIT_USAGE
from spark_jobs.job_support import run_job
from tests.spark_jobs.faults.conftest import QUICK_RETRIES
from tests.support import faults, services
from tests.support.fault_checks import files_under, rows_by_id, unaccounted_files

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("spark")]

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
_names = itertools.count()


def _configure(monkeypatch: pytest.MonkeyPatch, name: str, uri: str, warehouse: Path) -> str:
    prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
    monkeypatch.setenv(prefix + "PY_CATALOG_IMPL", faults.CATALOG_IMPL)
    monkeypatch.setenv(prefix + "URI", uri)
    monkeypatch.setenv(prefix + "WAREHOUSE", f"file://{warehouse}")
    return name


def _table(catalog_name: str) -> str:
    catalog = load_catalog(catalog_name)
    catalog.create_namespace_if_not_exists("outages")
    identifier = f"outages.t{next(_names)}"
    table = catalog.create_table(identifier, SCHEMA, properties=QUICK_RETRIES)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["one", "two"]}, schema=SCHEMA))
    return identifier


def _source(root: Path, ids: range) -> Path:
    """A Parquet source of ``ids``, each with a random 64-character name (data files do not compress much)."""
    folder = root / f"batch-{next(_names)}"
    folder.mkdir()
    names = [os.urandom(32).hex() for _ in ids]
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "name": names}, schema=SCHEMA), folder / "a.parquet")
    return folder


def _ingest(catalog_name: str, identifier: str, source: Path, capsys) -> tuple[int, str]:
    argv = ["--catalog", catalog_name, "--table", identifier, "--source", str(source), "--mode", "append",
            "--idempotency-key", f"{identifier}/retried"]  # fmt: skip
    capsys.readouterr()
    code = run_job("ingest", lambda: ingest_job.main(argv))
    seen = capsys.readouterr()
    return code, seen.err + seen.out


def _error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, lines
    return lines[0]


def _assert_failed_retryably_and_committed_nothing(code: int, output: str, catalog_name: str, identifier: str,
                                                   files_before: set[str]) -> None:  # fmt: skip
    assert code not in (EXIT_OK, EXIT_USAGE), output[-3000:]
    assert identifier in _error_line(output) or "catalog" in _error_line(output)
    assert len(faults.plan().fired) >= 1
    table = load_catalog(catalog_name).load_table(identifier)
    assert len(table.snapshots()) == 1  # no snapshot of the failed job: nothing points at its files
    assert sorted(rows_by_id(load_catalog(catalog_name), identifier)) == [1, 2]
    assert unaccounted_files(table, files_before, output) == set()


def _assert_the_retry_lands_once(catalog_name: str, identifier: str, source: Path, capsys, ids: range) -> None:
    code, output = _ingest(catalog_name, identifier, source, capsys)
    assert code == EXIT_OK, output[-3000:]
    assert sorted(rows_by_id(load_catalog(catalog_name), identifier)) == [1, 2, *ids]
    code, output = _ingest(catalog_name, identifier, source, capsys)  # the same key again: nothing more
    assert code == EXIT_OK and sorted(rows_by_id(load_catalog(catalog_name), identifier)) == [1, 2, *ids]


class _SqliteLock:
    """SQLite's exclusive lock on a database file, held by another process until released."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.process: subprocess.Popen[str] | None = None

    def take(self) -> None:
        script = (
            "import sqlite3, sys\n"
            f"db = sqlite3.connect({str(self.database)!r}, isolation_level=None)\n"
            "db.execute('BEGIN EXCLUSIVE')\n"
            "print('locked', flush=True)\n"
            "sys.stdin.readline()\n"
            "db.execute('ROLLBACK')\n"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "locked"

    def release(self) -> None:
        if self.process is not None and self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write("\n")
            self.process.stdin.flush()
            self.process.wait(timeout=30)


def test_a_sqlite_catalog_locked_by_another_process_fails_the_commit_retryably(tmp_path, monkeypatch, capsys):
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    database = tmp_path / "catalog.db"
    name = _configure(monkeypatch, "lockedsqlite", f"sqlite:///{database}", warehouse)
    identifier = _table(name)
    files_before = files_under(load_catalog(name).load_table(identifier))
    ids = range(100, 110)
    source = _source(tmp_path, ids)
    lock = _SqliteLock(database)
    faults.reset_plan(before_commit=lock.take)
    try:
        code, output = _ingest(name, identifier, source, capsys)
    finally:
        lock.release()
    assert "database is locked" in output
    _assert_failed_retryably_and_committed_nothing(code, output, name, identifier, files_before)
    _assert_the_retry_lands_once(name, identifier, source, capsys, ids)


@pytest.fixture
def own_postgres() -> Iterator[services.PostgresServer]:
    """A PostgreSQL server of this test alone: it is stopped and started again."""
    server = services.start_postgres()
    yield server
    server.stop()


def test_a_postgresql_catalog_stopped_mid_commit_fails_retryably_and_the_retry_lands_after_restart(
    tmp_path, monkeypatch, capsys, own_postgres
):
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    name = _configure(monkeypatch, "stoppedpg", own_postgres.create_database("outages"), warehouse)
    identifier = _table(name)
    files_before = files_under(load_catalog(name).load_table(identifier))
    ids = range(200, 210)
    source = _source(tmp_path, ids)
    faults.reset_plan(before_commit=own_postgres.halt)
    try:
        code, output = _ingest(name, identifier, source, capsys)
    finally:
        own_postgres.resume()
    _assert_failed_retryably_and_committed_nothing(code, output, name, identifier, files_before)
    _assert_the_retry_lands_once(name, identifier, source, capsys, ids)


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted for this test (as root), unmounted after it."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert mounted.returncode == 0, f"a small tmpfs is needed to fill a disk (run as root): {mounted.stderr}"
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


def test_a_full_disk_during_the_write_fails_retryably_and_leaves_nothing_behind(
    tmp_path, monkeypatch, capsys, small_disk
):
    warehouse = small_disk / "warehouse"
    warehouse.mkdir()
    name = _configure(monkeypatch, "fulldisk", f"sqlite:///{tmp_path}/catalog.db", warehouse)
    identifier = _table(name)
    table = load_catalog(name).load_table(identifier)
    files_before = files_under(table)
    ids = range(1000, 41000)  # about 1.5 MB of data files: more than is left
    source = _source(tmp_path, ids)
    filler = small_disk / "filler"
    free = int(subprocess.run(["df", "-B1", "--output=avail", str(small_disk)], capture_output=True, text=True,
                              check=True).stdout.split()[-1])  # fmt: skip
    filler.write_bytes(b"\0" * max(0, free - 256 * 1024))  # 256 KiB left
    code, output = _ingest(name, identifier, source, capsys)
    assert code not in (EXIT_OK, EXIT_USAGE), output[-3000:]
    assert "No space left on device" in output or "Errno 28" in output
    table = load_catalog(name).load_table(identifier)
    assert len(table.snapshots()) == 1 and sorted(rows_by_id(load_catalog(name), identifier)) == [1, 2]
    assert unaccounted_files(table, files_before, output) == set()
    filler.unlink()
    _assert_the_retry_lands_once(name, identifier, source, capsys, ids)


def _maintenance_job(job: str, argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    main = compact_job.main if job == "compact" else maintain_job.main
    code = run_job(job, lambda: main(argv))
    seen = capsys.readouterr()
    return code, seen.err + seen.out


def test_a_compaction_and_an_expiry_meeting_a_locked_sqlite_catalog_fail_retryably_and_change_nothing(
    tmp_path, monkeypatch, capsys
):
    """The compaction's rewritten files are written before the commit the lock refuses: they are deleted, no
    snapshot names them; the expiry deletes nothing before its commit lands. Both retried once the lock is gone
    succeed with the same rows."""
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    database = tmp_path / "catalog.db"
    name = _configure(monkeypatch, "lockedmaintenance", f"sqlite:///{database}", warehouse)
    identifier = _table(name)
    for ids in (range(3, 5), range(5, 7)):  # three small data files in three snapshots
        rows = pa.table({"id": pa.array(ids, pa.int64()), "name": [str(i) for i in ids]}, schema=SCHEMA)
        load_catalog(name).load_table(identifier).append(rows)
    expected = rows_by_id(load_catalog(name), identifier)
    table_args = ["--catalog", name, "--table", identifier]
    runs = [
        ("compact", [*table_args, "--rewrite-all"]),
        ("maintain", ["expire-snapshots", *table_args, "--older-than", "2999-01-01T00:00:00Z", "--retain-last", "1"]),
    ]
    for job, argv in runs:
        table = load_catalog(name).load_table(identifier)
        files_before, snapshots_before = files_under(table), len(table.snapshots())
        lock = _SqliteLock(database)
        faults.reset_plan(before_commit=lock.take)
        try:
            code, output = _maintenance_job(job, argv, capsys)
        finally:
            lock.release()
        assert code not in (EXIT_OK, EXIT_USAGE), (job, output[-3000:])
        assert "database is locked" in output and _error_line(output), (job, output[-3000:])
        assert len(faults.plan().fired) >= 1
        table = load_catalog(name).load_table(identifier)
        assert len(table.snapshots()) == snapshots_before, job  # no snapshot of the failed job
        assert unaccounted_files(table, files_before, output) == set(), job
        assert files_before <= files_under(table), job  # nothing deleted
        faults.reset_plan()
        code, output = _maintenance_job(job, argv, capsys)
        assert code == EXIT_OK, (job, output[-3000:])
        assert rows_by_id(load_catalog(name), identifier) == expected, job
    table = load_catalog(name).load_table(identifier)
    assert len(table.snapshots()) == 1 and len(table.inspect.data_files()) == 1  # compacted, then expired
