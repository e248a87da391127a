"""The ingest job's orchestration (``engine/jobs/ingest_job.py``) with Spark's rows: which modes may take a Parquet
source, a source refused for a mode before any table is touched, a write failing after the deletes were written
leaving no file and no commit, and the options kept in the engine (Spark's side never takes them but through the
two API functions that hand them to the job). The modes' results: tests/spark_jobs/spark/test_ingest.py."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import spark as spark_package
from spark_jobs.engine.ingest.options import IngestOptions
from spark_jobs.engine.jobs.ingest_job import ingest_table, reads_source_files_directly
from spark_jobs.spark import ingest as spark_ingest
from spark_jobs.spark.ingest import SparkIngestRows

pytestmark = pytest.mark.spark35

CATALOG = "testing"
_names = itertools.count()


def _table_name(prefix: str) -> str:
    return f"ingest_job_tests.{prefix}_{next(_names)}"


def _files_on_disk(testing_catalog, table: str) -> set[Path]:
    location = Path(testing_catalog.load_table(table).metadata.location.removeprefix("file://"))
    return set(location.rglob("*.parquet")) | set(location.rglob("*.puffin"))


@pytest.mark.parametrize(
    ("options", "direct"),
    [
        (IngestOptions(mode="append"), True),
        (IngestOptions(mode="overwrite"), True),
        (IngestOptions(mode="overwrite", overwrite_filter="id > 3"), False),
        (IngestOptions(mode="upsert", key=("id",)), False),
        (IngestOptions(mode="delete", key=("id",)), False),
    ],
)
def test_only_modes_that_just_write_the_rows_read_the_source_files_directly(options, direct) -> None:
    assert reads_source_files_directly(options) is direct


def test_a_parquet_source_for_an_upsert_is_refused_before_the_table_is_made(spark, testing_catalog, tmp_path) -> None:
    source = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), source)
    planned = spark_ingest.parquet_source_of(spark, CATALOG, str(source))
    assert planned is not None
    table = _table_name("refused")
    options = IngestOptions(mode="upsert", key=("id",), create_if_missing=True)
    with pytest.raises(ValueError, match="append and dynamic overwrite only, not --mode upsert"):
        ingest_table(CATALOG, table, SparkIngestRows(spark, planned), options)
    assert not testing_catalog.table_exists(table)


def test_an_upsert_failing_after_its_deletes_were_written_leaves_no_file(spark, testing_catalog, monkeypatch) -> None:
    table = _table_name("upsert_fails")
    frame = spark.createDataFrame([(i, f"v1-{i}") for i in range(6)], "id long, name string")
    created = IngestOptions(mode="append", create_if_missing=True)
    ingest_table(CATALOG, table, SparkIngestRows(spark, frame), created)
    snapshot_before = testing_catalog.load_table(table).current_snapshot().snapshot_id
    files_before = _files_on_disk(testing_catalog, table)
    written_batches = []

    def write_fails(rows, context):
        written_batches.append(rows)
        raise OSError("disk full while writing the batch's rows")

    monkeypatch.setattr(spark_ingest, "write_dataframe", write_fails)
    batch = spark.createDataFrame([(2, "v2-2"), (9, "v2-9")], "id long, name string")
    with pytest.raises(OSError, match="disk full"):
        ingest_table(CATALOG, table, SparkIngestRows(spark, batch), IngestOptions(mode="upsert", key=("id",)))
    assert len(written_batches) == 1  # the position deletes were written first, then the rows failed
    assert testing_catalog.load_table(table).current_snapshot().snapshot_id == snapshot_before
    assert _files_on_disk(testing_catalog, table) == files_before


def test_no_function_on_sparks_side_takes_the_ingest_options_but_the_api_entries() -> None:
    """Following the options from the ingest entry point never climbs back from the engine into ``spark/``."""
    taking_options = []
    for path in sorted(Path(spark_package.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                annotations = [ast.unparse(arg.annotation) for arg in arguments if arg.annotation is not None]
                if any("IngestOptions" in annotation for annotation in annotations):
                    taking_options.append(f"{path.name}:{node.name}")
    assert taking_options == ["ingest.py:ingest", "ingest.py:ingest_table"]
