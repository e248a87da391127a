"""The job's result and error lines are found in spark-submit's merged output, whatever the JVM prints around them."""

from __future__ import annotations

from airflow_iceberg_provider.job_output import JobOutput


def _read(lines: list[str]) -> JobOutput:
    output = JobOutput()
    for line in lines:
        output.add_line(line)
    return output


def test_the_result_is_the_last_json_object_even_with_jvm_lines_after_it() -> None:
    output = _read(
        [
            "26/11/22 01:27:39 INFO SparkContext: Running Spark version 4.2.0",
            '{"status":"ok","rows_out":1}',
            '{"status":"ok","rows_out":15}',
            "26/11/22 01:28:02 INFO ShutdownHookManager: Shutdown hook called",
        ]
    )
    assert output.result == {"status": "ok", "rows_out": 15}
    assert output.error_reason is None


def test_the_error_reason_is_the_text_after_the_prefix() -> None:
    output = _read(["Traceback (most recent call last):", "error: table 'a.b' not found in catalog 'c'", "INFO x"])
    assert output.error_reason == "table 'a.b' not found in catalog 'c'"
    assert output.result is None


def test_lines_that_only_look_like_json_are_ignored() -> None:
    output = _read(["{not json}", "[1, 2]", "{} trailing"])
    assert output.result is None
    assert list(output.tail) == ["{not json}", "[1, 2]", "{} trailing"]
