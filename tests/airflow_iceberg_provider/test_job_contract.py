"""The Airflow side's statement of the contract agrees with the job side's, and what a job prints is read as meant
(exit codes, the ``error:`` line, the final JSON line and its fields per job)."""

from __future__ import annotations

import pytest

from airflow_iceberg_provider import job_contract as airflow_side
from airflow_iceberg_provider.job_output import JobOutput
from spark_jobs import job_contract as job_side
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.job_support import run_job


def test_both_sides_state_the_same_exit_codes_error_prefix_and_status() -> None:
    assert (airflow_side.EXIT_OK, airflow_side.EXIT_USAGE) == (job_side.EXIT_OK, job_side.EXIT_USAGE)
    assert job_side.EXIT_FAILURE not in (airflow_side.EXIT_OK, airflow_side.EXIT_USAGE)
    assert airflow_side.ERROR_PREFIX == job_side.ERROR_PREFIX
    assert airflow_side.RESULT_STATUS == job_side.RESULT_STATUS


def test_both_sides_expect_the_same_result_fields_of_every_job() -> None:
    assert set(airflow_side.RESULT_FIELDS) == set(job_side.RESULT_FIELDS) == {"ingest", "read", "compact", "maintain"}
    for job, fields in job_side.RESULT_FIELDS.items():
        assert airflow_side.RESULT_FIELDS[job] == fields, job
    assert airflow_side.PARTITION_CHANGE_FIELDS == job_side.PARTITION_CHANGE_FIELDS


def _output(text: str) -> JobOutput:
    output = JobOutput()
    for line in text.splitlines():
        output.add_line(line)
    return output


def test_a_result_the_job_prints_is_what_the_airflow_side_reads(capsys) -> None:
    result = {"status": "ok", "job": "maintain", "action": "expire-snapshots", "table": "ns.t", "dry_run": True}
    result |= {"snapshot_id": 7, "commit_reports": [], "seconds": {"expire-snapshots": 0.1}}
    assert job_side.missing_result_fields(result) == []
    exit_code = run_job("maintain", lambda: result)
    printed = capsys.readouterr()
    output = _output(printed.err + "\nsome JVM line after the result\n" + printed.out)
    assert exit_code == airflow_side.EXIT_OK
    assert output.result == result and output.error_reason is None


@pytest.mark.parametrize(
    ("error", "exit_code", "reason"),
    [
        (UserInputError("table ns.t has no column 'x'"), airflow_side.EXIT_USAGE, "table ns.t has no column 'x'"),
        (RuntimeError("executor lost"), job_side.EXIT_FAILURE, "read job failed: RuntimeError: executor lost"),
    ],
)
def test_a_failure_the_job_reports_is_what_the_airflow_side_reads(capsys, error, exit_code, reason) -> None:
    def body() -> dict:
        raise error

    assert run_job("read", body) == exit_code
    printed = capsys.readouterr()
    output = _output(printed.out + printed.err + "\nINFO ShutdownHookManager: Shutdown hook called\n")
    assert output.error_reason == reason and output.result is None
    retried = exit_code != airflow_side.EXIT_USAGE
    assert retried is (error.__class__ is RuntimeError)


def test_both_sides_name_the_same_timed_scan_stages_and_the_scan_counts_them() -> None:
    from dataclasses import fields

    from spark_jobs.engine.shared.metrics import SCAN_TIME_STAGES, ScanMetrics

    assert airflow_side.SCAN_TIME_STAGES == job_side.SCAN_TIME_STAGES == SCAN_TIME_STAGES
    counters = {f.name for f in fields(ScanMetrics)}
    assert {f"{stage}_time_ns" for stage in SCAN_TIME_STAGES} <= counters
