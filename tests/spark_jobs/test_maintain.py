"""The maintain job: expire-snapshots and remove-orphan-files through ``main`` and as a real ``spark-submit``."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from spark_jobs import maintain as maintain_job
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.job_contract import missing_result_fields
from spark_jobs.job_support import EXIT_OK, EXIT_USAGE
from tests.support.services import spark_home, spark_process_env
from tests.support.table_history import build_table_history

pytestmark = pytest.mark.spark35

REPO_ROOT = Path(__file__).resolve().parents[2]
MAINTAIN_PY = REPO_ROOT / "spark_jobs" / "maintain.py"
TABLE = ["--catalog", "test", "--table", "maint.events"]


@pytest.fixture
def history(sql_catalog, tmp_path, monkeypatch):
    """The history table in the ``test`` catalog, which the job finds through pyiceberg's configuration."""
    monkeypatch.setenv("PYICEBERG_CATALOG__TEST__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__TEST__URI", f"sqlite:///{tmp_path}/catalog.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__TEST__WAREHOUSE", f"file://{tmp_path}/warehouse")
    return build_table_history(sql_catalog)


def _future() -> str:
    return str(int(time.time() * 1000) + 60_000)


def test_expire_snapshots_keeps_the_last_two_and_their_reads(history, sql_catalog):
    ids = history.snapshot_ids
    result = maintain_job.main(["expire-snapshots", *TABLE, "--older-than", _future(), "--retain-last", "2"])
    assert (result["job"], result["action"], result["dry_run"]) == ("maintain", "expire-snapshots", False)
    assert missing_result_fields(result) == []
    assert result["expired_snapshot_ids"] == ids[:5]
    assert (result["deleted_data_files"], result["deleted_manifest_lists"]) == (2, 5)
    assert result["files_failed"] == {}
    for snapshot_id in ids[5:]:
        rows = open_read_session(sql_catalog, "maint.events", snapshot_id=snapshot_id).to_arrow().num_rows
        assert rows == history.rows_per_snapshot[snapshot_id]
    with pytest.raises(UserInputError, match="snapshot id"):
        open_read_session(sql_catalog, "maint.events", snapshot_id=ids[0])


def test_expire_snapshots_dry_run_deletes_nothing(history, sql_catalog):
    files_before = sorted(p for p in history.directory.rglob("*") if p.is_file())
    result = maintain_job.main(
        ["expire-snapshots", *TABLE, "--older-than", _future(), "--retain-last", "2", "--dry-run"]
    )
    assert result["dry_run"] is True and result["expired_snapshot_ids"] == history.snapshot_ids[:5]
    assert result["deleted_data_files"] == 2  # what a real run would delete
    assert sorted(p for p in history.directory.rglob("*") if p.is_file()) == files_before
    assert len(sql_catalog.load_table("maint.events").snapshots()) == 7


def test_iso_older_than_and_java_default_of_five_days(history):
    result = maintain_job.main(["expire-snapshots", *TABLE, "--dry-run"])
    assert result["expired_snapshot_ids"] == []  # nothing is five days old
    result = maintain_job.main(["expire-snapshots", *TABLE, "--older-than", "2999-01-01T00:00:00", "--dry-run"])
    assert result["expired_snapshot_ids"] == history.snapshot_ids[:6]  # retain-last defaults to 1


def test_remove_orphan_files_finds_planted_files(history):
    planted = history.directory / "data" / "left-by-a-failed-write.parquet"
    planted.write_bytes(b"orphan")
    old = time.time() - 4 * 24 * 60 * 60
    os.utime(planted, (old, old))
    dry = maintain_job.main(["remove-orphan-files", *TABLE, "--dry-run"])
    assert dry["orphan_file_locations"] == [f"file://{planted}"] and planted.exists()
    done = maintain_job.main(["remove-orphan-files", *TABLE])
    assert done["deleted_orphan_files"] == 1 and not planted.exists()
    short = ["remove-orphan-files", *TABLE, "--older-than", _future(), "--allow-short-retention"]
    assert maintain_job.main(short)["orphan_files"] == 0


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ([], "the following arguments are required: ACTION"),
        (["vacuum", *TABLE], "invalid choice: 'vacuum'"),
        (["expire-snapshots", "--table", "maint.events"], "the following arguments are required: --catalog"),
        (["expire-snapshots", *TABLE, "--older-than", "yesterday"], "neither epoch milliseconds nor an ISO-8601"),
        (["expire-snapshots", *TABLE, "--retain-last", "0"], "retain-last must be at least 1"),
        (["remove-orphan-files", "--catalog", "test", "--table", "maint.missing"], "maint.missing"),
        (["remove-orphan-files", *TABLE, "--older-than", _future()], "less than 24 hours ago.*--allow-short-retention"),
    ],
)
def test_bad_input_is_a_user_error(history, args, reason):
    with pytest.raises(UserInputError, match=reason):
        maintain_job.main(args)


@pytest.mark.spark
def test_spark_submit_expire_and_orphans(history, sql_catalog):
    def submit(args: list[str]) -> subprocess.CompletedProcess:
        command = [
            str(spark_home() / "bin" / "spark-submit"),
            "--master",
            "local[1]",
            "--conf",
            "spark.ui.enabled=false",
            str(MAINTAIN_PY),
            *args,
        ]
        return subprocess.run(
            command, env=spark_process_env(), capture_output=True, text=True, timeout=600, check=False
        )

    done = submit(["expire-snapshots", *TABLE, "--older-than", _future(), "--retain-last", "3"])
    assert done.returncode == EXIT_OK, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["expired_snapshot_ids"] == history.snapshot_ids[:4]
    assert len(sql_catalog.load_table("maint.events").snapshots()) == 3
    bad = submit(["remove-orphan-files", *TABLE, "--older-than", "soon"])
    assert bad.returncode == EXIT_USAGE
    reasons = [line for line in (bad.stdout + bad.stderr).splitlines() if line.startswith("error: ")]
    assert len(reasons) == 1 and "soon" in reasons[0]
