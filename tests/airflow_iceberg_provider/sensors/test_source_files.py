"""IcebergSourceFilesSensor: a local folder's marker, an S3 folder's marker with the catalog's keys, deferred and
resumed under dag.test(), and a deferral timeout that skips only with soft_fail."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

import pytest
from airflow.sdk import DAG

from airflow_iceberg_provider.airflow_compat import AirflowSensorTimeout, AirflowSkipException
from airflow_iceberg_provider.sensors.source_files import IcebergSourceFilesSensor
from tests.support.airflow_env import run_dag, task_state


def test_poke_waits_for_the_marker_not_for_the_first_file(tmp_path: Path) -> None:
    folder = tmp_path / "2026-01-01" / "16"
    sensor = IcebergSourceFilesSensor(task_id="landed", path=str(folder) + "/")
    assert sensor.location == f"{folder}/_SUCCESS"
    assert not sensor.poke(context={})
    folder.mkdir(parents=True)
    (folder / "part-0.parquet").write_bytes(b"PAR1")
    assert not sensor.poke(context={})
    (folder / "_SUCCESS").touch()
    assert sensor.poke(context={})


@pytest.mark.s3
def test_an_s3_folder_is_checked_with_the_catalogs_endpoint_and_keys(seaweedfs, s3_sql_catalog) -> None:
    filesystem = seaweedfs.filesystem()
    folder = "landing/sensor-test/2026-01-01/16"
    sensor = IcebergSourceFilesSensor(task_id="landed", catalog=s3_sql_catalog, path=f"s3://{folder}")
    assert not sensor.poke(context={})
    with filesystem.open_output_stream(f"{folder}/_SUCCESS") as marker:
        marker.write(b"")
    assert sensor.poke(context={})


class _LandOnDefer(IcebergSourceFilesSensor):
    """The sensor, plus its marker written a moment after it defers: the trigger, not the first check, sees it."""

    deferred: list[str] = []

    def defer(self, **kwargs):
        type(self).deferred.append(self.location)
        threading.Timer(1.0, Path(self.location).touch).start()
        super().defer(**kwargs)


@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_deferred_wait_resumes_when_the_marker_lands(tmp_path: Path) -> None:
    landed = tmp_path / "landed"
    landed.mkdir()
    with DAG("test_source_files_sensor", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        _LandOnDefer(task_id="wait", path=str(landed), deferrable=True, poke_interval=1, timeout=60)
    dag_run = run_dag(dag)
    assert _LandOnDefer.deferred == [f"{landed}/_SUCCESS"]
    assert task_state(dag_run, "wait") == "success"


@pytest.mark.parametrize(("soft_fail", "raised"), [(True, AirflowSkipException), (False, AirflowSensorTimeout)])
def test_a_deferred_wait_that_times_out_is_skipped_only_with_soft_fail(tmp_path: Path, soft_fail, raised) -> None:
    """What the task runner does when the triggerer reports the deferral's timeout."""
    from airflow.sdk.bases.operator import TRIGGER_FAIL_REPR, TriggerFailureReason

    sensor = IcebergSourceFilesSensor(task_id="t", path=str(tmp_path), deferrable=True, soft_fail=soft_fail)
    with pytest.raises(raised):
        sensor.resume_execution(TRIGGER_FAIL_REPR, {"error": TriggerFailureReason.TRIGGER_TIMEOUT}, context={})
