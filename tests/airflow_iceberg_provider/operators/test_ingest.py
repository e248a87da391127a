"""IcebergIngestOperator: the ingest job's command line, its idempotency key and its outlet."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

import pytest
from airflow.sdk import DAG

from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator, default_idempotency_key
from airflow_iceberg_provider.partition_events import task_partition_keys_supported


def _context(run_id: str = "scheduled__2026-01-01T00:00:00+00:00", map_index: int = -1) -> dict:
    ti = SimpleNamespace(dag_id="hourly", task_id="ingest", map_index=map_index)
    return {"ti": ti, "run_id": run_id}


def test_upsert_command_line() -> None:
    operator = IcebergIngestOperator(
        task_id="ingest",
        catalog="lake",
        table="sales.orders",
        source="s3://landing/orders/",
        source_format="json",
        source_mode="permissive",
        mode="upsert",
        key=["order_id", "region"],
        delete_mode="equality",
    )
    assert operator.job_arguments("lake", _context()) == [
        *["--catalog", "lake", "--table", "sales.orders", "--source", "s3://landing/orders/"],
        *["--source-format", "json", "--source-mode", "permissive"],
        *["--mode", "upsert", "--key", "order_id,region", "--delete-mode", "equality"],
        *["--idempotency-key", "hourly/scheduled__2026-01-01T00:00:00+00:00/ingest"],
    ]


def test_create_overwrite_and_evolution_flags() -> None:
    operator = IcebergIngestOperator(
        task_id="ingest",
        catalog="lake",
        table="sales.orders",
        source="/landing",
        sql="SELECT * FROM source WHERE qty > 0",
        mode="overwrite",
        overwrite_filter="day = '2026-01-01'",
        idempotency_key="batch-42",
        create_if_missing=True,
        partition_by="day(ts),bucket(16,id)",
        sort_by="id",
        format_version=3,
        allow_schema_evolution=True,
    )
    assert operator.job_arguments("lake", _context()) == [
        *["--catalog", "lake", "--table", "sales.orders", "--source", "/landing"],
        *["--sql", "SELECT * FROM source WHERE qty > 0", "--mode", "overwrite"],
        *["--overwrite-filter", "day = '2026-01-01'", "--idempotency-key", "batch-42"],
        *["--create-if-missing", "--partition-by", "day(ts),bucket(16,id)", "--sort-by", "id"],
        *["--format-version", "3"],
        "--allow-schema-evolution",
    ]


def test_a_format_version_is_2_or_3_and_only_for_a_table_the_job_creates() -> None:
    with pytest.raises(ValueError, match="format_version 4 is not 2 or 3"):
        IcebergIngestOperator(
            task_id="i", catalog="c", table="n.t", source="/s", create_if_missing=True, format_version=4
        )
    with pytest.raises(ValueError, match="set create_if_missing=True"):
        IcebergIngestOperator(task_id="i", catalog="c", table="n.t", source="/s", format_version=2)
    operator = IcebergIngestOperator(task_id="i", catalog="c", table="n.t", source="/s", create_if_missing=True)
    assert "--format-version" not in operator.job_arguments("c", _context())


def test_the_default_key_is_stable_across_tries_and_differs_between_runs_and_map_indexes() -> None:
    assert default_idempotency_key(_context()) == default_idempotency_key(_context())
    assert default_idempotency_key(_context()) != default_idempotency_key(_context(run_id="manual__x"))
    assert default_idempotency_key(_context(map_index=3)).endswith("/ingest/3")


def test_an_empty_key_sends_none() -> None:
    operator = IcebergIngestOperator(task_id="i", catalog="c", table="n.t", source="/s", idempotency_key="")
    assert "--idempotency-key" not in operator.job_arguments("c", _context())


def test_templated_fields_render_and_the_table_is_an_outlet() -> None:
    with DAG("test_ingest_render", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        operator = IcebergIngestOperator(
            task_id="ingest", catalog="lake", table="sales.orders", source="/landing/{{ ds }}", key="{{ params.key }}"
        )
    operator.render_template_fields({"ds": "2026-01-02", "params": {"key": "id"}}, jinja_env=dag.get_template_env())
    assert (operator.source, operator.key) == ("/landing/2026-01-02", "id")
    # The table and (Airflow 3.3+: one event per changed partition) its partitioned asset.
    expected = ["iceberg://lake/sales/orders"]
    if task_partition_keys_supported():
        expected.append("iceberg://lake/sales/orders/partitions")
    assert [asset.uri for asset in operator.outlets] == expected
    assert operator.inlets == []


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode 'merge' is not one of"):
        IcebergIngestOperator(task_id="i", catalog="c", table="n.t", source="/s", mode="merge")


@pytest.mark.spark
@pytest.mark.usefixtures("spark_connection")
def test_a_retried_ingest_task_adds_no_rows(testing_catalog, events_table, tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "landing"
    source.mkdir()
    pq.write_table(
        pa.table({"id": pa.array([100, 101, 102], pa.int64()), "category": ["x", "y", "x"]}), source / "a.parquet"
    )
    operator = IcebergIngestOperator(
        task_id="ingest", catalog="testing", table=events_table, source=str(source), conf={"spark.ui.enabled": "false"}
    )
    first_try = operator.execute(context=_context())
    second_try = operator.execute(context=_context())
    table = testing_catalog.load_table(events_table)
    assert first_try["already_committed"] is False
    assert second_try["already_committed"] is True
    assert second_try["snapshot_id"] == first_try["snapshot_id"] == table.current_snapshot().snapshot_id
    assert table.scan().to_arrow().num_rows == 15 + 3
