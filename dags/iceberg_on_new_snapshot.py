"""Event-driven: run when the events table gains a snapshot, and export what the table holds at that snapshot.

The DAG is scheduled on the Asset ``iceberg://<catalog>/<namespace>/events``, which two things update: the outlet
of ``iceberg_hourly_ingest``'s ingest task, and an ``AssetWatcher`` whose trigger (``IcebergCatalogSnapshotTrigger``,
the official ``IcebergTableSnapshotTrigger`` under the catalog's name) polls the table in the triggerer and fires on
any commit, including ones made outside Airflow.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import AssetWatcher, dag, task

from airflow_iceberg_provider.assets import iceberg_table_asset
from airflow_iceberg_provider.operators.read import IcebergReadOperator
from airflow_iceberg_provider.settings import ICEBERG_CONN_ID_ENV, ProviderSettings
from airflow_iceberg_provider.triggers.snapshot import IcebergCatalogSnapshotTrigger

SETTINGS = ProviderSettings.from_environment()
ICEBERG_CONN_ID = os.environ.get(ICEBERG_CONN_ID_ENV) or None
TABLE = f"{SETTINGS.namespace}.events"
EVENTS = iceberg_table_asset(
    SETTINGS.catalog,
    TABLE,
    watchers=[
        AssetWatcher(
            name="events_commits",
            trigger=IcebergCatalogSnapshotTrigger(
                table=TABLE, catalog_name=SETTINGS.catalog, iceberg_conn_id=ICEBERG_CONN_ID, poll_interval=60
            ),
        )
    ],
)


@dag(schedule=[EVENTS], start_date=datetime(2026, 1, 1), catchup=False, tags=["iceberg", "example"])
def iceberg_on_new_snapshot() -> None:
    """Snapshot id from the triggering event (if the watcher sent one) -> export the table at that snapshot."""

    @task
    def triggering_snapshot(triggering_asset_events=None) -> int | None:
        """The snapshot id the watcher's event carries; ``None`` for an ingest task's event (read the current one)."""
        for events in (triggering_asset_events or {}).values():
            for event in reversed(list(events)):
                # A watcher's event carries the trigger's payload: {"from_trigger": true, "payload": {...}}.
                snapshot_id = ((event.extra or {}).get("payload") or {}).get("snapshot_id")
                if snapshot_id is not None:
                    return int(snapshot_id)
        return None

    snapshot = triggering_snapshot()
    export = IcebergReadOperator(
        task_id="export_new_snapshot",
        conn_id=SETTINGS.spark_conn_id,
        catalog=SETTINGS.catalog,
        iceberg_conn_id=ICEBERG_CONN_ID,
        table=TABLE,
        snapshot_id="{{ ti.xcom_pull(task_ids='triggering_snapshot') }}",
        output_path=SETTINGS.output_root + "/on_new_snapshot/{{ run_id }}",
        write_mode="overwrite",
    )
    snapshot >> export


iceberg_on_new_snapshot()
