"""SparkJobSubmitHook keeps every SparkSubmitHook setting and reads the job's lines as they stream to the log."""

from __future__ import annotations

import json

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_iceberg_provider.hooks.spark_job import SparkJobSubmitHook


@pytest.fixture
def spark_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_CLUSTER",
        json.dumps(
            {"conn_type": "spark", "host": "spark://10.0.0.1", "port": 7077, "extra": {"deploy-mode": "cluster"}}
        ),
    )


def test_from_hook_keeps_the_command(spark_connections: None) -> None:
    base = SparkSubmitHook(conn_id="spark_local", conf={"spark.ui.enabled": "false"}, py_files="a.zip", name="job")
    hook = SparkJobSubmitHook.from_hook(base)
    assert hook._build_spark_submit_command("read.py") == base._build_spark_submit_command("read.py")
    assert hook.runs_driver_locally


def test_cluster_deploy_mode_has_no_local_driver(spark_connections: None) -> None:
    assert not SparkJobSubmitHook.from_hook(SparkSubmitHook(conn_id="spark_cluster")).runs_driver_locally


def test_lines_are_read_on_their_way_to_the_log(spark_connections: None) -> None:
    hook = SparkJobSubmitHook.from_hook(SparkSubmitHook(conn_id="spark_local"))
    hook._process_spark_submit_log(iter(["INFO starting\n", '{"status":"ok","rows_out":3}\n', "INFO stopped\n"]))
    assert hook.job_output.result == {"status": "ok", "rows_out": 3}
    assert list(hook.job_output.tail)[-1] == "INFO stopped"
