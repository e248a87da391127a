"""IcebergCompactOperator: the compaction job's command line, plan-only mode, its inlet."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from airflow_iceberg_provider.operators.compact import IcebergCompactOperator


def test_defaults_leave_every_option_to_the_job() -> None:
    operator = IcebergCompactOperator(task_id="compact", catalog="lake", table="sales.orders")
    assert operator.job_arguments("lake", {}) == ["--catalog", "lake", "--table", "sales.orders"]
    # No inlet outside a DAG scheduled on the table: an inlet must name an Asset some DAG declares.
    assert (operator.inlets, operator.outlets) == ([], [])


def test_every_option_and_plan_only() -> None:
    operator = IcebergCompactOperator(
        task_id="compact",
        catalog="lake",
        table="sales.orders",
        where="day >= '2026-01-01'",
        target_file_size_bytes=134217728,
        min_file_size_bytes=100663296,
        max_file_size_bytes=241591910,
        min_input_files=5,
        delete_file_threshold=10,
        delete_ratio_threshold=0.3,
        max_file_group_size_bytes=107374182400,
        max_concurrent_file_group_rewrites=2,
        partial_progress=True,
        max_commits=4,
        dry_run=True,
    )
    assert operator.job_arguments("lake", {}) == [
        *["--catalog", "lake", "--table", "sales.orders", "--where", "day >= '2026-01-01'"],
        *["--target-file-size-bytes", "134217728", "--min-file-size-bytes", "100663296"],
        *["--max-file-size-bytes", "241591910", "--min-input-files", "5", "--delete-file-threshold", "10"],
        *["--delete-ratio-threshold", "0.3", "--max-file-group-size-bytes", "107374182400"],
        *["--max-concurrent-file-group-rewrites", "2", "--partial-progress", "--max-commits", "4", "--dry-run"],
    ]


def test_max_commits_needs_partial_progress() -> None:
    with pytest.raises(ValueError, match="max_commits needs partial_progress=True"):
        IcebergCompactOperator(task_id="c", catalog="lake", table="n.t", max_commits=2)


@pytest.mark.spark
@pytest.mark.usefixtures("spark_connection")
def test_plan_only_through_spark_submit(testing_catalog, events_table) -> None:
    head = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    operator = IcebergCompactOperator(
        task_id="plan", catalog="testing", table=events_table, min_input_files=2, dry_run=True
    )
    result = operator.execute(context={})
    assert (result["job"], result["dry_run"], result["operation"]) == ("compact", True, "replace")
    assert (result["snapshot_id"], result["file_groups"], result["rewritten_data_files"]) == (head, 1, 2)
    assert result["rewritten_rows"] == 15
    assert testing_catalog.load_table(events_table).current_snapshot().snapshot_id == head


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.usefixtures("spark_connection", "airflow_db")
def test_compaction_commits_a_replace_with_the_same_rows_and_reports_before_and_after(
    testing_catalog, events_table, tmp_path, monkeypatch
) -> None:
    """The report test: the HTML page and the XCom hold the right counts and size histograms, the link points at it
    (the plugin's page for a report under the report root)."""
    from airflow.sdk import DAG

    from airflow_iceberg_provider.links import CompactionReportLink
    from airflow_iceberg_provider.report_store import safe_name
    from tests.support.airflow_env import run_dag, task_state, xcom_value

    before = testing_catalog.load_table(events_table)
    sizes_before = sorted(before.inspect.files().column("file_size_in_bytes").to_pylist())
    monkeypatch.setenv("ICEBERG_PROVIDER_REPORT_ROOT", str(tmp_path / "reports"))
    with DAG("test_compaction_report", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        IcebergCompactOperator(
            task_id="compact",
            catalog="testing",
            table=events_table,
            min_input_files=2,
            target_file_size_bytes=1024 * 1024,
            conf={"spark.ui.enabled": "false"},
        )
    dag_run = run_dag(dag)
    assert task_state(dag_run, "compact") == "success"
    after = testing_catalog.load_table(events_table)
    assert after.current_snapshot().summary.operation.value == "replace"
    sizes_after = after.inspect.files().column("file_size_in_bytes").to_pylist()
    assert len(sizes_before) == 2 and len(sizes_after) == 1
    assert sorted(after.scan().to_arrow().column("id").to_pylist()) == list(range(15))

    summary = xcom_value(dag_run, "compact", "compaction_report")
    relative = f"test_compaction_report/{safe_name(dag_run.run_id)}/compact.html"
    report = tmp_path / "reports" / relative
    assert summary["location"] == str(report)
    assert (summary["before"]["data_files"], summary["after"]["data_files"]) == (2, 1)
    assert (summary["before"]["data_rows"], summary["after"]["data_rows"]) == (15, 15)
    assert (summary["before"]["snapshot_id"], summary["after"]["snapshot_id"]) == (
        before.current_snapshot().snapshot_id,
        after.current_snapshot().snapshot_id,
    )
    # Every file is under target/64 (16 KiB of a 1 MiB target): the first bucket holds them all.
    assert summary["before"]["histogram"] == [2, 0, 0, 0, 0, 0, 0, 0, 0]
    assert summary["after"]["histogram"] == [1, 0, 0, 0, 0, 0, 0, 0, 0]
    assert max(sizes_before + sizes_after) < 1024 * 1024 / 64
    page = report.read_text()
    assert page.count("<svg") == 2
    assert "Data file sizes before (2 files)" in page and "Data file sizes after (1 files)" in page
    assert re.search(r"<th>data files</th><td>2</td><td>1</td>", page)
    assert xcom_value(dag_run, "compact", CompactionReportLink().xcom_key) == f"/iceberg/reports/{relative}"


def test_sort_and_zorder_options_and_a_templated_dry_run() -> None:
    operator = IcebergCompactOperator(
        task_id="compact",
        catalog="lake",
        table="sales.orders",
        strategy="sort",
        sort_order="zorder(a, b)",
        shuffle_partitions_per_file=2,
        var_length_contribution=4,
        max_output_size=12,
        compression_factor=0.5,
        rewrite_all=True,
        rewrite_job_order="bytes-desc",
        output_spec_id=1,
        remove_dangling_deletes=True,
        dry_run="{{ params.dry_run }}",
    )
    assert "plan_only" in operator.template_fields and "sort_order" in operator.template_fields
    operator.plan_only = "False"  # as rendered from a param
    assert operator.job_arguments("lake", {})[4:] == [
        *["--rewrite-job-order", "bytes-desc", "--output-spec-id", "1", "--strategy", "sort"],
        *["--sort-order", "zorder(a, b)", "--compression-factor", "0.5", "--shuffle-partitions-per-file", "2"],
        *["--var-length-contribution", "4", "--max-output-size", "12", "--rewrite-all", "--remove-dangling-deletes"],
    ]
    operator.plan_only = "True"
    assert operator.job_arguments("lake", {})[-1] == "--dry-run"
