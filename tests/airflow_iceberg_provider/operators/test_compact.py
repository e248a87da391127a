"""IcebergCompactOperator: the compaction job's command line, plan-only mode, its inlet."""

from __future__ import annotations

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
@pytest.mark.usefixtures("spark_connection")
def test_compaction_through_spark_submit_commits_a_replace_with_the_same_rows(testing_catalog, events_table) -> None:
    before = testing_catalog.load_table(events_table)
    operator = IcebergCompactOperator(
        task_id="compact", catalog="testing", table=events_table, min_input_files=2, conf={"spark.ui.enabled": "false"}
    )
    result = operator.execute(context={})
    after = testing_catalog.load_table(events_table)
    assert after.current_snapshot().snapshot_id != before.current_snapshot().snapshot_id
    assert after.current_snapshot().summary.operation.value == "replace"
    assert len(after.inspect.files()) == 1
    assert sorted(after.scan().to_arrow().column("id").to_pylist()) == list(range(15))
    assert result["job"] == "compact"


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
