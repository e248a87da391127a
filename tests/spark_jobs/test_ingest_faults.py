"""The ingest job under faults: an executor killed while it writes, and the driver killed before its commit lands.

Each fault is real: the executor JVM or the spark-submit process group gets SIGKILL. Afterwards the table's
snapshot holds each source row exactly once or is unchanged, and the files of the lost work are deleted by the job
or found by orphan removal.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import ingest as ingest_job
from spark_jobs import maintain as maintain_job
from spark_jobs.engine.read.session import open_read_session
from tests.support.background_jobs import (
    BackgroundJob,
    descendants,
    executor_pids,
    pid_alive,
    spark_submit_command,
    start_job,
    wait_for,
)

INGEST_PY = Path(ingest_job.__file__).resolve()
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("payload", pa.string())])


def _write_source(directory: Path, files: int, rows_per_file: int, first_id: int = 0) -> list[int]:
    """Parquet source files of rows (id, payload) with consecutive ids; returns the ids. Payloads barely compress."""
    directory.mkdir()
    for index in range(files):
        start = first_id + index * rows_per_file
        ids = pa.array(range(start, start + rows_per_file), pa.int64())
        payload = pa.array([os.urandom(24).hex() for _ in range(rows_per_file)])
        pq.write_table(pa.table([ids, payload], schema=SCHEMA), directory / f"part-{index:03d}.parquet")
    return list(range(first_id, first_id + files * rows_per_file))


def _last_json_line(job: BackgroundJob) -> dict:
    lines = job.stdout().strip().splitlines()
    assert lines, f"job {job.name} printed nothing on stdout\n{job.output_tail()}"
    return json.loads(lines[-1])


def _files_under(directory: Path) -> set[Path]:
    return {path for path in directory.rglob("*") if path.is_file()}


def _live_data_files(table) -> set[Path]:
    table.refresh()
    return {Path(task.file.file_path.removeprefix("file://")) for task in table.scan().plan_files()}


def _ids(catalog_name: str, table_name: str) -> list[int]:
    return sorted(open_read_session(catalog_name, table_name, columns=["id"]).to_arrow().column("id").to_pylist())


@pytest.mark.spark
@pytest.mark.standalone
def test_an_executor_killed_mid_write_is_replaced_and_each_row_lands_once(
    spark_standalone, testing_catalog, tmp_path
) -> None:
    # Tasks of 100,000 rows each write dozens of files, so the first file appears well before its task ends.
    ids = _write_source(tmp_path / "source", files=4, rows_per_file=100_000)
    testing_catalog.create_namespace_if_not_exists("faults")
    table = testing_catalog.create_table(
        "faults.executor_killed",
        SCHEMA,
        properties={"format-version": "2", "write.target-file-size-bytes": str(128 * 1024)},
    )
    data_dir = Path(table.metadata.location.removeprefix("file://")) / "data"
    worker_pid = spark_standalone.worker_pid
    executors_before = executor_pids(worker_pid)
    conf = {
        # One executor with one core: the source's files are written one task after another.
        "spark.cores.max": "1",
        "spark.executor.cores": "1",
        "spark.executor.memory": "1g",
        # One Spark partition per source file.
        "spark.sql.files.maxPartitionBytes": str(64 * 1024 * 1024),
        "spark.sql.files.openCostInBytes": str(64 * 1024 * 1024),
    }
    args = ["--catalog", "testing", "--table", "faults.executor_killed", "--source", str(tmp_path / "source")]
    command = spark_submit_command(
        INGEST_PY, [*args, "--mode", "append"], master=spark_standalone.master_url, conf=conf
    )
    job = start_job("ingest", command, tmp_path / "logs")
    python_workers: set[int] = set()
    try:
        # Find the executor before its first file appears, then kill it the moment one does: the first task is
        # then still writing, so the kill cuts an attempt short with files on disk.
        executors = wait_for(
            "the job's executor", lambda: executor_pids(worker_pid) - executors_before, timeout=240,
            context=job.require_running,
        )  # fmt: skip
        assert len(executors) == 1, f"expected one executor of the job under the worker, found {executors}"
        (executor,) = executors
        wait_for(
            "the first data file", lambda: list(data_dir.glob("*.parquet")), timeout=240, context=job.require_running
        )
        python_workers = descendants(executor)  # the Python daemon and the worker writing the files
        files_at_kill = set(data_dir.glob("*.parquet"))
        os.kill(executor, signal.SIGKILL)
        assert python_workers, f"executor {executor} had no Python worker while a data file was being written"
        wait_for(f"executor {executor} to die", lambda: not pid_alive(executor), timeout=30)
        # The killed attempt's writers go with their executor (the daemon sees its stdin close and ends its workers).
        wait_for(
            f"the Python workers {sorted(python_workers)} of the killed executor to exit",
            lambda: not any(pid_alive(pid) for pid in python_workers),
            timeout=60,
        )
        exit_code = job.wait(timeout=300)
        assert exit_code == 0, f"the ingest job failed after its executor was killed\n{job.output_tail()}"
    finally:
        if job.running():
            job.kill()
        for pid in python_workers:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)

    result = _last_json_line(job)
    assert "Lost executor" in job.stderr(), f"Spark did not report the executor as lost\n{job.output_tail()}"
    live = _live_data_files(table)
    assert live - files_at_kill, "every committed file existed when the executor was killed: the kill came too late"
    assert any("-a1-" in path.name for path in live), f"no task attempt was retried: {sorted(p.name for p in live)}"
    killed_attempt_files = files_at_kill - live
    assert killed_attempt_files, "the files present at the kill were all committed: no attempt was cut short"
    assert all("-a0-" in path.name for path in killed_attempt_files), sorted(map(str, killed_attempt_files))
    assert result["rows_added"] == len(ids) and result["data_files_added"] == len(live)
    assert _ids("testing", "faults.executor_killed") == ids
    # The killed attempt's files (partial or whole) were deleted by the job: the data directory holds the table's.
    left_behind = sorted(path.name for path in _files_under(data_dir) - live)
    assert _files_under(data_dir) == live, f"files beside the table's in {data_dir}: {left_behind}"


CATALOG = "faults"
WAITING_COMMITS = (
    "SELECT pid, query FROM pg_stat_activity "
    "WHERE datname = %s AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
)


@pytest.fixture
def pg_catalog(postgres, monkeypatch, tmp_path):
    """A pyiceberg SQL catalog ``faults`` on PostgreSQL, configured by environment for this test and its jobs."""
    from spark_jobs.engine.table.catalog import load_catalog

    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    uri = postgres.create_database("ingest_faults")
    settings = {"TYPE": "sql", "URI": uri, "WAREHOUSE": f"file://{warehouse}"}
    for key, value in settings.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key}", value)
    return load_catalog(CATALOG)


def _connect(postgres, *, autocommit: bool):
    import psycopg2

    connection = psycopg2.connect(host="127.0.0.1", port=postgres.port, user="postgres", dbname="ingest_faults")
    connection.autocommit = autocommit
    return connection


@pytest.mark.spark
@pytest.mark.postgres
def test_a_driver_killed_before_its_commit_lands_changes_nothing_and_a_retry_commits_once(
    spark, postgres, pg_catalog, tmp_path
) -> None:
    pg_catalog.create_namespace_if_not_exists("faults")
    table = pg_catalog.create_table("faults.events", SCHEMA, properties={"format-version": "2"})
    table.append(pa.table({"id": pa.array(range(100), pa.int64()), "payload": ["first"] * 100}, schema=SCHEMA))
    snapshot_before, metadata_before = table.current_snapshot().snapshot_id, table.metadata_location
    table_dir = Path(table.metadata.location.removeprefix("file://"))
    files_before = _files_under(table_dir)
    new_ids = _write_source(tmp_path / "source", files=1, rows_per_file=1000, first_id=1000)
    args = [
        "--catalog", CATALOG, "--table", "faults.events", "--source", str(tmp_path / "source"), "--mode", "append",
        "--idempotency-key", "run-1/ingest",
    ]  # fmt: skip
    command = spark_submit_command(INGEST_PY, args, master="local[1]")

    # Hold the row lock on the table's catalog row: the job's commit (an UPDATE of that row) waits for it.
    lock = _connect(postgres, autocommit=False)
    watch = _connect(postgres, autocommit=True)
    job = start_job("ingest-killed", command, tmp_path / "logs")
    try:
        with lock.cursor() as cursor:
            cursor.execute(
                "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = %s AND table_namespace = %s "
                "AND table_name = %s FOR UPDATE",
                (CATALOG, "faults", "events"),
            )
            assert cursor.fetchone() == (metadata_before,)

        def waiting_commit() -> list[tuple[int, str]]:
            with watch.cursor() as cursor:
                cursor.execute(WAITING_COMMITS, ("ingest_faults",))
                return cursor.fetchall()

        ((backend, query),) = wait_for(
            "the job's commit to wait for the lock", waiting_commit, timeout=240, context=job.require_running
        )
        assert query.lstrip().upper().startswith("UPDATE ICEBERG_TABLES"), query
        job.kill()
        killed_ms = int(time.time() * 1000) + 1
        lock.rollback()  # the killed job's backend now runs its UPDATE, finds its client gone and rolls back
        wait_for(
            f"the killed job's PostgreSQL backend {backend} to end",
            lambda: not _backend_alive(watch, backend),
            timeout=60,
        )
    finally:
        if job.running():
            job.kill()
        lock.close()
        watch.close()

    table = pg_catalog.load_table("faults.events")
    assert (table.current_snapshot().snapshot_id, table.metadata_location) == (snapshot_before, metadata_before)
    assert _ids(CATALOG, "faults.events") == list(range(100))
    left = _files_under(table_dir) - files_before
    kinds = {_kind(path.relative_to(table_dir)) for path in left}
    assert kinds == {"data", "manifest", "manifest list", "table metadata"}, sorted(map(str, left))

    orphans = [
        "remove-orphan-files",
        "--catalog",
        CATALOG,
        "--table",
        "faults.events",
        "--older-than",
        str(killed_ms),
        "--allow-short-retention",
    ]
    dry = maintain_job.main([*orphans, "--dry-run"])
    assert dry["orphan_file_locations"] == sorted(f"file://{path}" for path in left)
    assert _files_under(table_dir) - files_before == left
    removed = maintain_job.main(orphans)
    assert removed["deleted_orphan_files"] == len(left) and removed["files_failed"] == {}
    assert _files_under(table_dir) == files_before
    assert _ids(CATALOG, "faults.events") == list(range(100))

    # The retries run the job's code in this process (the fault needed a process of its own; they do not).
    first = ingest_job.main(args)
    assert not first["already_committed"] and first["rows_added"] == len(new_ids)
    assert first["snapshot_id"] != snapshot_before
    second = ingest_job.main(args)
    assert second["already_committed"] and second["snapshot_id"] == first["snapshot_id"]
    table = pg_catalog.load_table("faults.events")
    assert table.current_snapshot().snapshot_id == first["snapshot_id"] and len(table.snapshots()) == 2
    assert _ids(CATALOG, "faults.events") == list(range(100)) + new_ids
    assert _files_under(table_dir / "data") == {
        Path(task.file.file_path.removeprefix("file://")) for task in table.scan().plan_files()
    }


def _backend_alive(connection, pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,))
        return cursor.fetchone() is not None


def _kind(relative: Path) -> str:
    """What a table file is, by its path under the table location (data/ or metadata/) and its name."""
    if relative.parts[0] == "data":
        return "data"
    if relative.name.endswith(".metadata.json"):
        return "table metadata"
    if relative.name.startswith("snap-") and relative.suffix == ".avro":
        return "manifest list"
    if relative.suffix == ".avro":
        return "manifest"
    return f"unexpected file {relative}"
