"""Bad input exits 2 with one line under 300 characters that names the table, file, argument or statement.

Each job runs through ``run_job`` in this process (the shared local Spark session where it needs Spark), as
spark-submit would run it, so the exit code and the ``error:`` line are the ones Airflow sees. Corrupt metadata and
data files are made by damaging real files of a real table: a manifest overwritten in its middle, a manifest list
cut in half, a data page zeroed, a data file cut in half, a delete file removed.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import compact as compact_job
from spark_jobs import ingest as ingest_job
from spark_jobs import maintain as maintain_job
from spark_jobs import read as read_job
from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.job_support import EXIT_FAILURE, EXIT_USAGE, run_job
from tests.support.rewrite_tables import position_delete_change

pytestmark = pytest.mark.spark35

_names = itertools.count()
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("category", pa.string())])


def _local(location: str) -> Path:
    return Path(urlparse(location).path)


def _run(job: str, main, argv: list[str], capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = run_job(job, lambda: main(argv))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    return code, lines


def _assert_bad_input(code: int, lines: list[str], *named: str) -> None:
    assert code == EXIT_USAGE, f"exit code {code}, lines {lines}"
    assert len(lines) == 1, lines
    assert len(lines[0]) < 300, f"{len(lines[0])} characters: {lines[0]}"
    for text in named:
        assert text in lines[0], f"{text!r} not named in: {lines[0]}"


def _table(testing_catalog, files: int = 2):
    """A fresh format v2 table in the session's ``testing`` catalog, one data file per append."""
    identifier = f"bad_inputs.t{next(_names)}"
    testing_catalog.create_namespace_if_not_exists("bad_inputs")
    table = testing_catalog.create_table(identifier, SCHEMA, properties={"format-version": "2"})
    for index in range(files):
        ids = pa.array(range(index * 100, index * 100 + 100), pa.int64())
        table.append(pa.table({"id": ids, "category": ["ab"[index % 2]] * 100}, schema=SCHEMA))
    return table, identifier


def _read_argv(identifier: str, tmp_path: Path) -> list[str]:
    return ["--catalog", "testing", "--table", identifier, "--output", str(tmp_path / "out")]


@pytest.mark.parametrize(
    ("job", "main", "argv"),
    [
        ("read", read_job.main, ["--catalog", "testing", "--table", "db..t", "--output", "/tmp/x"]),
        ("compact", compact_job.main, ["--catalog", "testing", "--table", "db..t", "--dry-run"]),
        ("maintain", maintain_job.main, ["expire-snapshots", "--catalog", "testing", "--table", "db..t"]),
        ("read", read_job.main, ["--catalog", "testing", "--table", ".t", "--output", "/tmp/x"]),
    ],
)
def test_a_table_identifier_with_an_empty_part(job, main, argv, capsys) -> None:
    code, lines = _run(job, main, argv, capsys)
    _assert_bad_input(code, lines, argv[argv.index("--table") + 1], "namespace.table")


def test_a_corrupted_manifest_is_named(testing_catalog, tmp_path, capsys) -> None:
    table, identifier = _table(testing_catalog)
    manifest = _local(table.current_snapshot().manifests(table.io)[0].manifest_path)
    content = bytearray(manifest.read_bytes())
    middle = len(content) // 2
    content[middle : middle + 64] = b"\xff" * 64
    manifest.write_bytes(bytes(content))
    code, lines = _run("read", read_job.main, _read_argv(identifier, tmp_path), capsys)
    _assert_bad_input(code, lines, manifest.name, "manifest")
    assert not (tmp_path / "out").exists()


