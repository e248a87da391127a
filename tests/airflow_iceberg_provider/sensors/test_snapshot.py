"""IcebergSnapshotSensor in poke mode, and deferred to its trigger and resumed under dag.test()."""

from __future__ import annotations

import threading
from datetime import datetime

import pyarrow as pa
import pytest
from airflow.sdk import DAG
from pyiceberg.catalog import load_catalog

from airflow_iceberg_provider.sensors.snapshot import IcebergSnapshotSensor
from tests.support.airflow_env import run_dag, task_state, xcom_return_value


def test_poke_sees_a_snapshot_after_the_given_one(testing_catalog, events_table) -> None:
    first, second = (s.snapshot_id for s in testing_catalog.load_table(events_table).snapshots())
    sensor = IcebergSnapshotSensor(task_id="s", catalog="testing", table=events_table, since_snapshot_id=str(first))
    found = sensor.poke(context={})
    assert found.is_done
    assert found.xcom_value["snapshot_id"] == second
    at_head = IcebergSnapshotSensor(task_id="h", catalog="testing", table=events_table, since_snapshot_id=second)
    assert not at_head.poke(context={}).is_done


def test_an_operation_condition_waits_past_other_snapshots(testing_catalog, events_table) -> None:
    sensor = IcebergSnapshotSensor(task_id="s", catalog="testing", table=events_table, operation="delete")
    assert not sensor.poke(context={}).is_done


class _CommitOnDefer(IcebergSnapshotSensor):
    """The sensor, plus a commit to its table a moment after it defers: the trigger, not the first check, sees it."""

    deferred: list[int] = []

    def defer(self, **kwargs):
        catalog = load_catalog("testing")

        def append() -> None:
            catalog.load_table(self.table).append(pa.table({"id": pa.array([99], pa.int64()), "category": ["z"]}))

        type(self).deferred.append(int(self.since_snapshot_id))
        threading.Timer(1.0, append).start()
        super().defer(**kwargs)


@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_deferrable_sensor_defers_and_resumes_with_the_new_snapshot(testing_catalog, events_table) -> None:
    head = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    with DAG("test_snapshot_sensor_deferred", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        _CommitOnDefer(
            task_id="wait_for_append",
            catalog="testing",
            table=events_table,
            since_snapshot_id=head,
            operation="append",
            deferrable=True,
            poke_interval=1,
            timeout=120,
        )
    dag_run = run_dag(dag)
    new_head = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    assert _CommitOnDefer.deferred == [head]
    assert new_head != head
    assert task_state(dag_run, "wait_for_append") == "success"
    assert xcom_return_value(dag_run, "wait_for_append")["snapshot_id"] == new_head
