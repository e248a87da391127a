"""The read job's ``--output``: fenced off table and warehouse locations, and written whole or not at all.

The fence runs before Spark starts, so those cases cost no Spark work; the staging cases run on the session's
local Spark. Tables live in the session's ``testing`` catalog (SQLite, local warehouse).
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import read as read_job
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.job_support import EXIT_USAGE, run_job

pytestmark = pytest.mark.spark35

_names = itertools.count()
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])


def _local(location: str) -> Path:
    return Path(urlparse(location).path)


@pytest.fixture
def tables(testing_catalog):
    """Two tables in a namespace of their own: (the table read, its sibling, the warehouse root)."""
    namespace = f"fence{next(_names)}"
    testing_catalog.create_namespace(namespace)
    read = testing_catalog.create_table(f"{namespace}.events", SCHEMA, properties={"format-version": "2"})
    read.append(pa.table({"id": pa.array(range(10), pa.int64()), "name": [f"n{i}" for i in range(10)]}))
    other = testing_catalog.create_table(f"{namespace}.other", SCHEMA, properties={"format-version": "2"})
    other.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["x"]}))
    return read, other, testing_catalog.properties["warehouse"]


def _snapshot_of_files(root: Path) -> dict[Path, int]:
    return {path: path.stat().st_mtime_ns for path in root.rglob("*") if path.is_file()}


FENCED = [
    ("the table's own location", lambda read, other, warehouse: read.metadata.location, "is the location of table"),
    ("its data directory", lambda read, other, warehouse: read.metadata.location + "/data", "is inside the location"),
    ("another table's location", lambda read, other, warehouse: other.metadata.location, r"of table fence\d+\.other"),
    (
        "the namespace directory",
        lambda read, other, warehouse: read.metadata.location.rsplit("/", 1)[0],
        "holds the location of table",
    ),
    ("the warehouse root", lambda read, other, warehouse: warehouse, "holds the location of table"),
    ("inside the warehouse root", lambda read, other, warehouse: warehouse + "/exports/x", "inside the warehouse"),
    (
        "the table's location as a plain path",
        lambda read, other, warehouse: str(_local(read.metadata.location)) + "/",
        "is the location of table",
    ),
]


@pytest.mark.parametrize(("case", "output_of", "expected"), FENCED, ids=[case for case, _, _ in FENCED])
def test_an_output_over_table_or_warehouse_locations_is_refused_before_anything_is_touched(
    tables, case, output_of, expected, capsys
) -> None:
    read, other, warehouse = tables
    output = output_of(read, other, warehouse)
    root = _local(warehouse)
    before = _snapshot_of_files(root)
    argv = ["--catalog", "testing", "--table", ".".join(read.name()), "--output", output, "--mode", "overwrite"]
    with pytest.raises(UserInputError, match=expected):
        read_job.main(argv)
    assert run_job("read", lambda: read_job.main(argv)) == EXIT_USAGE
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and len(lines[0]) < 300 and output.rstrip("/") in lines[0]
    assert _snapshot_of_files(root) == before
    assert read.catalog.load_table(read.name()).scan().to_arrow().num_rows == 10


def test_an_output_under_a_regular_file_is_refused(tables, tmp_path, capsys) -> None:
    read, _, _ = tables
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    argv = ["--catalog", "testing", "--table", ".".join(read.name()), "--output", f"{blocker}/out"]
    with pytest.raises(UserInputError, match=r"is under .*a-file, which is a regular file"):
        read_job.main(argv)
    capsys.readouterr()
    assert run_job("read", lambda: read_job.main(argv)) == EXIT_USAGE
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and len(lines[0]) < 300 and f"{blocker}/out" in lines[0], lines


@pytest.mark.spark
def test_a_read_that_fails_while_writing_leaves_no_output_and_its_retry_succeeds(spark, tables, tmp_path) -> None:
    read, _, _ = tables
    output = tmp_path / "exports" / "events"
    argv = ["--catalog", "testing", "--table", ".".join(read.name()), "--output", str(output), "--mode", "error"]
    data_file = _local(next(iter(read.scan().plan_files())).file.file_path)
    moved = tmp_path / "moved.parquet"
    shutil.move(data_file, moved)  # the plan names it; the executor reading it fails during the write
    with pytest.raises(Exception, match=r"No such file|FileNotFound|does not exist|is missing"):
        read_job.main(argv)
    assert not output.exists(), "a failed read left something at --output"
    assert list((tmp_path / "exports").iterdir()) == [], "the staging directory was left behind"
    shutil.move(moved, data_file)
    result = read_job.main(argv)
    assert result["rows_out"] == 10
    assert pq.read_table(output).num_rows == 10


@pytest.mark.spark
def test_overwrite_replaces_an_existing_output_only_once_the_result_is_complete(spark, tables, tmp_path) -> None:
    read, _, _ = tables
    output = tmp_path / "out"
    output.mkdir()
    (output / "previous.txt").write_text("the last good export")
    argv = ["--catalog", "testing", "--table", ".".join(read.name()), "--output", str(output), "--mode", "overwrite"]
    data_file = _local(next(iter(read.scan().plan_files())).file.file_path)
    moved = tmp_path / "moved.parquet"
    shutil.move(data_file, moved)
    with pytest.raises(Exception):  # noqa: B017 - any failure of the read
        read_job.main(argv)
    assert (output / "previous.txt").read_text() == "the last good export"
    shutil.move(moved, data_file)
    assert read_job.main(argv)["rows_out"] == 10
    assert not (output / "previous.txt").exists() and pq.read_table(output).num_rows == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
