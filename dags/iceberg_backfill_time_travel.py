"""Manually triggered backfill and time travel: export a table at a snapshot or a time, optionally over a date range,
and optionally rewrite that range of a target table from the export.

Trigger with Params (UI form or ``airflow dags trigger --conf``):
- ``table``; at most one of ``snapshot_id`` and ``as_of`` (epoch ms or ISO-8601; neither = current snapshot);
- ``date_column`` with ``start_date``/``end_date``: rows in ``[start, end)``; empty = all rows;
- ``output``: the export directory URI (empty = ``<output root>/backfill/<run id>``);
- ``target_table``: empty = export only; otherwise its date range is overwritten with the exported rows, in one
  snapshot (the ingest job's ``overwrite`` mode with ``--overwrite-filter``).
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import Param, dag, task

from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator
from airflow_iceberg_provider.operators.read import IcebergReadOperator
from airflow_iceberg_provider.settings import ICEBERG_CONN_ID_ENV, ProviderSettings

SETTINGS = ProviderSettings.from_environment()
ICEBERG_CONN_ID = os.environ.get(ICEBERG_CONN_ID_ENV) or None
DATE_RANGE = (
    "{% if params.start_date and params.end_date %}"
    "{{ params.date_column }} >= '{{ params.start_date }}' AND {{ params.date_column }} < '{{ params.end_date }}'"
    "{% endif %}"
)
OUTPUT = "{{ params.output or '" + SETTINGS.output_root + "/backfill/' ~ run_id }}"


@dag(
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["iceberg", "example"],
    params={
        "table": Param(f"{SETTINGS.namespace}.events", type="string", description="namespace.table to read"),
        "snapshot_id": Param(None, type=["null", "integer"], description="read this snapshot"),
        "as_of": Param(None, type=["null", "string"], description="read the snapshot current at this time"),
        "date_column": Param("ts", type="string", description="column the date range applies to"),
        "start_date": Param(None, type=["null", "string"], format="date", description="first day (inclusive)"),
        "end_date": Param(None, type=["null", "string"], format="date", description="last day (exclusive)"),
        "output": Param("", type="string", description="export directory URI (empty: under the output root)"),
        "target_table": Param("", type="string", description="table whose date range is rewritten (empty: none)"),
    },
)
def iceberg_backfill_time_travel() -> None:
    """Export at a snapshot or time -> (if a target is given) overwrite the target's date range from the export."""
    export = IcebergReadOperator(
        task_id="export_at_snapshot",
        conn_id=SETTINGS.spark_conn_id,
        catalog=SETTINGS.catalog,
        iceberg_conn_id=ICEBERG_CONN_ID,
        table="{{ params.table }}",
        snapshot_id="{{ params.snapshot_id }}",
        as_of="{{ params.as_of }}",
        row_filter=DATE_RANGE,
        output_path=OUTPUT,
        write_mode="overwrite",
    )

    @task.short_circuit
    def has_target(target_table: str) -> bool:
        """Continue to the backfill only when a target table is given."""
        return bool(target_table.strip())

    backfill = IcebergIngestOperator(
        task_id="backfill_target",
        conn_id=SETTINGS.spark_conn_id,
        catalog=SETTINGS.catalog,
        iceberg_conn_id=ICEBERG_CONN_ID,
        table="{{ params.target_table }}",
        source=OUTPUT,
        source_format="parquet",
        mode="overwrite",
        overwrite_filter=DATE_RANGE,
    )
    export >> has_target("{{ params.target_table }}") >> backfill


iceberg_backfill_time_travel()
