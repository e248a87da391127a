"""IcebergCompactionNeededSensor from metadata alone, in poke mode and deferred under dag.test()."""

from __future__ import annotations

import threading
from datetime import datetime

import pyarrow as pa
import pytest
from airflow.sdk import DAG
from pyiceberg.catalog import load_catalog

from airflow_iceberg_provider.sensors.compaction import IcebergCompactionNeededSensor
from tests.support.airflow_env import run_dag, task_state, xcom_return_value


def test_poke_reports_small_files(conformance_catalog) -> None:
    sensor = IcebergCompactionNeededSensor(
        task_id="s", catalog="conformance", table="corpus.small_files", min_small_files=1000
    )
    found = sensor.poke(context={})
    assert found.is_done
    assert found.xcom_value["stats"]["small_data_files"] == 2000
    assert found.xcom_value["reasons"][0].startswith("2000 data files under")


def test_poke_waits_below_the_thresholds(conformance_catalog) -> None:
    sensor = IcebergCompactionNeededSensor(
        task_id="s", catalog="conformance", table="corpus.v1_cow", min_delete_files=1, min_deleted_row_ratio=0.01
    )
    assert not sensor.poke(context={}).is_done


class _SmallFileOnDefer(IcebergCompactionNeededSensor):
    """The sensor, plus one more small file in its table a moment after it defers."""

    deferred: list[str] = []

    def defer(self, **kwargs):
        catalog = load_catalog("testing")

        def append() -> None:
            catalog.load_table(self.table).append(pa.table({"id": pa.array([99], pa.int64()), "category": ["z"]}))

        type(self).deferred.append(self.table)
        threading.Timer(1.0, append).start()
        super().defer(**kwargs)


@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_deferrable_sensor_defers_and_resumes_with_the_trigger_statistics(events_table) -> None:
    with DAG("test_compaction_sensor_deferred", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        _SmallFileOnDefer(
            task_id="needs_compaction",
            catalog="testing",
            table=events_table,
            min_small_files=3,
            deferrable=True,
            poke_interval=1,
            timeout=60,
        )
    dag_run = run_dag(dag)
    assert _SmallFileOnDefer.deferred == [events_table]
    assert task_state(dag_run, "needs_compaction") == "success"
    result = xcom_return_value(dag_run, "needs_compaction")
    assert result["stats"]["data_files"] == 3
    assert result["reasons"][0].startswith("3 data files under")


class _Lines:
    """A logger that keeps what it is given, formatted."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, message: str, *args) -> None:
        self.lines.append(message % args)


def test_without_thresholds_the_production_rules_decide_and_say_why(conformance_catalog) -> None:
    from airflow_iceberg_provider.sensors.compaction import log_decision

    sensor = IcebergCompactionNeededSensor(task_id="s", catalog="conformance", table="corpus.small_files")
    found = sensor.poke(context={})
    assert found.is_done
    decision = found.xcom_value
    assert decision["thresholds"]["max_small_files_per_partition"] == 100
    assert decision["reasons"] == [
        "partition (unpartitioned): 2000 small files (under 384 MiB) > 100 (AWS Glue's rule)",
        "partition (unpartitioned): 2000 fragment files (under 64 MiB) >= 12 (Apache Amoro's rule)",
    ]
    log = _Lines()
    log_decision(log, "corpus.small_files", decision)
    assert log.lines[0].startswith("corpus.small_files: compaction needed (2000 data files, 2000 small")
    assert log.lines[1].startswith("  partition (unpartitioned): 2000 data files (")

    healthy = IcebergCompactionNeededSensor(task_id="h", catalog="conformance", table="corpus.v1_cow")
    decision = healthy.poke(context={}).xcom_value
    assert not decision["needed"]
    assert all(line.endswith("-> healthy: no threshold reached") for line in decision["explanation"])
