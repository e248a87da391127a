"""The table maintenance example DAG: its order and gates, and a run end to end under ``dag.test()``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from airflow.dag_processing.dagbag import DagBag
from pyiceberg.table.sorting import NullOrder
from pyiceberg.transforms import IdentityTransform

from spark_jobs.engine.commit.committer import commit_change
from tests.support.airflow_env import task_state, xcom_return_value
from tests.support.rewrite_tables import SCHEMA, SPEC, append, ids_and_checksum, position_delete_change

DAGS_DIR = Path(__file__).resolve().parents[2] / "dags"
DAG_ID = "iceberg_table_maintenance"


def _dag():
    bag = DagBag(dag_folder=str(DAGS_DIR / "iceberg_table_maintenance.py"))
    assert bag.import_errors == {}
    return bag.dags[DAG_ID]


@pytest.mark.usefixtures("example_settings")
def test_the_steps_run_in_javas_order_and_every_job_can_dry_run() -> None:
    dag = _dag()
    order = [task.task_id for task in dag.topological_sort()]
    assert order.index("expire_snapshots") < order.index("rewrite_position_deletes") < order.index("choose_compaction")
    assert order.index("compact_sorted") < order.index("rewrite_manifests") < order.index("remove_orphan_files")
    assert dag.get_task("rewrite_position_deletes").upstream_task_ids == {"deletes_need_rewrite"}
    assert dag.get_task("choose_compaction").upstream_task_ids == {"compaction_needed"}
    for task_id in ("deletes_need_rewrite", "compaction_needed"):
        sensor = dag.get_task(task_id)
        assert sensor.soft_fail and sensor.timeout == 0 and sensor.trigger_rule == "none_failed"
    assert dag.get_task("rewrite_manifests").trigger_rule == "none_failed"  # runs after a skipped compaction
    jobs = [task for task in dag.tasks if hasattr(task, "job_arguments")]
    dry_runs = [getattr(task, "plan_only", None) or getattr(task, "report_only", None) for task in jobs]
    assert len(jobs) == 6 and dry_runs == ["{{ params.dry_run }}"] * 6


def _maintained_table(catalog) -> str:
    """``example_dags.events`` sorted by id descending: 24 one-row-group appends and 12 position delete files."""
    catalog.create_namespace_if_not_exists("example_dags")
    name = "example_dags.events"
    if catalog.table_exists(name):
        catalog.drop_table(name)
    table = catalog.create_table(name, SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    with table.update_sort_order() as update:
        update.desc("id", IdentityTransform(), NullOrder.NULLS_LAST)
    table = catalog.load_table(name)
    for index in range(24):
        ids = list(range(index * 10, (index + 1) * 10))
        append(table, pa.table({"id": pa.array(ids, pa.int64()), "category": ["ab"[index % 2]] * 10}), f"d{index}")
    commit_change(table, position_delete_change(table, {index * 10 + 1 for index in range(12)}, "pd"))
    return name


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db", "example_settings")
def test_maintenance_runs_end_to_end(testing_catalog) -> None:
    from tests.support.airflow_env import register_dag

    name = _maintained_table(testing_catalog)
    before = ids_and_checksum(testing_catalog.load_table(name))
    dag = _dag()
    register_dag(dag)
    dag_run = dag.test(run_conf={"table": name, "dry_run": False})
    states = {task_id: task_state(dag_run, task_id) for task_id in dag.task_ids}
    assert states == {
        "expire_snapshots": "success",
        "deletes_need_rewrite": "success",
        "rewrite_position_deletes": "success",
        "compaction_needed": "success",
        "choose_compaction": "success",
        "compact_sorted": "success",
        "compact_binpack": "skipped",
        "rewrite_manifests": "success",
        "remove_orphan_files": "success",
    }
    deletes = xcom_return_value(dag_run, "rewrite_position_deletes")
    assert (deletes["delete_files_removed"], deletes["delete_files_added"]) == (12, 2)
    compacted = xcom_return_value(dag_run, "compact_sorted")
    assert compacted["strategy"] == "sort" and compacted["sort_order"] == "id DESC NULLS LAST"
    assert compacted["data_files_removed"] == 24 and compacted["delete_files_removed"] == 2
    assert xcom_return_value(dag_run, "rewrite_manifests")["manifests_after"] == 1
    table = testing_catalog.load_table(name)
    assert ids_and_checksum(table) == before
    entries = [
        entry
        for manifest in table.current_snapshot().manifests(table.io)
        for entry in manifest.fetch_manifest_entry(table.io)
    ]
    assert len(entries) == 2 and {e.data_file.sort_order_id for e in entries} == {table.sort_order().order_id}
