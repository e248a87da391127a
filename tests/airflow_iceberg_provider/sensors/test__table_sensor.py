"""What every table sensor shares: a catalog to look in, and how a trigger's event ends the wait."""

from __future__ import annotations

import pytest
from airflow.sdk import PokeReturnValue

from airflow_iceberg_provider.airflow_compat import AirflowException
from airflow_iceberg_provider.sensors._table_sensor import IcebergTableSensor


class RowsSensor(IcebergTableSensor):
    """A sensor on a made-up condition, to exercise the base class."""

    waiting_for = "rows"

    def poke(self, context) -> PokeReturnValue:
        return PokeReturnValue(is_done=True, xcom_value={"rows": 3})

    def result_of_event(self, event: dict) -> dict:
        return {"rows": event["rows"]}


def test_a_sensor_needs_a_catalog_or_a_connection() -> None:
    with pytest.raises(ValueError, match=r"RowsSensor wait on 'ns\.t' needs catalog= or iceberg_conn_id="):
        RowsSensor(task_id="wait", table="ns.t")
    assert RowsSensor(task_id="wait", table="ns.t", catalog="lake").catalog_hook().catalog_name == "lake"


def test_a_deferrable_sensor_that_is_done_at_once_never_defers() -> None:
    sensor = RowsSensor(task_id="wait", table="ns.t", catalog="lake", deferrable=True)
    assert sensor.execute({}) == {"rows": 3}


def test_the_triggers_event_is_the_result_or_the_failure() -> None:
    sensor = RowsSensor(task_id="wait", table="ns.t", catalog="lake")
    assert sensor.execute_complete({}, {"status": "success", "table": "ns.t", "rows": 5}) == {"rows": 5}
    with pytest.raises(AirflowException, match=r"waiting for rows of ns\.t failed: NoSuchTableError: gone"):
        sensor.execute_complete({}, {"status": "error", "table": "ns.t", "message": "NoSuchTableError: gone"})
