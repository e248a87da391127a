"""Extra links: which spark-submit lines announce which link, how a location becomes a URL, and a link's URL stored
in the running task's XCom under the key Airflow reads it from."""

from __future__ import annotations

from datetime import datetime

import pytest

from airflow_iceberg_provider.links import (
    CompactionReportLink,
    SparkDriverLogLink,
    SparkUiLink,
    spark_link_in,
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "2026-01-01 10:00:01 INFO spark_jobs: Spark UI http://10.0.0.5:4040 (application app-1)",
            (SparkUiLink, "http://10.0.0.5:4040"),
        ),
        (
            "INFO spark_jobs: Spark UI: https://driver.example:4443/jobs/",
            (SparkUiLink, "https://driver.example:4443/jobs/"),
        ),
        (
            "INFO SparkUI: Bound SparkUI to 0.0.0.0, and started at http://10.0.0.5:4041",
            (SparkUiLink, "http://10.0.0.5:4041"),
        ),
        (
            "\t tracking URL: http://rm:8088/proxy/application_1_0001/",
            (SparkDriverLogLink, "http://rm:8088/proxy/application_1_0001/"),
        ),
    ],
)
def test_a_line_announcing_a_link_gives_its_class_and_url(line: str, expected) -> None:
    assert spark_link_in(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "INFO Client: Application report for application_1_0001 (state: ACCEPTED)",
        "INFO SparkUI: Stopped Spark web UI",
        "tracking URL: N/A",  # YARN before the application master has one
        '{"status":"ok","rows_out":3}',
        "",
    ],
)
def test_other_lines_announce_nothing(line: str) -> None:
    assert spark_link_in(line) is None


def test_each_link_has_its_own_name_and_xcom_key() -> None:
    links = [SparkUiLink(), SparkDriverLogLink(), CompactionReportLink()]
    assert [link.name for link in links] == ["Spark UI", "Spark driver log", "Compaction report"]
    assert len({link.xcom_key for link in links}) == 3


def test_storing_without_a_task_instance_does_nothing() -> None:
    """``execute({})`` outside a DAG run has no task instance to push to; storing must not fail there."""
    context: dict = {}
    SparkUiLink().store(context, "http://10.0.0.5:4040")
    assert context == {}


@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_a_stored_url_is_the_running_tasks_xcom_under_the_links_key() -> None:
    from airflow.sdk import DAG, get_current_context, task

    from tests.support.airflow_env import run_dag, task_state, xcom_value

    with DAG("test_links_store", schedule=None, start_date=datetime(2026, 1, 1)) as dag:

        @task(task_id="submit")
        def submit() -> None:
            context = get_current_context()
            SparkUiLink().store(context, "http://10.0.0.5:4040")
            SparkDriverLogLink().store(context, "http://rm:8088/proxy/application_1_0001/")

        submit()

    dag_run = run_dag(dag)
    assert task_state(dag_run, "submit") == "success"
    assert xcom_value(dag_run, "submit", SparkUiLink().xcom_key) == "http://10.0.0.5:4040"
    assert xcom_value(dag_run, "submit", SparkDriverLogLink().xcom_key) == "http://rm:8088/proxy/application_1_0001/"
    assert xcom_value(dag_run, "submit", CompactionReportLink().xcom_key) is None
