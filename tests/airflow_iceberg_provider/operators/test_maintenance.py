"""IcebergMaintenanceOperator: the maintenance job's command lines."""

from __future__ import annotations

import pytest

from airflow_iceberg_provider.operators.maintenance import IcebergMaintenanceOperator


def test_expire_snapshots_command_line() -> None:
    operator = IcebergMaintenanceOperator(
        task_id="expire",
        catalog="lake",
        table="sales.orders",
        action="expire-snapshots",
        older_than="2026-01-01T00:00:00",
        retain_last=10,
        dry_run=True,
    )
    assert operator.job_arguments("lake", {}) == [
        "expire-snapshots",
        *["--catalog", "lake", "--table", "sales.orders", "--older-than", "2026-01-01T00:00:00"],
        *["--retain-last", "10", "--dry-run"],
    ]


def test_remove_orphan_files_command_line() -> None:
    operator = IcebergMaintenanceOperator(
        task_id="orphans", catalog="lake", table="sales.orders", action="remove-orphan-files", older_than=1767225600000
    )
    assert operator.job_arguments("lake", {}) == [
        "remove-orphan-files",
        *["--catalog", "lake", "--table", "sales.orders", "--older-than", "1767225600000"],
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"action": "vacuum", "older_than": "x"}, "action 'vacuum' is not one of"),
        ({"action": "remove-orphan-files", "older_than": "x", "retain_last": 3}, "retain_last applies to"),
        ({"action": "expire-snapshots", "allow_short_retention": True}, "allow_short_retention applies to"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IcebergMaintenanceOperator(task_id="m", catalog="lake", table="n.t", **kwargs)


def test_short_retention_is_passed_only_when_asked_for() -> None:
    operator = IcebergMaintenanceOperator(
        task_id="o", catalog="lake", table="n.t", action="remove-orphan-files", allow_short_retention=True
    )
    assert operator.job_arguments("lake", {})[-1] == "--allow-short-retention"


def test_older_than_defaults_to_the_jobs() -> None:
    operator = IcebergMaintenanceOperator(task_id="o", catalog="lake", table="n.t", action="remove-orphan-files")
    assert operator.job_arguments("lake", {}) == ["remove-orphan-files", "--catalog", "lake", "--table", "n.t"]


@pytest.mark.spark
@pytest.mark.usefixtures("spark_connection")
def test_expire_snapshots_dry_run_through_spark_submit(testing_catalog, events_table) -> None:
    first, second = (s.snapshot_id for s in testing_catalog.load_table(events_table).snapshots())
    operator = IcebergMaintenanceOperator(
        task_id="expire",
        catalog="testing",
        table=events_table,
        action="expire-snapshots",
        older_than="2100-01-01T00:00:00",
        retain_last=1,
        dry_run=True,
    )
    result = operator.execute(context={})
    assert (result["job"], result["action"], result["dry_run"]) == ("maintain", "expire-snapshots", True)
    assert result["expired_snapshot_ids"] == [first]
    assert result["retained_snapshot_ids"] == [second]
    assert len(testing_catalog.load_table(events_table).snapshots()) == 2


def test_rewrite_actions_command_lines() -> None:
    deletes = IcebergMaintenanceOperator(
        task_id="deletes",
        catalog="lake",
        table="sales.orders",
        action="rewrite-position-deletes",
        where="day = '2026-01-01'",
        min_input_files=2,
        rewrite_all=True,
        dry_run="{{ params.dry_run }}",
    )
    deletes.report_only = "true"
    assert deletes.job_arguments("lake", {}) == [
        *["rewrite-position-deletes", "--catalog", "lake", "--table", "sales.orders"],
        *["--where", "day = '2026-01-01'", "--min-input-files", "2", "--rewrite-all", "--dry-run"],
    ]
    manifests = IcebergMaintenanceOperator(
        task_id="manifests", catalog="lake", table="sales.orders", action="rewrite-manifests", spec_id=0, sort_by="day"
    )
    assert manifests.job_arguments("lake", {}) == [
        *["rewrite-manifests", "--catalog", "lake", "--table", "sales.orders", "--spec-id", "0", "--sort-by", "day"],
    ]
    with pytest.raises(ValueError, match="sort_by applies to rewrite-manifests"):
        IcebergMaintenanceOperator(task_id="m", catalog="lake", table="n.t", action="expire-snapshots", sort_by="day")
