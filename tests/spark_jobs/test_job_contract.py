"""The job side of the contract: the error line, and the fields a job's result line must hold."""

from __future__ import annotations

from spark_jobs.job_contract import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, RESULT_FIELDS, error_line, missing_result_fields


def test_exit_codes_are_distinct_and_the_error_line_has_its_prefix() -> None:
    assert len({EXIT_OK, EXIT_FAILURE, EXIT_USAGE}) == 3 and EXIT_OK == 0
    assert error_line("table ns.t not found") == "error: table ns.t not found"


def test_every_result_names_its_job_status_and_seconds() -> None:
    for fields in RESULT_FIELDS.values():
        assert {"status", "job", "seconds"} <= fields


def test_a_result_missing_a_promised_field_is_named() -> None:
    assert missing_result_fields({"status": "ok", "job": "read", "seconds": {}}) == sorted(
        RESULT_FIELDS["read"] - {"status", "job", "seconds"}
    )
    complete = dict.fromkeys(RESULT_FIELDS["maintain"], None) | {"job": "maintain", "extra": 1}
    assert missing_result_fields(complete) == []
    assert missing_result_fields({"status": "ok", "seconds": {}}) == ["job"]
    assert missing_result_fields({"status": "ok", "job": "vacuum", "seconds": {}}) == ["job"]