def test_a_truncated_manifest_list_is_named(testing_catalog, tmp_path, capsys) -> None:
    table, identifier = _table(testing_catalog)
    manifest_list = _local(table.current_snapshot().manifest_list)
    manifest_list.write_bytes(manifest_list.read_bytes()[: manifest_list.stat().st_size // 2])
    code, lines = _run("read", read_job.main, _read_argv(identifier, tmp_path), capsys)
    _assert_bad_input(code, lines, manifest_list.name, "manifest list")


def _first_data_file(table) -> Path:
    return _local(next(iter(table.scan().plan_files())).file.file_path)


@pytest.mark.spark
def test_a_zeroed_data_page_is_named(spark, testing_catalog, tmp_path, capsys) -> None:
    table, identifier = _table(testing_catalog)
    data_file = _first_data_file(table)
    column = pq.ParquetFile(data_file).metadata.row_group(0).column(0)
    content = bytearray(data_file.read_bytes())
    chunk_start = column.dictionary_page_offset or column.data_page_offset
    start, end = column.data_page_offset, chunk_start + column.total_compressed_size
    content[start:end] = bytes(end - start)  # the data page, header included; the footer stays intact
    data_file.write_bytes(bytes(content))
    code, lines = _run("read", read_job.main, _read_argv(identifier, tmp_path), capsys)
    _assert_bad_input(code, lines, data_file.name, "data file")
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_a_truncated_data_file_is_named(spark, testing_catalog, tmp_path, capsys) -> None:
    table, identifier = _table(testing_catalog)
    data_file = _first_data_file(table)
    data_file.write_bytes(data_file.read_bytes()[: data_file.stat().st_size // 2])
    code, lines = _run("read", read_job.main, _read_argv(identifier, tmp_path), capsys)
    _assert_bad_input(code, lines, data_file.name, "data file")


@pytest.mark.spark
def test_a_missing_delete_file_is_named(spark, testing_catalog, tmp_path, capsys) -> None:
    table, identifier = _table(testing_catalog)
    change = position_delete_change(table, {3, 150}, "bad-input")
    commit_change(table, change)
    delete_file = _local(change.added_delete_files[0].file_path)
    os.remove(delete_file)
    code, lines = _run("read", read_job.main, _read_argv(identifier, tmp_path), capsys)
    _assert_bad_input(code, lines, delete_file.name, "delete file")


@pytest.mark.spark
def test_a_corrupt_parquet_source_is_named(spark, testing_catalog, tmp_path, capsys) -> None:
    _, identifier = _table(testing_catalog, files=1)
    source = tmp_path / "source"
    source.mkdir()
    pq.write_table(
        pa.table({"id": pa.array([1000], pa.int64()), "category": ["a"]}, schema=SCHEMA), source / "a.parquet"
    )
    (source / "b.parquet").write_bytes(b"PAR1" + os.urandom(200) + b"PAR1")
    argv = ["--catalog", "testing", "--table", identifier, "--source", str(source), "--mode", "append"]
    code, lines = _run("ingest", ingest_job.main, argv, capsys)
    _assert_bad_input(code, lines, "b.parquet")


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize(
    ("source_format", "mode"),
    [("parquet", "append"), ("csv", "append"), ("parquet", "upsert")],
    ids=["parquet-files-append", "csv-append", "parquet-upsert"],
)
def test_nulls_in_a_required_column_name_the_table_the_source_and_the_column(
    testing_catalog, tmp_path, capsys, source_format, mode
) -> None:
    """Each way the ingest finds them (Parquet footers, Spark's count, the upsert's key groups): one line naming the
    table, the source and the column with its null rows."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    testing_catalog.create_namespace_if_not_exists("bad_inputs")
    identifier = f"bad_inputs.required{next(_names)}"
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "category", StringType(), required=True)
    )
    testing_catalog.create_table(identifier, schema, properties={"format-version": "2"})
    source = tmp_path / "source"
    source.mkdir()
    if source_format == "csv":
        (source / "rows.csv").write_text("id,category\n1,a\n2,\n3,\n")
    else:
        rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "category": ["a", None, None]})
        pq.write_table(rows, source / "rows.parquet")
    argv = ["--catalog", "testing", "--table", identifier, "--source", str(source), "--source-format", source_format,
            "--mode", mode, *(["--key", "id"] if mode == "upsert" else [])]  # fmt: skip
    code, lines = _run("ingest", ingest_job.main, argv, capsys)
    _assert_bad_input(code, lines, identifier, str(source), "'category' in 2 row(s)")
    assert testing_catalog.load_table(identifier).current_snapshot() is None


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("ADD JAR /tmp/evil.jar", "ADD JAR"),
        ("SET spark.sql.ansi.enabled=false", "SET"),
        ("CREATE TABLE x AS SELECT * FROM source", "CREATE"),
        ("INSERT INTO source SELECT * FROM source", "INSERT"),
        ("SELECT * FROM source; SELECT 1", "SELECT"),
        ("SELECT * FROM parquet.`/etc`", "/etc"),
        ("SELECT reflect('java.lang.System', 'getenv', 'HOME') AS id FROM source", "reflect"),
        ("SELECT * FROM source WHERE id IN (SELECT id FROM json.`/tmp`)", "/tmp"),
    ],
    ids=["add-jar", "set", "create", "insert", "two-statements", "another-path", "reflect", "path-in-subquery"],
)
def test_sql_accepts_one_query_over_the_source_only(testing_catalog, tmp_path, capsys, sql, named) -> None:
    table, identifier = _table(testing_catalog, files=1)
    source = tmp_path / "source"
    source.mkdir()
    pq.write_table(
        pa.table({"id": pa.array([1000], pa.int64()), "category": ["a"]}, schema=SCHEMA), source / "a.parquet"
    )
    before = table.current_snapshot().snapshot_id
    argv = ["--catalog", "testing", "--table", identifier, "--source", str(source), "--mode", "append", "--sql", sql]
    code, lines = _run("ingest", ingest_job.main, argv, capsys)
    _assert_bad_input(code, lines, "--sql", named)
    assert testing_catalog.load_table(identifier).current_snapshot().snapshot_id == before


@pytest.mark.spark
def test_a_query_over_the_source_is_accepted(spark, testing_catalog, tmp_path) -> None:
    _, identifier = _table(testing_catalog, files=1)
    source = tmp_path / "source"
    source.mkdir()
    pq.write_table(
        pa.table({"id": pa.array([7, 8], pa.int64()), "category": ["a", "b"]}, schema=SCHEMA), source / "a.parquet"
    )
    sql = "WITH s AS (SELECT * FROM source) SELECT id + 1000 AS id, upper(category) AS category FROM s WHERE id > 7"
    argv = ["--catalog", "testing", "--table", identifier, "--source", str(source), "--mode", "append", "--sql", sql]
    assert ingest_job.main(argv)["rows_added"] == 1


def test_already_exists_in_a_message_is_not_bad_input_by_itself(capsys) -> None:
    def body() -> dict:
        raise RuntimeError("the path /tmp/x already exists in the staging area")

    assert run_job("demo", body) == EXIT_FAILURE


def _files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*")}


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize(
    "case",
    [
        ("bad_inputs." + "x" * 300, ["--table", "the table 'xxx", "300 bytes", "255 bytes", "choose a shorter name"]),
        ("bad_inputs.t" + "é" * 128, ["--table", "257 bytes", "choose a shorter name"]),
        ("bad\x01inputs.t", ["--table 'bad\\x01inputs.t'", "namespace name 'bad\\x01inputs'", "U+0001"]),
        ("bad_inputs.line\nbreak", ["--table 'bad_inputs.line\\nbreak'", "table name 'line\\nbreak'", "U+000A"]),
    ],
    ids=["300-characters", "multibyte-beyond-255-bytes", "control-in-namespace", "newline-in-table"],
)
def test_a_table_name_the_storage_cannot_hold_is_refused_before_anything_is_written(
    testing_catalog, session_tmp, tmp_path, capsys, case
) -> None:
    identifier, named = case
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "category": ["a"]}, schema=SCHEMA), source / "a.parquet")
    warehouse = session_tmp / "testing-warehouse"
    before = _files_under(warehouse)
    namespaces = testing_catalog.list_namespaces()
    argv = ["--catalog", "testing", "--table", identifier, "--source", str(source), "--mode", "append",
            "--create-if-missing"]  # fmt: skip
    code, lines = _run("ingest", ingest_job.main, argv, capsys)
    _assert_bad_input(code, lines, *named)
    assert "\n" not in lines[0][:-1] and "\x01" not in lines[0] and not lines[0].endswith("...")
    assert _files_under(warehouse) == before and testing_catalog.list_namespaces() == namespaces


def test_reading_a_table_named_with_a_control_character_is_refused(tmp_path, capsys) -> None:
    argv = ["--catalog", "testing", "--table", "bad_inputs.t\x07", "--output", str(tmp_path / "out")]
    code, lines = _run("read", read_job.main, argv, capsys)
    _assert_bad_input(code, lines, "--table", "U+0007")
