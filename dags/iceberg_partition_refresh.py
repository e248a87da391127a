"""Partition-driven: after an ingest, refresh each partition it changed, once per partition, reading only that one.

1. The DAG is scheduled on the events table's partitioned asset, ``iceberg://<catalog>/<namespace>/events/partitions``
   (``iceberg_partitions_asset``), with ``PartitionedAssetTimetable``: every ingest into the table
   (``iceberg_hourly_ingest``, or any ``IcebergIngestOperator``) emits one event per partition its commit changed,
   keyed by the partition's path text (``ts_day=2026-01-01``), and Airflow starts one run per key, with
   ``dag_run.partition_key`` that key. An ingest that touches two days starts two runs; two ingests into the same
   day before its run starts, one.
2. ``refresh_partition`` reads the table with every delete applied, only the rows of that partition: the read
   operator's ``partition_key`` becomes a row filter on the partition's source columns (``ts >= '2026-01-01' AND
   ts < '2026-01-02'`` for a day), so the scan prunes every other partition's files. It writes them to
   ``<output root>/partition_refresh/<partition path>/``, replacing the previous copy: a materialized copy per day.

Per-partition events need Airflow 3.3 (a task giving each of its events a partition key of its own). On Airflow 3.2
the DAG exists but only starts when triggered with a partition key (3.2's tasks cannot key their events); on 3.1,
without partitioned scheduling, this file defines no DAG, and DAGs scheduled on the table's asset
(``iceberg_on_new_snapshot``) find the changed partitions in the ingest event's extra (``partitions``).
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import dag

from airflow_iceberg_provider.assets import iceberg_partitions_asset
from airflow_iceberg_provider.operators.read import IcebergReadOperator
from airflow_iceberg_provider.settings import ICEBERG_CONN_ID_ENV, ProviderSettings

try:  # Airflow 3.2+
    from airflow.sdk import PartitionedAssetTimetable
except ImportError:  # Airflow 3.1: no partitioned scheduling
    PartitionedAssetTimetable = None

SETTINGS = ProviderSettings.from_environment()
ICEBERG_CONN_ID = os.environ.get(ICEBERG_CONN_ID_ENV) or None
TABLE = f"{SETTINGS.namespace}.events"
EVENTS_PARTITIONS = iceberg_partitions_asset(SETTINGS.catalog, TABLE)


if PartitionedAssetTimetable is not None:

    @dag(
        schedule=PartitionedAssetTimetable(assets=EVENTS_PARTITIONS),
        start_date=datetime(2026, 1, 1),
        catchup=False,
        tags=["iceberg", "example"],
    )
    def iceberg_partition_refresh() -> None:
        """One run per changed partition: export that partition's rows, every delete applied."""
        IcebergReadOperator(
            task_id="refresh_partition",
            conn_id=SETTINGS.spark_conn_id,
            catalog=SETTINGS.catalog,
            iceberg_conn_id=ICEBERG_CONN_ID,
            table=TABLE,
            partition_key="{{ dag_run.partition_key }}",
            output_path=SETTINGS.output_root + "/partition_refresh/{{ dag_run.partition_key }}",
            write_mode="overwrite",
        )

    iceberg_partition_refresh()
