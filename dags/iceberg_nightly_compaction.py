"""Nightly compaction gated by the compaction sensor, then snapshot expiry and orphan-file removal.

1. ``IcebergCompactionNeededSensor`` reads the current snapshot's manifests (no Spark) and decides per partition with
   the rules production systems use (AWS Glue: more than 100 files under 75 % of the target size; Apache Amoro: 12
   or more fragment files under target / 8, or a deleted-row ratio of 0.1), logging each partition's numbers and
   verdict. Below every threshold it times out softly and the rest of the run is skipped.
2. ``IcebergCompactOperator(dry_run=True)`` logs and returns the plan; then the compaction commits a ``replace``.
3. ``IcebergMaintenanceOperator`` expires snapshots older than seven days (keeping the last ten) and removes orphan
   files older than three days.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import dag

from airflow_iceberg_provider.operators.compact import IcebergCompactOperator
from airflow_iceberg_provider.operators.maintenance import IcebergMaintenanceOperator
from airflow_iceberg_provider.sensors.compaction import IcebergCompactionNeededSensor
from airflow_iceberg_provider.settings import ICEBERG_CONN_ID_ENV, ProviderSettings

SETTINGS = ProviderSettings.from_environment()
ICEBERG_CONN_ID = os.environ.get(ICEBERG_CONN_ID_ENV) or None
TABLE = f"{SETTINGS.namespace}.events"
TABLE_ARGS = {"catalog": SETTINGS.catalog, "iceberg_conn_id": ICEBERG_CONN_ID, "table": TABLE}
JOB_ARGS = {**TABLE_ARGS, "conn_id": SETTINGS.spark_conn_id}


@dag(schedule="0 2 * * *", start_date=datetime(2026, 1, 1), catchup=False, tags=["iceberg", "example"])
def iceberg_nightly_compaction() -> None:
    """Sensor -> plan -> compact -> expire snapshots -> remove orphan files."""
    needed = IcebergCompactionNeededSensor(
        task_id="compaction_needed",
        **TABLE_ARGS,
        mode="reschedule",
        poke_interval=600,
        timeout=int(timedelta(hours=2).total_seconds()),
        soft_fail=True,
    )
    plan = IcebergCompactOperator(task_id="plan_compaction", **JOB_ARGS, dry_run=True)
    compact = IcebergCompactOperator(task_id="compact", **JOB_ARGS, min_input_files=5)
    expire = IcebergMaintenanceOperator(
        task_id="expire_snapshots",
        **JOB_ARGS,
        action="expire-snapshots",
        older_than="{{ (data_interval_end - macros.timedelta(days=7)).isoformat() }}",
        retain_last=10,
    )
    orphans = IcebergMaintenanceOperator(
        task_id="remove_orphan_files",
        **JOB_ARGS,
        action="remove-orphan-files",
        older_than="{{ (data_interval_end - macros.timedelta(days=3)).isoformat() }}",
    )
    needed >> plan >> compact >> expire >> orphans


iceberg_nightly_compaction()
