"""The job contract helpers: usage errors, exit codes, the result line, and the engine zip for executors."""

from __future__ import annotations

import json
import zipfile

import pytest

from spark_jobs.engine.shared.errors import TableNotFoundError
from spark_jobs.job_support import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, JobArgumentParser, UsageError, engine_zip, run_job

pytestmark = pytest.mark.spark35


def test_argument_errors_raise_usage_error() -> None:
    parser = JobArgumentParser(prog="job")
    parser.add_argument("--table", required=True)
    with pytest.raises(UsageError, match="job: the following arguments are required: --table"):
        parser.parse_args([])


def test_success_prints_the_result_as_the_last_line(capsys) -> None:
    assert run_job("demo", lambda: {"status": "ok", "rows": 3}) == EXIT_OK
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {"status": "ok", "rows": 3}


def test_user_errors_exit_2_with_one_line(capsys) -> None:
    def body() -> dict:
        raise TableNotFoundError("catalog demo has no table ns.t;\n tables: ns.a")

    assert run_job("demo", body) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "error: catalog demo has no table ns.t; tables: ns.a"


def test_other_failures_exit_1_naming_the_job(capsys) -> None:
    def body() -> dict:
        raise RuntimeError("disk full")

    assert run_job("demo", body) == EXIT_FAILURE
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: demo job failed: RuntimeError: disk full"


def test_engine_zip_holds_the_whole_package() -> None:
    with zipfile.ZipFile(engine_zip()) as archive:
        names = set(archive.namelist())
    assert {"spark_jobs/__init__.py", "spark_jobs/read.py", "spark_jobs/engine/read/task_scan.py"} <= names
    assert any(name.startswith("spark_jobs/engine/parquet/") for name in names)
    sources = {name for name in names if name.endswith(".py")}
    assert names == sources | {name + "c" for name in sources}  # each module's bytecode beside it


@pytest.mark.spark
def test_a_job_leaves_a_session_it_did_not_start_running(spark) -> None:
    from spark_jobs.job_support import spark_session

    assert run_job("demo", lambda: {"session": spark_session("demo").sparkContext.appName}) == EXIT_OK
    assert spark.range(3).count() == 3


def test_the_engine_zip_is_built_in_a_private_directory_removed_at_exit() -> None:
    import stat
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import os, stat; from spark_jobs.job_support import engine_zip; z = engine_zip(); "
        "print(z); print(oct(stat.S_IMODE(os.stat(z.parent).st_mode))); print(z.exists())"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    path, mode, existed = done.stdout.split()
    assert Path(path).name == "spark_jobs.zip" and Path(path).parent.name.startswith("spark_jobs-")
    assert mode == "0o700" and existed == "True"
    assert not Path(path).parent.exists(), "the process's engine zip directory outlived it"
    assert stat.S_IMODE(engine_zip().parent.stat().st_mode) == 0o700


@pytest.mark.spark
def test_a_session_started_early_is_the_caller_s_running_session(spark) -> None:
    from spark_jobs.job_support import start_spark_session

    assert start_spark_session("demo")() is spark
    assert spark.range(3).count() == 3


def test_a_spark_start_that_fails_on_the_helper_thread_fails_the_caller_when_it_waits(monkeypatch) -> None:
    from pyspark.sql import SparkSession

    from spark_jobs import job_support

    def no_spark(app_name: str) -> None:
        raise RuntimeError(f"no JVM for {app_name}")

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(job_support, "spark_session", no_spark)
    wait = job_support.start_spark_session("demo")
    with pytest.raises(RuntimeError, match="no JVM for demo"):
        wait()


def test_a_new_session_talks_to_python_workers_over_a_unix_socket_unless_spark_submit_said_otherwise() -> None:
    from pyspark import SparkConf

    from spark_jobs.job_support import PYTHON_WORKER_UNIX_SOCKET_CONF, session_defaults

    submitted = SparkConf(loadDefaults=False)
    assert session_defaults(submitted, "4.2.0") == {PYTHON_WORKER_UNIX_SOCKET_CONF: "true"}
    assert session_defaults(submitted, "4.1.0.dev1") == {PYTHON_WORKER_UNIX_SOCKET_CONF: "true"}
    assert session_defaults(submitted, "4.0.1") == {}  # Spark before 4.1 has no such setting
    assert session_defaults(submitted, "3.5.9") == {}
    submitted.set(PYTHON_WORKER_UNIX_SOCKET_CONF, "false")
    assert session_defaults(submitted, "4.2.0") == {}  # spark-submit's --conf wins


def test_load_hints_once_per_session_at_a_setting_its_session_lacks(caplog, monkeypatch) -> None:
    import logging
    from types import SimpleNamespace

    import pyspark

    from spark_jobs import job_support

    def session(application_id: str, conf: dict[str, str]) -> SimpleNamespace:
        """What ``hint_session_defaults`` reads of a SparkSession: its application id and its configuration."""
        return SimpleNamespace(
            sparkContext=SimpleNamespace(applicationId=application_id),
            conf=SimpleNamespace(get=lambda key, default=None: conf.get(key, default)),
        )

    monkeypatch.setattr(pyspark, "__version__", "4.2.0")
    monkeypatch.setattr(job_support, "_DEFAULTS_HINTED_FOR", set())
    lacking = session("app-lacking", {})
    chosen = session("app-chosen", {job_support.PYTHON_WORKER_UNIX_SOCKET_CONF: "false"})
    with caplog.at_level(logging.INFO, logger="spark_jobs"):
        for spark in (lacking, lacking, chosen):
            job_support.hint_session_defaults(spark)
    hints = [record.getMessage() for record in caplog.records if "would make its reads faster" in record.getMessage()]
    assert len(hints) == 1, hints
    assert "app-lacking" in hints[0] and f"{job_support.PYTHON_WORKER_UNIX_SOCKET_CONF}=true" in hints[0]
