"""Hourly ingest: append the hour's landed Parquet files to an Iceberg table, exactly once per run.

Each run loads ``<landing>/events/<YYYY-MM-DD>/<HH>/`` (the run's data interval) into ``<namespace>.events`` with
``spark_jobs/ingest.py``. The idempotency key defaults to DAG id + run id + task id, so a retried task commits
nothing twice. The table is the task's outlet Asset ``iceberg://<catalog>/<namespace>/events``: DAGs scheduled on it
(``iceberg_on_new_snapshot``) run after each ingest.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import dag

from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator
from airflow_iceberg_provider.settings import ICEBERG_CONN_ID_ENV, ProviderSettings

SETTINGS = ProviderSettings.from_environment()
# An ``iceberg`` connection when one is configured; otherwise the catalog comes from pyiceberg's configuration.
ICEBERG_CONN_ID = os.environ.get(ICEBERG_CONN_ID_ENV) or None
LANDING_ROOT = os.environ.get("ICEBERG_DEMO_LANDING_ROOT", "/tmp/iceberg-provider-landing")
TABLE = f"{SETTINGS.namespace}.events"


@dag(
    schedule="@hourly",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=5)},
    tags=["iceberg", "example"],
)
def iceberg_hourly_ingest() -> None:
    """Append the hour's files; a retry after a commit does not append again."""
    IcebergIngestOperator(
        task_id="ingest_hour",
        conn_id=SETTINGS.spark_conn_id,
        catalog=SETTINGS.catalog,
        iceberg_conn_id=ICEBERG_CONN_ID,
        table=TABLE,
        source=LANDING_ROOT + "/events/{{ data_interval_start.strftime('%Y-%m-%d/%H') }}/",
        source_format="parquet",
        mode="append",
        create_if_missing=True,
        partition_by="day(ts)",
    )


iceberg_hourly_ingest()
