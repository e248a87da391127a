"""SparkJobSubmitHook keeps every SparkSubmitHook setting and reads the job's lines as they stream to the log."""

from __future__ import annotations

import json

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_iceberg_provider.hooks.spark_job import SparkJobSubmitHook
from airflow_iceberg_provider.hooks.spark_submit_compat import SubmitHookSeam


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
    # spark.log.level given: Spark's logging is the submission's choice, nothing is added.
    conf = {"spark.ui.enabled": "false", "spark.log.level": "INFO"}
    base = SparkSubmitHook(conn_id="spark_local", conf=conf, py_files="a.zip", name="job")
    hook = SparkJobSubmitHook.from_hook(base)
    assert hook.build_command("read.py") == SubmitHookSeam.from_hook(base).build_command("read.py")
    assert hook.runs_driver_locally


def test_spark_logs_at_warn_unless_the_submission_says_otherwise(spark_connections: None) -> None:
    local = SparkJobSubmitHook.from_hook(SparkSubmitHook(conn_id="spark_local")).build_command("r.py")
    assert "spark.log.level=WARN" in local
    assert any(part.startswith("spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=") for part in local)
    cluster = SparkJobSubmitHook.from_hook(SparkSubmitHook(conn_id="spark_cluster"))
    command = cluster.build_command("r.py")
    assert "spark.log.level=WARN" in command
    assert not any("extraJavaOptions" in part for part in command)  # the driver's JVM is not started here


def test_cluster_deploy_mode_has_no_local_driver(spark_connections: None) -> None:
    assert not SparkJobSubmitHook.from_hook(SparkSubmitHook(conn_id="spark_cluster")).runs_driver_locally


def test_lines_are_read_on_their_way_to_the_log(spark_connections: None) -> None:
    hook = SparkJobSubmitHook.from_hook(SparkSubmitHook(conn_id="spark_local"))
    for _ in hook.output_lines(iter(["INFO starting\n", '{"status":"ok","rows_out":3}\n', "INFO stopped\n"])):
        pass
    assert hook.job_output.result == {"status": "ok", "rows_out": 3}
    assert list(hook.job_output.tail)[-1] == "INFO stopped"


def test_the_output_announces_the_spark_ui_and_the_yarn_tracking_page_once_each() -> None:
    from airflow_iceberg_provider.hooks.spark_job import SparkJobSubmitHook
    from airflow_iceberg_provider.links import SparkDriverLogLink, SparkUiLink

    hook = SparkJobSubmitHook(conn_id="spark_default")
    seen: list[tuple[str, str]] = []
    hook.on_link = lambda link, url: seen.append((link.name, url))
    lines = [
        "26/01/01 10:00:00 INFO Client: Application report for application_1_0001 (state: ACCEPTED)",
        "\t tracking URL: http://rm:8088/proxy/application_1_0001/",
        "2026-01-01 10:00:01 INFO spark_jobs: Spark UI http://10.0.0.5:4040 (application app-1)",
        "INFO SparkUI: Bound SparkUI to 0.0.0.0, and started at http://10.0.0.5:4041",
        '{"status":"ok"}',
    ]
    assert list(hook.output_lines(iter(lines))) == lines
    assert seen == [
        (SparkDriverLogLink.name, "http://rm:8088/proxy/application_1_0001/"),
        (SparkUiLink.name, "http://10.0.0.5:4040"),
    ]
