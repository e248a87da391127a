"""The jobs on the Spark 3.5 line: spark-submit of Spark 3.5 (the Java environment's virtualenv) runs an upsert and
a merge-on-read read, through the ``mapInArrow`` route (the Python data source needs Spark 4).

One spark-submit per job, as Airflow runs them; the rest of the suite runs the same jobs on the project's Spark 4.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support import java_env

REPO_ROOT = Path(__file__).resolve().parents[2]


def _submit(env: java_env.JavaEnv, job: str, *arguments: str) -> tuple[dict, list[str]]:
    """Run ``spark_jobs/<job>.py`` with Spark 3.5's spark-submit; its result and its output lines."""
    run = subprocess.run(
        ["spark-submit", "--master", "local[1]", str(REPO_ROOT / "spark_jobs" / f"{job}.py"), *arguments],
        env=env.process_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = (run.stdout + run.stderr).splitlines()
    assert run.returncode == 0, "\n".join(lines[-40:])
    results = [line for line in run.stdout.splitlines() if line.startswith('{"status":"ok"')]
    return json.loads(results[-1]), lines


@pytest.mark.spark
def test_upsert_and_merge_on_read_read_on_spark_3_5(testing_catalog, tmp_path: Path) -> None:
    env = java_env.ensure()
    assert env.spark_version.startswith("3.5")
    testing_catalog.create_namespace_if_not_exists("spark35")
    if testing_catalog.table_exists("spark35.events"):
        testing_catalog.drop_table("spark35.events")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("category", pa.string())])
    table = testing_catalog.create_table("spark35.events", schema=schema)
    table.append(pa.table({"id": pa.array(range(10), pa.int64()), "category": ["old"] * 10}, schema=schema))
    source = tmp_path / "source"
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array([3, 4, 100], pa.int64()), "category": ["new"] * 3}), source / "b.parquet")

    upsert, _ = _submit(
        env, "ingest", "--catalog", "testing", "--table", "spark35.events", "--source", str(source),
        "--source-format", "parquet", "--mode", "upsert", "--key", "id", "--idempotency-key", "spark35-upsert",
    )  # fmt: skip
    assert (upsert["rows_added"], upsert["rows_deleted_by_key"], upsert["delete_files_written"]) == (3, 2, 1)

    output = tmp_path / "export"
    read, lines = _submit(
        env, "read", "--catalog", "testing", "--table", "spark35.events", "--filter", "id >= 3",
        "--output", str(output),
    )  # fmt: skip
    assert (read["snapshot_id"], read["rows_out"]) == (upsert["snapshot_id"], 8)
    exported = pq.read_table(output).sort_by("id")
    assert exported.column("id").to_pylist() == [3, 4, 5, 6, 7, 8, 9, 100]
    assert exported.column("category").to_pylist() == ["new", "new", *["old"] * 5, "new"]
    # The job's own summary is there on Spark 3.5 too, before the result line.
    assert any(f"read of spark35.events at snapshot {upsert['snapshot_id']}" in line for line in lines)
