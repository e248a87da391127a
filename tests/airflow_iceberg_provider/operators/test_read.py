"""IcebergReadOperator end to end on Spark local[2] (real spark-submit under dag.test), and what it submits."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from airflow.sdk import DAG

from airflow_iceberg_provider.job_output import JobOutput
from airflow_iceberg_provider.operators.read import IcebergReadOperator
from airflow_iceberg_provider.operators.spark_job import IcebergJobInputError
from tests.support.airflow_env import run_dag, task_state, xcom_return_value

QUIET = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}
SECRET = "conn-extra-password-91c2"


@pytest.fixture
def lake_connection(monkeypatch: pytest.MonkeyPatch) -> str:
    """An ``iceberg`` connection to the ``testing`` catalog whose extra carries a password."""
    extra = {
        "type": "sql",
        "uri": os.environ["PYICEBERG_CATALOG__TESTING__URI"],
        "warehouse": os.environ["PYICEBERG_CATALOG__TESTING__WAREHOUSE"],
        "catalog_name": "testing",
        "s3.secret-access-key": SECRET,
    }
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps({"conn_type": "iceberg", "extra": extra}))
    return "lake"


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db", "spark_connection")
def test_reads_the_first_snapshot_through_spark_submit_and_returns_the_result_line(
    lake_connection, events_table, testing_catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines: list[str] = []  # every line of spark-submit's output, as the task log gets it
    add_line = JobOutput.add_line
    monkeypatch.setattr(JobOutput, "add_line", lambda output, line: (lines.append(line), add_line(output, line))[1])
    first_snapshot = testing_catalog.load_table(events_table).snapshots()[0].snapshot_id
    output = tmp_path / "first"
    with DAG("test_read_operator", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        IcebergReadOperator(
            task_id="read_first",
            iceberg_conn_id=lake_connection,
            table=events_table,
            snapshot_id=first_snapshot,
            columns=["id"],
            row_filter="id >= 3",
            output_path=str(output),
            conf=QUIET,
        )
    dag_run = run_dag(dag)
    assert task_state(dag_run, "read_first") == "success"
    result = xcom_return_value(dag_run, "read_first")
    assert result["snapshot_id"] == first_snapshot
    assert result["rows_out"] == 7
    assert sorted(pq.read_table(output).column("id").to_pylist()) == list(range(3, 10))

    # The log a person reads: Spark's INFO chatter off by default, the job's phases, then a summary before the JSON.
    assert [line for line in lines if " INFO " in line and " spark_jobs" not in line] == []
    assert any(" spark_jobs.read: plan done in " in line for line in lines)
    assert any(" spark_jobs.read: read and write done in " in line for line in lines)
    result_at = max(index for index, line in enumerate(lines) if line.startswith('{"status":"ok"'))
    summary = [line.split(" spark_jobs: ", 1)[1].strip() for line in lines[:result_at] if " INFO spark_jobs: " in line]
    assert any(line.startswith("rows: ") and "rows out 7" in line for line in summary)
    assert any(line.startswith("pruning skipped: ") for line in summary)
    # Seven rows of a small table: read in the job's driver, no Spark session (spark_jobs/spark/driver_read.py).
    assert result["ran_in"] == "driver"
    assert f"read of {events_table} at snapshot {first_snapshot} (read in the driver: no Spark session)" in summary
    assert any(line.startswith("seconds: ") and "Spark start" not in line for line in summary)


@pytest.mark.spark
def test_a_failing_job_fails_the_task_with_its_reason(airflow_db, spark_connection, tmp_path: Path) -> None:
    operator = IcebergReadOperator(
        task_id="read_missing",
        catalog="testing",
        table="airflow_tests.no_such_table",
        output_path=str(tmp_path / "out"),
        conf=QUIET,
    )
    with pytest.raises(
        IcebergJobInputError, match=r"read job on airflow_tests\.no_such_table failed: .*table .* not found"
    ):
        operator.execute(context={})
    assert not (tmp_path / "out").exists()


def _submission(conn_id: str, lake_connection: str):
    operator = IcebergReadOperator(
        task_id="read",
        conn_id=conn_id,
        iceberg_conn_id=lake_connection,
        table="ns.events",
        output_path="/tmp/out",
        ref="audit",
    )
    operator.prepare_submission(context={})
    hook = operator._get_hook()
    return operator, hook, hook.build_command(operator.application)


def test_the_command_line_carries_no_secret_and_the_environment_does(spark_connection, lake_connection) -> None:
    operator, hook, command = _submission("spark_default", lake_connection)
    assert SECRET not in " ".join(command)
    assert hook.submit_environment()["PYICEBERG_CATALOG__TESTING__S3__SECRET_ACCESS_KEY"] == SECRET
    assert command[command.index(operator.application) :] == [
        operator.application,
        *["--catalog", "testing", "--table", "ns.events", "--ref", "audit", "--output", "/tmp/out"],
        *["--output-format", "parquet", "--mode", "error"],
    ]
    assert Path(operator.application).name == "read.py"
    assert Path(command[command.index("--py-files") + 1]).name.startswith("spark_jobs-")


def test_yarn_client_mode_keeps_the_secret_in_the_environment(monkeypatch, lake_connection) -> None:
    """SparkSubmitHook copies env_vars into spark.yarn.appMasterEnv confs; the catalog's variables never go there."""
    yarn_client = {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "client"}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN", json.dumps(yarn_client))
    _, hook, command = _submission("spark_yarn", lake_connection)
    assert command[command.index("--master") + 1] == "yarn"
    assert SECRET not in " ".join(command)
    assert hook.submit_environment()["PYICEBERG_CATALOG__TESTING__S3__SECRET_ACCESS_KEY"] == SECRET


