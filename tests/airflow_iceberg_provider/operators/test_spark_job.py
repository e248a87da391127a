"""What every job operator shares: the submission it prepares, and how the job's exit code and lines become the task's
outcome (a real finished process stands in for spark-submit; the end-to-end runs are in the operators' own tests)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from airflow_iceberg_provider.airflow_compat import AirflowException
from airflow_iceberg_provider.hooks.spark_job import SparkJobSubmitHook
from airflow_iceberg_provider.job_contract import EXIT_USAGE
from airflow_iceberg_provider.operators.spark_job import (
    IcebergJobError,
    IcebergJobInputError,
    IcebergSparkJobOperator,
    column_list,
    flag_arguments,
    optional_text,
)


class ReadRows(IcebergSparkJobOperator):
    """The read job with a fixed argument list, to exercise the base class."""

    job = "read"

    def job_arguments(self, catalog_name: str, context) -> list[str]:
        return ["--catalog", catalog_name, "--table", self.table]


def test_the_submission_runs_the_jobs_script_with_its_arguments_then_the_callers() -> None:
    operator = ReadRows(task_id="read", catalog="lake", table="ns.t", application_args=["--split-size", "64"])
    operator.prepare_submission({})
    assert Path(operator.application).name == "read.py" and Path(operator.application).is_file()
    assert operator.application_args == ["--catalog", "lake", "--table", "ns.t", "--split-size", "64"]
    assert Path(operator.py_files).name.startswith("spark_jobs") and operator.py_files.endswith(".zip")
    assert operator.name == "iceberg-read-read"


def test_no_engine_zip_when_the_cluster_has_the_package_or_one_is_shipped_already() -> None:
    installed = ReadRows(task_id="read", catalog="lake", table="ns.t", ship_engine=False)
    installed.prepare_submission({})
    assert not installed.py_files
    shipped = ReadRows(task_id="read", catalog="lake", table="ns.t", py_files="/opt/spark_jobs-1.0.zip")
    shipped.prepare_submission({})
    assert shipped.py_files == "/opt/spark_jobs-1.0.zip"


def test_an_operator_needs_a_catalog_or_a_connection() -> None:
    with pytest.raises(ValueError, match=r"ReadRows on 'ns\.t' needs catalog= or iceberg_conn_id="):
        ReadRows(task_id="read", table="ns.t")


def _finished_hook(exit_code: int, lines: list[str], deploy_mode: str | None = None) -> SparkJobSubmitHook:
    hook = SparkJobSubmitHook(conn_id="spark_default")
    hook.deploy_mode = deploy_mode
    hook.submit_process = subprocess.Popen(["sh", "-c", f"exit {exit_code}"])
    hook.submit_process.wait()
    for line in lines:
        hook.job_output.add_line(line)
    return hook


@pytest.mark.parametrize(
    ("exit_code", "failure"), [(EXIT_USAGE, IcebergJobInputError), (1, IcebergJobError), (137, IcebergJobError)]
)
def test_a_failed_job_fails_the_task_with_its_reason_and_bad_input_is_not_retried(exit_code, failure) -> None:
    operator = ReadRows(task_id="read", catalog="lake", table="ns.t")
    lines = ["INFO starting", "error: table ns.t has no column 'x'", "INFO bye"]
    operator.submitted_hook = _finished_hook(exit_code, lines)
    raised = operator._job_failure(AirflowException("spark-submit failed"))
    assert type(raised) is failure
    assert str(raised) == "read job on ns.t failed: table ns.t has no column 'x'"


def test_without_an_error_line_the_failure_is_spark_submits_own() -> None:
    operator = ReadRows(task_id="read", catalog="lake", table="ns.t")
    operator.submitted_hook = _finished_hook(1, ["Exception in thread main"])
    original = AirflowException("Cannot execute: spark-submit ...")
    assert operator._job_failure(original) is original


def test_the_result_line_is_the_xcom_and_its_absence_fails_in_client_mode_only() -> None:
    operator = ReadRows(task_id="read", catalog="lake", table="ns.t")
    operator.submitted_hook = _finished_hook(0, ['{"status":"ok","job":"read","rows_out":3}', "INFO shutdown"])
    assert operator._job_result() == {"status": "ok", "job": "read", "rows_out": 3}
    operator.submitted_hook = _finished_hook(0, ["INFO shutdown"])
    with pytest.raises(IcebergJobError, match="printed no result line; output ended with:\nINFO shutdown"):
        operator._job_result()
    operator.submitted_hook = _finished_hook(0, ["INFO submitted"], deploy_mode="cluster")
    assert operator._job_result() is None


def test_rendered_arguments_become_flags_only_when_given() -> None:
    assert [optional_text(value) for value in (None, "", " None ", 0, " x ")] == [None, None, None, "0", "x"]
    assert flag_arguments([("--a", 1), ("--b", None), ("--c", "None"), ("--d", "v")]) == ["--a", "1", "--d", "v"]
    assert column_list(["id", " price ", ""]) == "id,price" and column_list("id,price") == "id,price"
    assert column_list([]) is None and column_list(None) is None
