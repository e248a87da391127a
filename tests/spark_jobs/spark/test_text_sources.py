"""CSV and JSON sources read strictly by default: a malformed row fails the ingest with exit 2 naming the table, the
file, the line and what was expected, and commits nothing; ``--source-mode permissive`` and ``dropmalformed`` keep
or drop such rows and count them in the result.

Each case runs the ingest job through ``run_job`` in this process (the session's Spark), as spark-submit would, on
a real table of the session's ``testing`` catalog; the S3 case reads its files through pyarrow on the executors
(SeaweedFS), the route a Spark without a Hadoop S3 connector takes.
"""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import ingest as ingest_job
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.job_contract import EXIT_OK, EXIT_USAGE
from spark_jobs.job_support import run_job
from tests.support.object_store import catalog_env

pytestmark = [pytest.mark.spark, pytest.mark.spark35, pytest.mark.usefixtures("spark")]

_names = itertools.count()
HEADER = "id,name,score,day\n"


def _ingest(argv: list[str], capsys) -> tuple[int, list[str], dict | None]:
    import json

    capsys.readouterr()
    code = run_job("ingest", lambda: ingest_job.main(argv))
    seen = capsys.readouterr()
    errors = [line[line.index("error: ") :] for line in seen.err.splitlines() if "error: " in line]
    result = json.loads(seen.out.strip().splitlines()[-1]) if code == EXIT_OK else None
    return code, errors, result


def _argv(table: str, source: Path | str, source_format: str, *extra: str) -> list[str]:
    return ["--catalog", "testing", "--table", table, "--source", str(source), "--source-format", source_format,
            "--mode", "append", *extra]  # fmt: skip


def _table(testing_catalog, schema: pa.Schema) -> str:
    testing_catalog.create_namespace_if_not_exists("sources")
    identifier = f"sources.t{next(_names)}"
    testing_catalog.create_table(identifier, schema, properties={"format-version": "2"})
    return identifier


def _rows(identifier: str) -> list[dict]:
    return sorted(open_read_session("testing", identifier).to_arrow().to_pylist(), key=lambda r: str(r["id"]))


def _assert_refused(code: int, errors: list[str], *named: str) -> None:
    assert code == EXIT_USAGE, errors
    assert len(errors) == 1 and len(errors[0]) < 300, errors
    for text in named:
        assert text in errors[0], f"{text!r} not in {errors[0]}"


SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("day", pa.date32())])


@pytest.mark.parametrize(
    ("bad_row", "named"),
    [
        ("4\n", ["line 3", "'4'", "1 field(s), expected 4 (id, name, score, day)"]),
        ("4,d,1.0,2024-01-04,surplus\n", ["line 3", "5 field(s), expected 4"]),
        ("4,d,not-a-number,2024-01-04\n", ["line 3", "column 'score' is 'not-a-number', expected double"]),
        ("4,d,1.0,2024-13-45\n", ["line 3", "column 'day'", "expected date"]),
    ],
    ids=["missing-fields", "extra-fields", "value-not-of-the-column-type", "malformed-date"],
)
def test_a_malformed_csv_row_fails_naming_its_file_and_line_and_commits_nothing(
    testing_catalog, tmp_path, capsys, bad_row, named
) -> None:
    identifier = _table(testing_catalog, SCHEMA)
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.csv").write_text(HEADER + "1,a,1.5,2024-01-01\n2,b,2.5,2024-01-02\n")
    (source / "b.csv").write_text(HEADER + "3,c,3.5,2024-01-03\n" + bad_row + "5,e,5.5,2024-01-05\n")
    code, errors, _ = _ingest(_argv(identifier, source, "csv"), capsys)
    _assert_refused(code, errors, f"table {identifier}", f"{source / 'b.csv'}", *named, "--source-mode permissive")
    assert testing_catalog.load_table(identifier).current_snapshot() is None


def test_permissive_keeps_malformed_rows_with_nulls_and_dropmalformed_leaves_them_out(
    testing_catalog, tmp_path, capsys
) -> None:
    source = tmp_path / "ragged.csv"
    source.write_text(HEADER + "1,a,1.5,2024-01-01\n2\n3,c,x,2024-01-03\n4,d,4.5,2024-01-04,surplus\n")
    kept = _table(testing_catalog, SCHEMA)
    code, errors, result = _ingest(_argv(kept, source, "csv", "--source-mode", "permissive"), capsys)
    assert code == EXIT_OK, errors
    assert result["malformed_rows"] == 3 and result["source_mode"] == "permissive" and result["rows_added"] == 4
    rows = _rows(kept)
    assert [(r["id"], r["score"]) for r in rows] == [(1, 1.5), (2, None), (3, None), (4, 4.5)]
    dropped = _table(testing_catalog, SCHEMA)
    code, errors, result = _ingest(_argv(dropped, source, "csv", "--source-mode", "dropmalformed"), capsys)
    assert code == EXIT_OK, errors
    assert result["malformed_rows"] == 3 and result["rows_added"] == 1
    assert [r["id"] for r in _rows(dropped)] == [1]


def test_a_well_formed_source_reports_no_malformed_rows(testing_catalog, tmp_path, capsys) -> None:
    identifier = _table(testing_catalog, SCHEMA)
    source = tmp_path / "good.csv"
    source.write_text(HEADER + "1,a,1.5,2024-01-01\n")
    code, errors, result = _ingest(_argv(identifier, source, "csv"), capsys)
    assert code == EXIT_OK, errors
    assert result["malformed_rows"] == 0 and result["source_mode"] == "failfast" and result["rows_added"] == 1


