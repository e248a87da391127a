"""Hourly ingest: once an hour has ended and its files have landed, append them to an Iceberg table, exactly once.

1. The schedule is a cron *data interval* timetable: the run for the hour 16:00-17:00 starts at 17:00 and its data
   interval is that hour (``data_interval_start`` = 16:00). (Airflow 3's plain ``"@hourly"`` is a cron *trigger*
   timetable whose interval is the instant the run starts, 17:00, an hour that has only begun.)
2. ``wait_for_landing_files`` waits for the hour's completion marker, ``<landing>/events/<YYYY-MM-DD>/<HH>/_SUCCESS``
   (Spark and Hadoop writers create it once every file is written, so no half-written hour is loaded), on the
   storage the catalog is configured for (a local folder, or ``s3://`` with the catalog's endpoint and keys). It
   is deferrable: the wait runs in the triggerer, not in a worker slot, polling every minute. It gives up after
   ``LANDING_TIMEOUT`` (three hours): with ``soft_fail=False`` (here) the run fails, so a late or broken upstream is
   noticed; set ``soft_fail=True`` where hours without data are normal, and the run is skipped instead.
3. ``ingest_hour`` appends the folder's Parquet files to ``<namespace>.events`` with ``spark_jobs/ingest.py``.
   Transient failures (the cluster, the object store, a lost commit race) are retried three times with
   exponential backoff from two minutes; bad input (exit code 2: a schema mismatch, say) fails at once. The
   idempotency key defaults to DAG id + run id + task id, so a retry after a commit appends nothing twice.

The ingest names the table's Asset ``iceberg://<catalog>/<namespace>/events`` as its outlet (a reference, see
``airflow_iceberg_provider.assets``), so DAGs scheduled on the table (``iceberg_on_new_snapshot``) run after it.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import dag

try:  # Airflow 3.2+
    from airflow.sdk import CronDataIntervalTimetable
except ImportError:  # Airflow 3.1
    from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator
from airflow_iceberg_provider.private_files import private_directory
from airflow_iceberg_provider.sensors.source_files import IcebergSourceFilesSensor
from airflow_iceberg_provider.settings import ICEBERG_CONN_ID_ENV, ProviderSettings

SETTINGS = ProviderSettings.from_environment()
# An ``iceberg`` connection when one is configured; otherwise the catalog comes from pyiceberg's configuration.
ICEBERG_CONN_ID = os.environ.get(ICEBERG_CONN_ID_ENV) or None
# Default: this user's private folder under the temp folder (another local user can neither plant files in it nor
# read them); the compose deployment lands on s3://landing.
LANDING_ROOT = os.environ.get("ICEBERG_DEMO_LANDING_ROOT") or str(
    private_directory("iceberg-provider-landing", fallback=False)
)
TABLE = f"{SETTINGS.namespace}.events"
# The hour the run loads: its data interval, which starts an hour before the run does.
HOUR_FOLDER = LANDING_ROOT + "/events/{{ data_interval_start.strftime('%Y-%m-%d/%H') }}/"
LANDING_TIMEOUT = timedelta(hours=3)


@dag(
    schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={
        "retries": 3,
        "retry_delay": timedelta(minutes=2),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(minutes=30),
    },
    tags=["iceberg", "example"],
)
def iceberg_hourly_ingest() -> None:
    """Wait for the hour's files -> append them; a retry after a commit does not append again."""
    landed = IcebergSourceFilesSensor(
        task_id="wait_for_landing_files",
        catalog=SETTINGS.catalog,
        iceberg_conn_id=ICEBERG_CONN_ID,
        path=HOUR_FOLDER,
        marker="_SUCCESS",
        deferrable=True,
        poke_interval=60,
        timeout=int(LANDING_TIMEOUT.total_seconds()),
        soft_fail=False,
        retries=0,  # the sensor's own timeout is the wait; retrying it would only double it
    )
    ingest = IcebergIngestOperator(
        task_id="ingest_hour",
        conn_id=SETTINGS.spark_conn_id,
        catalog=SETTINGS.catalog,
        iceberg_conn_id=ICEBERG_CONN_ID,
        table=TABLE,
        source=HOUR_FOLDER,
        source_format="parquet",
        mode="append",
        create_if_missing=True,
        partition_by="day(ts)",
    )
    landed >> ingest


iceberg_hourly_ingest()
