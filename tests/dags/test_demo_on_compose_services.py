"""The distributed deployment run as local processes: docker-compose.yml's object store and REST catalog, Spark
master and worker, started with the commands and settings the file gives them, and the demo DAG run against them
with the Airflow environment the file gives its scheduler (the metadata database aside).

Each of the three jobs the demo submits runs once (one ``spark-submit`` each, on the standalone cluster): the first
ingest, whose source the Airflow side wrote on the shared volume and whose table lands on S3 through the REST
catalog; the read of the current snapshot, whose output the Spark workers write back on the shared volume; and the
compaction. The demo's other steps are the same jobs again (an append, an upsert, a delete, a time-travel read),
each about a minute of spark-submit on a busy 2-core machine, and are covered on S3 on the same kind of cluster by
tests/integration/test_s3_jobs.py; here Airflow marks them, and the report that needs them, successful.

What only containers would add (images, networks, volumes) is checked by tests/test_docker_compose.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import compose

# The demo steps this test marks successful instead of running (a regex on task ids, as ``dag.test`` takes it).
STEPS_NOT_RUN = "ingest_second|upsert|delete|read_first_snapshot|report"
STEPS_RUN = ("generate", "ingest_first", "read_current", "files_before_compaction", "compact")

pytestmark = [pytest.mark.s3, pytest.mark.spark, pytest.mark.standalone, pytest.mark.airflow]


@pytest.fixture(scope="module")
def compose_services():
    """The compose file's object store and Spark cluster as local processes, with the addresses they took."""
    spec = compose.load_compose()
    store, store_ports = compose.start_object_store(spec)
    try:
        cluster, spark_ports = compose.start_spark(spec)
    except Exception:
        store.stop()
        raise
    yield spec, {**store_ports, **spark_ports}
    cluster.stop()
    store.stop()


@pytest.mark.usefixtures("airflow_db")
def test_the_demo_pipeline_runs_on_the_compose_services(monkeypatch, tmp_path: Path, compose_services) -> None:
    import pyarrow.parquet as pq
    from airflow.dag_processing.dagbag import DagBag

    from tests.support.airflow_env import path_with_spark_submit, register_dag, task_state, xcom_return_value

    spec, local_ports = compose_services
    environment = compose.airflow_environment(spec, local_ports, tmp_path / "shared")
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ICEBERG_DEMO_ROWS", "2000")
    # pyiceberg's load_catalog reads the environment once, at its import (an Airflow task process starts fresh).
    import pyiceberg.catalog
    from pyiceberg.catalog import load_catalog
    from pyiceberg.utils.config import Config

    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())
    monkeypatch.setenv("PATH", path_with_spark_submit())
    assert environment["PYICEBERG_CATALOG__LAKEHOUSE__TYPE"] == "rest"
    dag_file = compose.REPO_ROOT / "dags" / "iceberg_demo_pipeline.py"
    dag = DagBag(dag_folder=str(dag_file)).dags["iceberg_demo_pipeline"]
    register_dag(dag)
    dag_run = dag.test(mark_success_pattern=STEPS_NOT_RUN)
    states = {task_id: task_state(dag_run, task_id) for task_id in dag.task_ids}
    assert set(states.values()) == {"success"}, states
    ingested = xcom_return_value(dag_run, "ingest_first")
    assert ingested["rows_added"] == 2000, ingested
    table = load_catalog("lakehouse").load_table("demo.events")
    assert table.metadata.location.startswith("s3://"), table.metadata.location
    assert table.snapshots()[0].snapshot_id == ingested["snapshot_id"]
    assert xcom_return_value(dag_run, "read_current")["rows_out"] == 2000
    assert pq.read_table(tmp_path / "shared" / "output" / "current").num_rows == 2000
    compacted = xcom_return_value(dag_run, "compact")
    assert compacted["status"] == "ok" and compacted["snapshot_id"] == table.current_snapshot().snapshot_id, compacted
    assert xcom_return_value(dag_run, "files_before_compaction")["data_rows"] == 2000
    for step in STEPS_RUN:
        assert xcom_return_value(dag_run, step) is not None, f"{step} did not run"
