"""The read job's export decides where it runs once: a distributed planning mode starts Spark for the manifests,
and the rows are those of a local plan in the driver."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from spark_jobs import read as read_job

pytestmark = pytest.mark.spark35


def _export(tmp_path, name: str, *extra: str) -> tuple[dict, list[int]]:  # type: ignore[type-arg]
    output = tmp_path / name
    argv = ["--catalog", "conformance", "--table", "corpus.mor_v3_dv", "--columns", "id", "--output", str(output)]
    result = read_job.main([*argv, *extra])
    return result, sorted(pq.read_table(output).column("id").to_pylist())


def test_distributed_planning_runs_on_spark_and_reads_the_rows_a_local_plan_reads(spark, conformance_catalog, tmp_path):
    local, local_rows = _export(tmp_path, "local", "--planning-mode", "local")
    distributed, distributed_rows = _export(tmp_path, "distributed", "--planning-mode", "distributed")
    assert local["ran_in"] == "driver" and distributed["ran_in"] == "spark"
    assert distributed_rows == local_rows and distributed["rows_out"] == local["rows_out"] == len(local_rows)


def test_an_unknown_planning_mode_is_bad_input(conformance_catalog, tmp_path):
    from spark_jobs.job_support import UsageError

    with pytest.raises(UsageError, match="--planning-mode"):
        read_job.main(
            [
                "--catalog",
                "conformance",
                "--table",
                "corpus.mor_v3_dv",
                "--output",
                str(tmp_path / "x"),
                "--planning-mode",
                "far",
            ]
        )