@pytest.mark.parametrize(
    ("lines", "named"),
    [
        ('{"id": 1, "name": "a"}\n{"id": 2, "name":\n', ["line 2", "not valid JSON"]),
        ('{"id": 1, "name": "a"}\n\n[1, 2]\n', ["line 3", "a JSON list, expected an object"]),
        ('{"id": 1, "name": "a"}\n{"id": "two", "name": "b"}\n', ["line 2", "column 'id' is 'two', expected bigint"]),
    ],
    ids=["truncated", "not-an-object", "value-not-of-the-column-type"],
)
def test_a_malformed_json_line_fails_naming_its_file_and_line(testing_catalog, tmp_path, capsys, lines, named) -> None:
    identifier = _table(testing_catalog, pa.schema([("id", pa.int64()), ("name", pa.string())]))
    source = tmp_path / "events.json"
    source.write_text(lines)
    code, errors, _ = _ingest(_argv(identifier, source, "json"), capsys)
    _assert_refused(code, errors, f"table {identifier}", str(source), *named)
    assert testing_catalog.load_table(identifier).current_snapshot() is None


def test_a_json_line_counted_in_permissive_mode(testing_catalog, tmp_path, capsys) -> None:
    identifier = _table(testing_catalog, pa.schema([("id", pa.int64()), ("name", pa.string())]))
    source = tmp_path / "events.json"
    source.write_text('{"id": 1, "name": "a"}\n{"id": 2, "name":\n{"id": 3, "name": "c"}\n')
    code, errors, result = _ingest(_argv(identifier, source, "json", "--source-mode", "permissive"), capsys)
    assert code == EXIT_OK, errors
    assert result["malformed_rows"] == 1 and result["rows_added"] == 3


def test_a_file_that_is_not_json_at_all_names_its_first_line(testing_catalog, tmp_path, capsys) -> None:
    identifier = _table(testing_catalog, pa.schema([("id", pa.int64())]))
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), source / "part-0.parquet")
    code, errors, _ = _ingest(_argv(identifier, source, "json"), capsys)
    _assert_refused(code, errors, "part-0.parquet", "line 1", "malformed JSON row")


def test_a_decimal_beyond_the_table_s_precision_is_a_malformed_row(testing_catalog, tmp_path, capsys) -> None:
    identifier = _table(testing_catalog, pa.schema([("id", pa.int64()), ("amount", pa.decimal128(5, 2))]))
    source = tmp_path / "amounts.csv"
    source.write_text("id,amount\n1,12.50\n2,123456.78\n")
    code, errors, _ = _ingest(_argv(identifier, source, "csv"), capsys)
    _assert_refused(code, errors, str(source), "line 3", "'amount'", "123456.78", "decimal(5,2)")


def test_a_created_table_takes_the_inferred_types_and_still_refuses_ragged_rows(
    testing_catalog, tmp_path, capsys
) -> None:
    identifier = f"sources.created{next(_names)}"
    source = tmp_path / "new.csv"
    source.write_text("id,name\n1,a\n2,b,c\n")
    code, errors, _ = _ingest(_argv(identifier, source, "csv", "--create-if-missing"), capsys)
    _assert_refused(code, errors, "line 3", "3 field(s), expected 2 (id, name)")


def test_times_parse_strictly_unless_the_session_chose_its_own_policy(spark, tmp_path) -> None:
    """Spark 3.5's default policy would fail the whole read on ``2024-13-45`` (a cross-version warning, no line);
    a policy the session set itself stays."""
    from spark_jobs.spark.text_sources import TIME_PARSER_POLICY, read_text_source

    source = tmp_path / "days.csv"
    source.write_text("id,day\n1,2024-01-05\n")
    previous = spark.conf.get(TIME_PARSER_POLICY, None)
    try:
        spark.conf.set(TIME_PARSER_POLICY, "LEGACY")
        read_text_source(spark, str(source), "csv", {})
        assert spark.conf.get(TIME_PARSER_POLICY) == "LEGACY"
        spark.conf.set(TIME_PARSER_POLICY, "EXCEPTION")
        read_text_source(spark, str(source), "csv", {})
        assert spark.conf.get(TIME_PARSER_POLICY) == "CORRECTED"
    finally:
        if previous is None:
            spark.conf.unset(TIME_PARSER_POLICY)
        else:
            spark.conf.set(TIME_PARSER_POLICY, previous)


@pytest.mark.s3
def test_a_malformed_row_on_an_object_store_is_named_too(testing_catalog, seaweedfs, monkeypatch, capsys) -> None:
    # The testing catalog's storage properties reach the S3 source: its FileIO properties point at SeaweedFS.
    for name, value in catalog_env("testing", seaweedfs.s3_properties()).items():
        monkeypatch.setenv(name, value)
    folder = f"landing/strict-{uuid.uuid4().hex[:12]}"
    with seaweedfs.filesystem().open_output_stream(f"{folder}/a.csv") as stream:
        stream.write((HEADER + "1,a,1.5,2024-01-01\n2,b\n").encode())
    identifier = _table(testing_catalog, SCHEMA)
    code, errors, _ = _ingest(_argv(identifier, f"s3://{folder}", "csv"), capsys)
    _assert_refused(code, errors, f"s3://{folder}/a.csv", "line 3", "2 field(s), expected 4")
    code, errors, result = _ingest(_argv(identifier, f"s3://{folder}", "csv", "--source-mode", "permissive"), capsys)
    assert code == EXIT_OK, errors
    assert result["malformed_rows"] == 1 and result["rows_added"] == 2
