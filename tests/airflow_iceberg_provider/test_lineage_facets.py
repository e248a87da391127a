"""Iceberg's OpenLineage facets from result lines the engine really produced (commits on a real SQLite catalog, a
real read, a real expiry), checked against OpenLineage's published schemas (tests/data/openlineage)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from openlineage.client.serde import Serde
from pyiceberg.table.snapshots import Operation

from airflow_iceberg_provider.lineage_facets import (
    COMMIT_METRICS,
    MAINTENANCE_REPORT_SCHEMA,
    commit_report,
    maintenance_report,
    maintenance_schema_url,
    scan_report,
)
from spark_jobs.engine.commit.commit_report import commit_report as job_commit_report
from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.maintenance import expire_snapshots
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data, write_position_delete_rows
from tests.support.openlineage_schemas import PACKAGE_SCHEMAS, schema_errors


def _checked(facet, key: str) -> dict:
    """The facet as the OpenLineage client serializes it, after validating it against its schema."""
    serialized = json.loads(Serde.to_json(facet))
    assert schema_errors(key, serialized) == []
    return serialized


@pytest.fixture
def table(sql_catalog):
    sql_catalog.create_namespace("ns")
    data = pa.table({"id": pa.array(range(6), pa.int64()), "category": ["a", "b"] * 3})
    table = sql_catalog.create_table("ns.t", data.schema)
    files = [to_data_file(item) for item in write_data(data, WriteContext.for_table(table), "t0")]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    return table.refresh()


def test_a_commit_report_carries_the_snapshot_summary_as_java_reports_it(table) -> None:
    (data_file,) = [task.file for task in table.scan().plan_files()]
    rows = pa.table({"file_path": [data_file.file_path] * 2, "pos": pa.array([0, 3], pa.int64())})
    deletes = [
        to_data_file(item) for item in write_position_delete_rows(rows, WriteContext.for_table(table), 0, (), "d")
    ]
    committed = commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=deletes))
    line = {"job": "ingest", "commit_reports": [job_commit_report(committed)]}
    facet = _checked(commit_report(line), "icebergCommitReport")
    snapshot = table.refresh().current_snapshot()
    assert (facet["snapshotId"], facet["sequenceNumber"], facet["operation"]) == (
        snapshot.snapshot_id,
        snapshot.sequence_number,
        "delete",
    )
    summary = snapshot.summary.additional_properties
    expected = {name: int(summary[key]) for name, key in COMMIT_METRICS.items() if key in summary}
    metrics = facet["commitMetrics"]
    assert {name: metrics[name] for name in expected} == expected
    assert (metrics["addedPositionalDeletes"], metrics["totalRecords"], metrics["attempts"]) == (2, 6, 1)
    assert metrics["totalDuration"] >= 0 and facet["metadata"]["engine-name"] == "airflow-iceberg-provider"
    assert commit_report({"job": "ingest", "commit_reports": []}) is None


def test_a_scan_report_names_the_snapshot_filter_projection_and_counts(table) -> None:
    session = open_read_session(table.catalog, "ns.t", row_filter="category = 'a'", columns=["id"])
    rows = session.to_arrow()
    line = {
        "job": "read",
        "snapshot_id": table.current_snapshot().snapshot_id,
        "counters": {**session.metrics.as_dict(), "rows_out": rows.num_rows},
        "seconds": {"plan": 0.25},
        "ran_in": "driver",
    }
    report = scan_report(line, schema_id=table.schema().schema_id, row_filter="category = 'a'", columns=["id"])
    facet = _checked(report, "icebergScanReport")
    assert (facet["snapshotId"], facet["filterDescription"], facet["projectedFieldNames"]) == (
        line["snapshot_id"],
        "category = 'a'",
        ["id"],
    )
    assert facet["scanMetrics"] == {
        "resultDataFiles": 1,
        "skippedDataFiles": 0,
        "resultDeleteFiles": 0,
        "totalPlanningDuration": 250,
    }
    assert facet["metadata"]["rows-out"] == "3" and facet["metadata"]["ran-in"] == "driver"


def test_a_maintenance_report_says_what_the_action_did(table) -> None:
    more = pa.table({"id": pa.array([9], pa.int64()), "category": ["c"]})
    files = [to_data_file(item) for item in write_data(more, WriteContext.for_table(table), "t1")]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    now_ms = table.refresh().current_snapshot().timestamp_ms + 1
    outcome = expire_snapshots(table, older_than_ms=now_ms, retain_last=1).as_dict()
    line = {"job": "maintain", "action": "expire-snapshots", "dry_run": False, "snapshot_id": 1, **outcome}
    facet = _checked(maintenance_report(line), "icebergMaintenanceReport")
    assert (facet["action"], facet["dryRun"], facet["snapshotIdBefore"]) == ("expire-snapshots", False, 1)
    assert facet["metrics"]["expiredSnapshots"] == 1 and facet["metrics"]["retainedSnapshots"] == 1
    assert facet["metrics"]["deletedManifestLists"] == 1
    # The schema the facet names is the one the package ships.
    schema = PACKAGE_SCHEMAS / MAINTENANCE_REPORT_SCHEMA
    assert json.loads(schema.read_text())["$id"] == maintenance_schema_url().split("#")[0]
    assert facet["_schemaURL"] == maintenance_schema_url()
