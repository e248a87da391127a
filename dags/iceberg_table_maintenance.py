"""Table maintenance in the order Iceberg's own guidance runs it; copy it and set the table, thresholds and schedule.

1. ``expire_snapshots``: snapshots older than seven days go (the last ten stay), with the files only they reference.
2. ``deletes_need_rewrite`` looks once at the manifests (no Spark): with at least ``MIN_DELETE_FILES`` live delete
   files, ``rewrite_position_deletes`` bin-packs each partition's position delete files and drops positions of data
   files that are gone; otherwise it is skipped.
3. ``compaction_needed`` looks once too (small files, deleted-row ratio); when needed, ``choose_compaction`` picks a
   sort compaction when the table has a sort order (so pruning on its columns works), else a bin-pack, with deletes
   folded into the rewritten files.
4. ``rewrite_manifests`` clusters manifests by partition, so planning reads fewer of them (a no-op when each spec's
   manifests are already one per ``commit.manifest.target-size-bytes``).
5. ``remove_orphan_files`` deletes files older than three days that no snapshot references.

Trigger with ``{"dry_run": true}`` to see every step's plan (the task's XCom and log) without changing the table; a
step the sensors skip does not stop the steps after it.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import Param, TriggerRule, dag, task

from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook
from airflow_iceberg_provider.operators.compact import IcebergCompactOperator
from airflow_iceberg_provider.operators.maintenance import IcebergMaintenanceOperator
from airflow_iceberg_provider.sensors.compaction import IcebergCompactionNeededSensor
from airflow_iceberg_provider.settings import ICEBERG_CONN_ID_ENV, ProviderSettings

SETTINGS = ProviderSettings.from_environment()
ICEBERG_CONN_ID = os.environ.get(ICEBERG_CONN_ID_ENV) or None
TABLE_ARGS = {"catalog": SETTINGS.catalog, "iceberg_conn_id": ICEBERG_CONN_ID, "table": "{{ params.table }}"}
JOB_ARGS = {**TABLE_ARGS, "conn_id": SETTINGS.spark_conn_id, "dry_run": "{{ params.dry_run }}"}
# When a rewrite is worth it (the sensors look once and skip their step below these).
MIN_DELETE_FILES = 10
MIN_SMALL_FILES = 20
MIN_DELETED_ROW_RATIO = 0.1


def _check_once(task_id: str, **thresholds: float | int) -> IcebergCompactionNeededSensor:
    """A sensor that looks at the manifests once and skips what follows when no threshold is reached."""
    return IcebergCompactionNeededSensor(
        task_id=task_id,
        **TABLE_ARGS,
        **thresholds,
        mode="poke",
        timeout=0,
        soft_fail=True,
        trigger_rule=TriggerRule.NONE_FAILED,
    )


@dag(
    schedule="0 3 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["iceberg", "example", "maintenance"],
    params={
        "table": Param(f"{SETTINGS.namespace}.events", type="string", description="namespace.table to maintain"),
        "dry_run": Param(False, type="boolean", description="only print each step's plan; change nothing"),
    },
)
def iceberg_table_maintenance() -> None:
    """Expire snapshots -> rewrite position deletes -> compact (sort or bin-pack) -> rewrite manifests -> orphans."""
    expire = IcebergMaintenanceOperator(
        task_id="expire_snapshots",
        **JOB_ARGS,
        action="expire-snapshots",
        older_than="{{ (data_interval_end - macros.timedelta(days=7)).isoformat() }}",
        retain_last=10,
    )
    deletes_needed = _check_once("deletes_need_rewrite", min_delete_files=MIN_DELETE_FILES)
    rewrite_deletes = IcebergMaintenanceOperator(
        task_id="rewrite_position_deletes", **JOB_ARGS, action="rewrite-position-deletes"
    )
    compaction_needed = _check_once(
        "compaction_needed", min_small_files=MIN_SMALL_FILES, min_deleted_row_ratio=MIN_DELETED_ROW_RATIO
    )

    @task.branch
    def choose_compaction(params: dict) -> str:
        """Sort compaction when the table has a sort order, else bin-pack."""
        table = IcebergCatalogHook(iceberg_conn_id=ICEBERG_CONN_ID, catalog_name=SETTINGS.catalog).load_table(
            params["table"]
        )
        return "compact_binpack" if table.sort_order().is_unsorted else "compact_sorted"

    compact_sorted = IcebergCompactOperator(task_id="compact_sorted", **JOB_ARGS, strategy="sort")
    compact_binpack = IcebergCompactOperator(task_id="compact_binpack", **JOB_ARGS)
    manifests = IcebergMaintenanceOperator(
        task_id="rewrite_manifests", **JOB_ARGS, action="rewrite-manifests", trigger_rule=TriggerRule.NONE_FAILED
    )
    orphans = IcebergMaintenanceOperator(
        task_id="remove_orphan_files",
        **JOB_ARGS,
        action="remove-orphan-files",
        older_than="{{ (data_interval_end - macros.timedelta(days=3)).isoformat() }}",
    )
    choose = choose_compaction()
    expire >> deletes_needed >> rewrite_deletes >> compaction_needed >> choose >> [compact_sorted, compact_binpack]
    [compact_sorted, compact_binpack] >> manifests >> orphans


iceberg_table_maintenance()