def test_yarn_cluster_mode_sends_the_catalog_in_a_private_properties_file(monkeypatch, lake_connection) -> None:
    """The driver starts on the cluster: its environment travels as driver-env confs in a 0600 properties file."""
    yarn_cluster = {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN_CLUSTER", json.dumps(yarn_cluster))
    _, hook, command = _submission("spark_yarn_cluster", lake_connection)
    try:
        assert SECRET not in " ".join(command)
        properties_file = Path(command[command.index("--properties-file") + 1])
        assert stat.S_IMODE(properties_file.stat().st_mode) == 0o600
        conf = f"spark.yarn.appMasterEnv.PYICEBERG_CATALOG__TESTING__S3__SECRET_ACCESS_KEY={SECRET}"
        assert conf in properties_file.read_text().splitlines()
    finally:
        hook.remove_job_properties_file()


def test_templated_fields_render() -> None:
    with DAG("test_read_render", schedule=None, start_date=datetime(2026, 1, 1), params={"table": "ns.t"}) as dag:
        operator = IcebergReadOperator(
            task_id="read",
            catalog="{{ params.catalog }}",
            table="{{ params.table }}",
            snapshot_id="{{ params.snapshot_id }}",
            as_of="{{ params.as_of }}",
            row_filter="day = '{{ ds }}'",
            output_path="/exports/{{ ds }}",
            application_args=["--split-size", "{{ params.split }}"],
        )
    params = {"catalog": "lake", "table": "ns.t", "snapshot_id": None, "as_of": "2026-01-02", "split": 1024}
    context = {"params": params}
    operator.render_template_fields({**context, "ds": "2026-01-03"}, jinja_env=dag.get_template_env())
    assert (operator.catalog, operator.table, operator.output_path) == ("lake", "ns.t", "/exports/2026-01-03")
    assert operator.extra_application_args == ["--split-size", "1024"]
    assert operator.job_arguments("lake", context={}) == [
        *["--catalog", "lake", "--table", "ns.t", "--as-of", "2026-01-02", "--filter", "day = '2026-01-03'"],
        *["--output", "/exports/2026-01-03", "--output-format", "parquet", "--mode", "error"],
    ]


def test_the_table_is_an_inlet_asset_only_where_its_dag_is_scheduled_on_it() -> None:
    """An inlet must name an Asset some DAG declares (Airflow fails the task otherwise): a reference would not do."""
    from airflow_iceberg_provider.assets import iceberg_table_asset

    plain = IcebergReadOperator(task_id="a", catalog="Lake", table="sales.orders", output_path="/o")
    assert (plain.inlets, plain.outlets) == ([], [])
    orders = iceberg_table_asset("lake", "sales.orders")
    with DAG("read_on_orders", schedule=[orders], start_date=datetime(2026, 1, 1)):
        scheduled = IcebergReadOperator(task_id="b", catalog="lake", table="sales.orders", output_path="/o")
        templated = IcebergReadOperator(task_id="c", catalog="lake", table="{{ params.table }}", output_path="/o")
    assert scheduled.inlets == [orders]
    assert templated.inlets == []


def test_a_catalog_or_a_connection_is_required() -> None:
    with pytest.raises(ValueError, match="needs catalog= or iceberg_conn_id="):
        IcebergReadOperator(task_id="a", table="sales.orders", output_path="/o")


@pytest.mark.spark
@pytest.mark.standalone
@pytest.mark.postgres
@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_reads_on_the_standalone_cluster_from_a_postgresql_catalog(
    monkeypatch: pytest.MonkeyPatch, spark_standalone, postgres, tmp_path: Path
) -> None:
    """The distributed shape: Spark master and worker, a SQL catalog on PostgreSQL reached through the connection."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    from tests.support.airflow_env import path_with_spark_submit

    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    properties = {"uri": postgres.create_database("airflow_read_catalog"), "warehouse": f"file://{warehouse}"}
    catalog = SqlCatalog("pglake", **properties)
    catalog.create_namespace_if_not_exists("sales")
    rows = pa.table({"id": pa.array(range(1000), pa.int64()), "region": pa.array(["eu", "us"] * 500)})
    catalog.create_table("sales.orders", schema=rows.schema).append(rows)
    extra = {"type": "sql", "catalog_name": "pglake", **properties}
    monkeypatch.setenv("AIRFLOW_CONN_PG_LAKE", json.dumps({"conn_type": "iceberg", "extra": extra}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_CLUSTER", json.dumps({"conn_type": "spark", "host": spark_standalone.master_url})
    )
    monkeypatch.setenv("PATH", path_with_spark_submit())
    output = tmp_path / "eu"
    with DAG("test_read_operator_standalone", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        IcebergReadOperator(
            task_id="read_eu",
            conn_id="spark_cluster",
            iceberg_conn_id="pg_lake",
            table="sales.orders",
            row_filter="region = 'eu'",
            output_path=str(output),
            driver_max_bytes=0,  # on the cluster's executors, not in the driver
            conf={**QUIET, "spark.driver.host": "127.0.0.1"},
        )
    dag_run = run_dag(dag)
    assert task_state(dag_run, "read_eu") == "success"
    assert xcom_return_value(dag_run, "read_eu")["rows_out"] == 500
    assert xcom_return_value(dag_run, "read_eu")["ran_in"] == "spark"
    assert pq.read_table(output).column("region").unique().to_pylist() == ["eu"]


def test_aggregates_replace_the_export_on_the_command_line() -> None:
    operator = IcebergReadOperator(
        task_id="totals",
        catalog="lake",
        table="sales.orders",
        aggregates=["count(*)", "sum(amount)", "max(ts)"],
        row_filter="region = 'eu'",
        ref="audit",
    )
    assert operator.job_arguments("lake", context={}) == [
        *["--catalog", "lake", "--table", "sales.orders", "--ref", "audit", "--filter", "region = 'eu'"],
        *["--aggregate", "count(*),sum(amount),max(ts)"],
    ]
    assert operator.lineage_datasets(None, 7)[1] == []
    for kwargs in ({}, {"output_path": "/o", "aggregates": "count(*)"}):
        with pytest.raises(ValueError, match="exactly one of output_path= and aggregates="):
            IcebergReadOperator(task_id="a", catalog="lake", table="sales.orders", **kwargs)


@pytest.mark.spark
def test_aggregates_come_back_in_the_xcom_as_json(airflow_db, spark_connection, events_table, testing_catalog) -> None:
    first_snapshot = testing_catalog.load_table(events_table).snapshots()[0].snapshot_id
    operator = IcebergReadOperator(
        task_id="totals",
        catalog="testing",
        table=events_table,
        aggregates="count(*), sum(id), max(category), min(id)",
        row_filter="id >= 3",
        snapshot_id=first_snapshot,
        conf=QUIET,
    )
    result = operator.execute(context={})
    assert json.loads(json.dumps(result)) == result
    assert result["snapshot_id"] == first_snapshot
    assert result["aggregates"] == {"count(*)": 7, "sum(id)": sum(range(3, 10)), "max(category)": "b", "min(id)": 3}
