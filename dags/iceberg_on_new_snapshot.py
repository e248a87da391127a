"""Event-driven: run when the events table gains a snapshot, and export what the table holds at that snapshot.

The DAG is scheduled on the table's Asset ``iceberg://<catalog>/<namespace>/events`` with a watcher
(``watched_table_asset``: the official ``IcebergTableSnapshotTrigger`` under the catalog's name) that polls the
table's metadata in the triggerer every ``ICEBERG_DEMO_WATCH_POLL_SECONDS`` seconds (default 60) and sends an event
for every new snapshot, including commits made outside Airflow. The read task here, and the ingest task of
``iceberg_hourly_ingest``, name the same Asset by reference, so they never replace the watched declaration (Airflow
keeps one declaration per asset). An ingest task's own outlet event also reaches this DAG: a commit made by Airflow
may start two runs, which export the same snapshot.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import dag, task

from airflow_iceberg_provider.assets import watched_table_asset
from airflow_iceberg_provider.operators.read import IcebergReadOperator
from airflow_iceberg_provider.settings import ICEBERG_CONN_ID_ENV, ProviderSettings

SETTINGS = ProviderSettings.from_environment()
ICEBERG_CONN_ID = os.environ.get(ICEBERG_CONN_ID_ENV) or None
TABLE = f"{SETTINGS.namespace}.events"
POLL_SECONDS = float(os.environ.get("ICEBERG_DEMO_WATCH_POLL_SECONDS", "60"))
EVENTS = watched_table_asset(SETTINGS.catalog, TABLE, iceberg_conn_id=ICEBERG_CONN_ID, poll_interval=POLL_SECONDS)


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
