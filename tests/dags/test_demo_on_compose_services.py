"""The distributed deployment run as local processes: docker-compose.yml's object store and REST catalog, Spark
master and worker, started with the commands and settings the file gives them, and the demo DAG run against them
with the Airflow environment the file gives its scheduler (the metadata database aside).

What only containers would add (images, networks, volumes) is checked by tests/test_docker_compose.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import compose

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
    from airflow.dag_processing.dagbag import DagBag

    from tests.support.airflow_env import path_with_spark_submit, register_dag, task_state, xcom_return_value

    spec, local_ports = compose_services
    environment = compose.airflow_environment(spec, local_ports, tmp_path / "shared")
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ICEBERG_DEMO_ROWS", "2000")
    # pyiceberg's load_catalog reads the environment once, at its import (an Airflow task process starts fresh).
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())
    monkeypatch.setenv("PATH", path_with_spark_submit())
    assert environment["PYICEBERG_CATALOG__LAKEHOUSE__TYPE"] == "rest"
    dag_file = compose.REPO_ROOT / "dags" / "iceberg_demo_pipeline.py"
    dag = DagBag(dag_folder=str(dag_file)).dags["iceberg_demo_pipeline"]
    register_dag(dag)
    dag_run = dag.test()
    assert task_state(dag_run, "report") == "success"
    report = xcom_return_value(dag_run, "report")
    assert "in catalog lakehouse" in report
    assert re.search(r"rows at current snapshot\s+3,980\s", report), report
    assert re.search(r"rows after compaction\s+3,980\s", report), report
    read = xcom_return_value(dag_run, "read_current")
    assert read["rows_out"] == 3980
