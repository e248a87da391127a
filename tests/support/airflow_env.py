"""Airflow for the provider's tests: a migrated metadata database in the session's AIRFLOW_HOME, a local Spark
connection, and spark-submit on PATH (the interpreter's own bin directory, where pyspark installs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SPARK_LOCAL_CONNECTION = json.dumps({"conn_type": "spark", "host": "local[2]"})


def migrate_airflow_db(timeout: float = 300) -> None:
    """``airflow db migrate`` into the AIRFLOW_HOME tests/conftest.py set (SQLite in a temp dir)."""
    result = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed ({result.returncode}):\n{result.stderr[-3000:]}")


def import_string(dotted_path: str):
    """Airflow's ``import_string`` (moved to ``airflow.sdk._shared`` in Airflow 3.2)."""
    try:
        from airflow.sdk._shared.module_loading import import_string as airflows
    except ImportError:  # Airflow 3.1
        from airflow.sdk.module_loading import import_string as airflows
    return airflows(dotted_path)


def dag_bag_class() -> type:
    """Airflow's ``DagBag`` (in ``airflow.dag_processing.dagbag`` since Airflow 3.2)."""
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.1
        from airflow.models.dagbag import DagBag
    return DagBag


def _sync_bag_to_db():
    try:
        from airflow.dag_processing.dagbag import sync_bag_to_db
    except ImportError:  # Airflow 3.1
        from airflow.models.dagbag import sync_bag_to_db
    return sync_bag_to_db


def partitioned_scheduling() -> bool:
    """Whether this Airflow schedules DAGs per partition (``PartitionedAssetTimetable``, Airflow 3.2+)."""
    try:
        from airflow.sdk import PartitionedAssetTimetable  # noqa: F401
    except ImportError:
        return False
    return True


def path_with_spark_submit() -> str:
    """PATH with this interpreter's bin directory (holding pyspark's spark-submit) first."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def register_dag(dag) -> None:
    """Serialize a DAG built inside a test into the metadata database, as the DAG processor would for a file.

    ``dag.test()`` needs the DAG's serialized version in the database; DAGs defined in test code live in no bundle.
    """
    from types import SimpleNamespace

    from airflow.dag_processing.bundles.manager import DagBundlesManager

    sync_bag_to_db = _sync_bag_to_db()

    DagBundlesManager().sync_bundles_to_db()
    bag = SimpleNamespace(dags={dag.dag_id: dag}, import_errors={}, bundle_path=None, dag_warnings=set())
    sync_bag_to_db(bag, "dags-folder", None)


def run_dag(dag, **kwargs):
    """Register ``dag`` and run it once with ``dag.test()``; returns the DagRun."""
    register_dag(dag)
    return dag.test(**kwargs)


def task_state(dag_run, task_id: str) -> str:
    """The final state of ``task_id`` in ``dag_run``."""
    return str(dag_run.get_task_instance(task_id).state)


def xcom_return_value(dag_run, task_id: str):
    """The ``return_value`` XCom ``task_id`` pushed in ``dag_run`` (deserialized)."""
    return xcom_value(dag_run, task_id, "return_value")


def xcom_value(dag_run, task_id: str, key: str):
    """The XCom ``key`` that ``task_id`` pushed in ``dag_run`` (deserialized), ``None`` when there is none."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.scalars(
            XComModel.get_many(run_id=dag_run.run_id, key=key, task_ids=task_id, dag_ids=dag_run.dag_id)
        ).first()
        return None if row is None else XComModel.deserialize_value(row)


def sync_dag_file(path: Path) -> None:
    """Parse one DAG file and write its DAGs, serialized, to the metadata database, as the DAG processor does."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager

    dag_bag, sync_bag_to_db = dag_bag_class(), _sync_bag_to_db()

    DagBundlesManager().sync_bundles_to_db()
    bag = dag_bag(dag_folder=str(path))
    if bag.import_errors:
        raise RuntimeError(f"{path} failed to import: {bag.import_errors}")
    sync_bag_to_db(bag, "dags-folder", None)
