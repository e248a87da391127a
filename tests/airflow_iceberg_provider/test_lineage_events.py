"""OpenLineage events as a user of the OpenLineage provider gets them: a DAG run by ``airflow dags test`` with the
provider's file transport configured, its START and COMPLETE events read back from the file: datasets, and Iceberg's
facets (scan and commit reports, the maintenance report) checked against their published schemas."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.airflow_env import SPARK_LOCAL_CONNECTION, path_with_spark_submit
from tests.support.openlineage_schemas import schema_errors

DAG_FILE = """
from datetime import datetime

from airflow.sdk import DAG

from airflow_iceberg_provider.operators.compact import IcebergCompactOperator
from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator
from airflow_iceberg_provider.operators.maintenance import IcebergMaintenanceOperator
from airflow_iceberg_provider.operators.read import IcebergReadOperator

QUIET = {{"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}}
with DAG("lineage_events", schedule=None, start_date=datetime(2026, 1, 1)):
    ingest = IcebergIngestOperator(
        task_id="ingest", catalog="testing", table="{table}", source="{source}", source_format="parquet", conf=QUIET
    )
    read = IcebergReadOperator(
        task_id="read", catalog="testing", table="{table}", output_path="{output}", write_mode="overwrite", conf=QUIET
    )
    manifests = IcebergMaintenanceOperator(
        task_id="rewrite_manifests", catalog="testing", table="{table}", action="rewrite-manifests", conf=QUIET
    )
    compact = IcebergCompactOperator(
        task_id="compact", catalog="testing", table="{table}", rewrite_all=True, conf=QUIET
    )
    ingest >> read >> manifests >> compact
"""


def _events(path: Path) -> dict[tuple[str, str], dict]:
    """The task events in the transport's file, by (task id, event type)."""
    events = {}
    for line in path.read_text().splitlines():
        event = json.loads(line)
        job = event["job"]["name"]
        if job.startswith("lineage_events."):
            events[(job.removeprefix("lineage_events."), event["eventType"])] = event
    return events


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_every_task_reports_its_inputs_and_outputs_on_start_and_complete(
    testing_catalog, events_table, tmp_path: Path
) -> None:
    source, output, dags = tmp_path / "source", tmp_path / "export", tmp_path / "dags"
    source.mkdir()
    dags.mkdir()
    pq.write_table(pa.table({"id": pa.array([100, 101], pa.int64()), "category": ["x", "y"]}), source / "p.parquet")
    (dags / "lineage_events.py").write_text(
        textwrap.dedent(DAG_FILE.format(table=events_table, source=source, output=output))
    )
    events_file = tmp_path / "openlineage.jsonl"
    transport = {"type": "file", "log_file_path": str(events_file), "append": True}
    env = {
        **os.environ,
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__OPENLINEAGE__DISABLED": "False",
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "tests",
        "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": "True",
        "AIRFLOW_CONN_SPARK_DEFAULT": SPARK_LOCAL_CONNECTION,
        "PATH": path_with_spark_submit(),
    }
    run = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "test", "lineage_events"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]

    table = testing_catalog.load_table(events_table)
    location = table.location().removeprefix("file://")
    snapshots = table.snapshots()
    before, committed, rewritten, compacted = (snapshot.snapshot_id for snapshot in snapshots[-4:])
    events = _events(events_file)
    assert {"START", "COMPLETE"} <= {kind for _, kind in events}, sorted(events)

    def datasets(task: str, kind: str, side: str) -> list[tuple[str, str, str | None]]:
        return [
            (d["namespace"], d["name"], d["facets"].get("version", {}).get("datasetVersion"))
            for d in events[(task, kind)][side]
        ]

    assert datasets("ingest", "START", "inputs") == [("file", str(source), None)]
    assert datasets("ingest", "START", "outputs") == [("file", location, None)]
    assert datasets("ingest", "COMPLETE", "outputs") == [("file", location, str(committed))]
    assert datasets("read", "START", "inputs") == [("file", location, str(committed))]
    assert datasets("read", "COMPLETE", "inputs") == [("file", location, str(committed))]
    assert datasets("read", "COMPLETE", "outputs") == [("file", str(output), None)]
    assert before != committed

    table_facets = events[("ingest", "COMPLETE")]["outputs"][0]["facets"]
    assert table_facets["symlinks"]["identifiers"][0]["name"] == events_table
    assert table_facets["catalog"]["name"] == "testing"
    assert [field["name"] for field in table_facets["schema"]["fields"]] == ["id", "category"]

    # Iceberg's facets, as Spark's Iceberg integration names them, valid by their schemas.
    def facet(task: str, side: str, key: str) -> dict:
        (dataset,) = [d for d in events[(task, "COMPLETE")][side] if d["name"] == location]
        found = dataset["inputFacets" if side == "inputs" else "outputFacets"][key]
        assert schema_errors(key, found) == [], (task, key)
        return found

    ingested = facet("ingest", "outputs", "icebergCommitReport")
    assert (ingested["snapshotId"], ingested["operation"]) == (committed, "append")
    assert (ingested["commitMetrics"]["addedRecords"], ingested["commitMetrics"]["totalRecords"]) == (2, 17)
    assert ingested["sequenceNumber"] == snapshots[-3].sequence_number
    scanned = facet("read", "inputs", "icebergScanReport")
    assert (scanned["snapshotId"], scanned["projectedFieldNames"], scanned["filterDescription"]) == (
        committed,
        ["id", "category"],
        "",
    )
    assert scanned["scanMetrics"]["resultDataFiles"] == 3
    maintained = facet("rewrite_manifests", "outputs", "icebergMaintenanceReport")
    assert (maintained["action"], maintained["metrics"]["manifestsReplaced"]) == ("rewrite-manifests", 3)
    replaced = facet("rewrite_manifests", "outputs", "icebergCommitReport")
    assert (replaced["snapshotId"], replaced["operation"]) == (rewritten, "replace")
    compaction = facet("compact", "outputs", "icebergCommitReport")
    assert (compaction["snapshotId"], compaction["operation"]) == (compacted, "replace")
    metrics = compaction["commitMetrics"]
    assert (metrics["removedDataFiles"], metrics["addedDataFiles"], metrics["totalRecords"]) == (3, 1, 17)
