"""For existing deployments: a plain ``SparkSubmitOperator`` pointing at the ``spark_jobs/read.py`` entry point.

No provider operator involved: the documented command line (docs/jobs/read.md) is the whole contract. The
catalog comes from pyiceberg's configuration where the driver runs (``PYICEBERG_CATALOG__<NAME>__<KEY>``, here
through ``env_vars``, or ``.pyiceberg.yaml``), and the job ships the ``spark_jobs`` package to the executors itself
(``addPyFile``) unless ``py_files`` already carries a ``spark_jobs*.zip``. The result is the job's last stdout line
in the task log.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import dag

from airflow_iceberg_provider.engine_package import engine_package_dir
from airflow_iceberg_provider.settings import ProviderSettings

SETTINGS = ProviderSettings.from_environment()
READ_JOB = str(engine_package_dir() / "read.py")
CATALOG_PREFIX = f"PYICEBERG_CATALOG__{SETTINGS.catalog.upper().replace('-', '_')}__"


@dag(schedule=None, start_date=datetime(2026, 1, 1), catchup=False, tags=["iceberg", "example"])
def iceberg_spark_submit_read() -> None:
    """Export the events table's current snapshot to Parquet with spark-submit."""
    SparkSubmitOperator(
        task_id="read_events",
        conn_id=SETTINGS.spark_conn_id,
        application=READ_JOB,
        name="iceberg-read-events",
        application_args=[
            *["--catalog", SETTINGS.catalog, "--table", f"{SETTINGS.namespace}.events"],
            *["--output", str(Path(SETTINGS.output_root) / "spark_submit_read" / "{{ ds }}"), "--mode", "overwrite"],
        ],
        # The catalog's properties from this worker's environment (process environment of spark-submit, never argv).
        env_vars={name: value for name, value in os.environ.items() if name.startswith(CATALOG_PREFIX)},
        conf={"spark.ui.showConsoleProgress": "false"},
    )


iceberg_spark_submit_read()
