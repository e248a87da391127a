"""Failures judged by their kind: bad input (exit 2, one line naming what) or retryable (exit 1).

Spark's errors here are raised by the session's real Spark (the classes and SQLSTATEs of the installed version, 4.x
or 3.5); Arrow's and the OS's are the real exception types those libraries raise.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from spark_jobs.engine.shared.errors import CorruptFileError, UnsupportedFeatureError
from spark_jobs.engine.table.catalog import CatalogUnavailableError
from spark_jobs.job_contract import EXIT_FAILURE, EXIT_USAGE
from spark_jobs.job_failures import classify, clear_subject, set_subject, spark_error_states

pytestmark = pytest.mark.spark35


def _raised(action) -> BaseException:
    try:
        action()
    except Exception as error:  # the error under test
        return error
    raise AssertionError("nothing was raised")


@pytest.fixture(autouse=True)
def _no_subject():
    clear_subject()
    yield
    clear_subject()


@pytest.fixture(scope="module")
def ansi(spark):
    previous = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    yield spark
    spark.conf.set("spark.sql.ansi.enabled", previous)


@pytest.mark.spark
@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("SELECT cast(d AS decimal(5,2)) FROM VALUES ('123456.78') t(d)", ["NUMERIC_VALUE_OUT_OF_RANGE", "123456.78"]),
        ("SELECT cast(t AS timestamp) FROM VALUES ('not a time') t(t)", ["CAST_INVALID_INPUT", "not a time"]),
        ("SELECT cast(i AS int) / 0 FROM VALUES ('7') t(i)", ["DIVIDE_BY_ZERO"]),
        ("SELECT cast(i AS tinyint) FROM VALUES (1000) t(i)", ["CAST_OVERFLOW", "1000"]),
        ("SELECT element_at(array(1, 2), 5) FROM VALUES (1) t(i)", ["INVALID_ARRAY_INDEX"]),
    ],
    ids=["decimal-overflow", "malformed-timestamp", "divide-by-zero", "cast-overflow", "array-index"],
)
def test_a_value_spark_cannot_take_is_bad_input_naming_the_table_and_the_value(ansi, query, named) -> None:
    set_subject(table="db.events", source="/landing/a.csv")
    verdict = classify(_raised(lambda: ansi.sql(query).collect()), "ingest")
    assert verdict.exit_code == EXIT_USAGE, verdict
    assert verdict.reason.startswith("table db.events, source /landing/a.csv: "), verdict.reason
    for text in named:
        assert text in verdict.reason, verdict.reason
    assert "\n" not in verdict.reason and len(verdict.reason) <= 280
    assert "SQLSTATE" not in verdict.reason  # the class says it; Spark's advice to turn ANSI off is left out
    if "DIVIDE" not in query and "tinyint" not in query:  # Spark folds those constants: no position to give
        assert "(query line 1, position 8: " in verdict.reason  # where in the --sql query


@pytest.mark.spark
def test_a_malformed_csv_row_read_with_failfast_is_bad_input_naming_the_record(spark, tmp_path) -> None:
    source = tmp_path / "ragged.csv"
    source.write_text("a,b,c\n1,2,3\n4\n")
    read = spark.read.option("header", "true").option("mode", "FAILFAST").schema("a int, b int, c int")
    verdict = classify(_raised(lambda: read.csv(str(source)).collect()), "ingest")
    assert verdict.exit_code == EXIT_USAGE, verdict
    assert "MALFORMED" in verdict.reason


@pytest.mark.spark
def test_an_unknown_column_in_a_query_is_bad_input(spark) -> None:
    verdict = classify(_raised(lambda: spark.sql("SELECT nosuch FROM VALUES (1) t(i)").collect()), "ingest")
    assert verdict.exit_code == EXIT_USAGE
    assert "nosuch" in verdict.reason


def test_spark_s_own_error_classes_are_read_from_the_installed_spark() -> None:
    states = spark_error_states()
    assert states["NUMERIC_VALUE_OUT_OF_RANGE"] == "22003"
    assert states["CAST_INVALID_INPUT"] == "22018"


def test_a_class_named_only_in_text_gets_its_state_from_spark_s_file() -> None:
    # Spark 3.5 words a failure without its SQLSTATE; the class alone decides.
    error = RuntimeError(
        "An error occurred while calling o45.collectToPython.\n: org.apache.spark.SparkException: Job aborted due to "
        "stage failure: Task 0 in stage 2.0 failed 1 times, most recent failure: Lost task 0.0: "
        'org.apache.spark.SparkArithmeticException: [CAST_OVERFLOW] The value 1000 of the type "INT" cannot be '
        'cast to "TINYINT" due to an overflow.\n\tat org.apache.spark.sql.errors.X.y(X.scala:1)\n'
    )
    verdict = classify(error, "ingest")
    assert verdict.exit_code == EXIT_USAGE
    assert verdict.reason.startswith("[CAST_OVERFLOW] The value 1000")


def test_a_source_file_that_fails_for_a_network_reason_is_retryable() -> None:
    error = RuntimeError(
        "org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
        "s3a://b/k.csv.  SQLSTATE: KD001\n\tat org.apache.spark.X.y(X.scala:1)\n"
        "Caused by: java.net.SocketTimeoutException: Read timed out\n\tat java.net.Socket.read(Socket.java:1)\n"
    )
    assert classify(error, "ingest").exit_code == EXIT_FAILURE


def test_a_stack_frame_naming_a_network_class_is_not_a_network_failure() -> None:
    error = RuntimeError(
        "org.apache.spark.SparkException: [MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are "
        "detected in record parsing: [4,null,null].  SQLSTATE: 22023\n"
        "\tat java.net.SocketTimeoutException.<init>(SocketTimeoutException.java:1)\n"
    )
    assert classify(error, "ingest").exit_code == EXIT_USAGE


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (errno.ENAMETOOLONG, EXIT_USAGE),
        (errno.ENOTDIR, EXIT_USAGE),
        (errno.EACCES, EXIT_USAGE),
        (errno.ENOSPC, EXIT_FAILURE),
        (errno.EDQUOT, EXIT_FAILURE),
        (errno.EIO, EXIT_FAILURE),
        (errno.ECONNRESET, EXIT_FAILURE),
    ],
    ids=errno.errorcode.get,
)
def test_os_errors_by_their_errno(tmp_path: Path, number: int, expected: int) -> None:
    error = OSError(number, os.strerror(number), str(tmp_path / "f"))
    verdict = classify(error, "ingest")
    assert verdict.exit_code == expected
    if expected == EXIT_USAGE:
        assert str(tmp_path / "f") in verdict.reason


def test_a_real_name_too_long_is_bad_input(tmp_path: Path) -> None:
    error = _raised((tmp_path / ("x" * 300)).mkdir)
    set_subject(table="db." + "x" * 300)
    verdict = classify(error, "ingest")
    assert verdict.exit_code == EXIT_USAGE, verdict
    assert verdict.reason.startswith("table db.xxx") and "File name too long: " in verdict.reason, verdict.reason
    assert len(verdict.reason) <= 280


def test_a_full_disk_seen_by_an_executor_is_retryable() -> None:
    error = RuntimeError(
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/w/spark_jobs/spark/write.py", line 3, in write\n'
        "OSError: [Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device\n"
    )
    assert classify(error, "ingest").exit_code == EXIT_FAILURE


def test_arrow_errors_by_their_type() -> None:
    overflow = _raised(lambda: pc.cast(pa.array([123456.78]), pa.decimal128(5, 2)))
    assert type(overflow).__name__ == "ArrowInvalid"
    verdict = classify(overflow, "ingest")
    assert verdict.exit_code == EXIT_USAGE and verdict.reason.startswith("ArrowInvalid: ")
    assert classify(pa.ArrowMemoryError("cannot allocate"), "ingest").exit_code == EXIT_FAILURE


def test_an_arrow_error_raised_on_an_executor_is_bad_input() -> None:
    error = RuntimeError(
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/w/x.py", line 3, in f\n'
        "pyarrow.lib.ArrowInvalid: Rescaling Decimal128 value would cause data loss\n\tat org.X.y(X.java:1)\n"
    )
    verdict = classify(error, "ingest")
    assert verdict.exit_code == EXIT_USAGE and "Rescaling Decimal128" in verdict.reason


def test_the_engine_s_own_errors_decide_first() -> None:
    damaged = CorruptFileError("manifest /t/m.avro cannot be read, it is damaged")
    assert classify(damaged, "read").exit_code == EXIT_USAGE
    assert classify(UnsupportedFeatureError("variant columns"), "read").exit_code == EXIT_USAGE
    assert classify(CatalogUnavailableError("catalog 'c' is unreachable"), "read").exit_code == EXIT_FAILURE
    wrapped = RuntimeError("Job aborted\nspark_jobs.engine.shared.errors.CorruptFileError: data file /t/d is damaged")
    assert classify(wrapped, "read").reason == "data file /t/d is damaged"


def test_a_locked_catalog_is_retryable() -> None:
    import sqlalchemy

    engine = sqlalchemy.create_engine("sqlite://")
    error = sqlalchemy.exc.OperationalError("UPDATE t", {}, Exception("database is locked"))
    engine.dispose()
    assert classify(error, "ingest").exit_code == EXIT_FAILURE


def test_anything_else_stays_retryable() -> None:
    assert classify(RuntimeError("the executor went away"), "read").exit_code == EXIT_FAILURE
