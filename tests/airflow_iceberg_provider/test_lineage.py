"""OpenLineage datasets of the operators: tables named by their storage, with identifier, schema and version facets."""

from __future__ import annotations

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, ListType, LongType, MapType, NestedField, StringType, StructType

from airflow_iceberg_provider.lineage import (
    TableDescription,
    storage_name,
    symlink_identity,
    table_dataset,
    without_credentials,
)
from airflow_iceberg_provider.operators.compact import IcebergCompactOperator
from airflow_iceberg_provider.operators.maintenance import IcebergMaintenanceOperator


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://bucket/warehouse/sales/orders", ("s3://bucket", "warehouse/sales/orders")),
        ("s3a://bucket/warehouse/orders/", ("s3a://bucket", "warehouse/orders")),
        ("gs://bucket/w/t", ("gs://bucket", "w/t")),
        ("file:///tmp/warehouse/sales.db/orders", ("file", "/tmp/warehouse/sales.db/orders")),
        ("/tmp/exports/2026-01-01", ("file", "/tmp/exports/2026-01-01")),
        ("hdfs://namenode:8020/warehouse/t", ("hdfs://namenode:8020", "/warehouse/t")),
    ],
)
def test_storage_names_follow_the_openlineage_naming_spec(uri, expected) -> None:
    assert storage_name(uri) == expected


def _description(**properties: str) -> TableDescription:
    schema = Schema(NestedField(1, "id", LongType(), required=True, doc="order id"))
    return TableDescription("sales.orders", "lake", properties, "s3://b/w/sales/orders", schema, 7)


def test_the_catalog_identifier_is_a_symlink_without_credentials() -> None:
    rest = _description(type="rest", uri="https://user:pw@catalog.example.com/api/catalog")
    assert symlink_identity(rest) == ("https://catalog.example.com/api/catalog", "sales.orders")
    glue = _description(**{"type": "glue", "glue.region": "eu-west-1", "glue.id": "123456789012"})
    assert symlink_identity(glue) == ("arn:aws:glue:eu-west-1:123456789012", "table/sales/orders")
    assert (
        without_credentials("postgresql+psycopg2://iceberg:secret@db:5432/cat") == "postgresql+psycopg2://db:5432/cat"
    )


def test_a_table_dataset_carries_schema_symlink_catalog_and_version(testing_catalog) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "tags", ListType(3, StringType(), element_required=False), required=False),
        NestedField(4, "attrs", MapType(5, StringType(), 6, IntegerType(), value_required=False), required=False),
        NestedField(7, "address", StructType(NestedField(8, "city", StringType(), required=False)), required=False),
    )
    testing_catalog.create_namespace_if_not_exists("lineage_tests")
    if testing_catalog.table_exists("lineage_tests.nested"):
        testing_catalog.drop_table("lineage_tests.nested")
    table = testing_catalog.create_table("lineage_tests.nested", schema=schema)
    description = TableDescription(
        "lineage_tests.nested",
        "testing",
        {"type": "sql", "uri": "sqlite:////x/catalog.db"},
        table.location(),
        schema,
        None,
    )
    dataset = table_dataset(description, snapshot_id=42)
    assert (dataset.namespace, dataset.name) == ("file", table.location().removeprefix("file://"))
    assert dataset.facets["version"].datasetVersion == "42"
    (link,) = dataset.facets["symlinks"].identifiers
    assert (link.namespace, link.name, link.type) == ("sqlite:////x/catalog.db", "lineage_tests.nested", "TABLE")
    catalog = dataset.facets["catalog"]
    assert (catalog.framework, catalog.type, catalog.name) == ("iceberg", "sql", "testing")
    fields = {field.name: field for field in dataset.facets["schema"].fields}
    assert fields["id"].type == "long"
    assert [(f.name, f.type) for f in fields["tags"].fields] == [("_element", "string")]
    assert [(f.name, f.type) for f in fields["attrs"].fields] == [("key", "string"), ("value", "int")]
    assert [(f.name, f.type) for f in fields["address"].fields] == [("city", "string")]
    assert "version" not in table_dataset(description, snapshot_id=None).facets


def _names(datasets) -> list[tuple[str, str | None]]:
    return [(d.name, d.facets["version"].datasetVersion if "version" in d.facets else None) for d in datasets]


def test_compaction_reads_the_starting_snapshot_and_writes_the_replace_one(testing_catalog, events_table) -> None:
    table = testing_catalog.load_table(events_table)
    head = table.current_snapshot().snapshot_id
    path = table.location().removeprefix("file://")
    compact = IcebergCompactOperator(task_id="compact", catalog="testing", table=events_table)
    on_start = compact.get_openlineage_facets_on_start()
    assert (_names(on_start.inputs), _names(on_start.outputs)) == ([(path, str(head))], [(path, None)])
    compact.job_result = {"starting_snapshot_id": head, "snapshot_id": 99}
    done = compact.get_openlineage_facets_on_complete(task_instance=None)
    assert (_names(done.inputs), _names(done.outputs)) == ([(path, str(head))], [(path, "99")])
    plan_only = IcebergCompactOperator(task_id="plan", catalog="testing", table=events_table, dry_run=True)
    assert plan_only.get_openlineage_facets_on_start().outputs == []


def test_maintenance_changes_the_table_unless_it_is_a_dry_run(testing_catalog, events_table) -> None:
    head = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    expire = IcebergMaintenanceOperator(task_id="e", catalog="testing", table=events_table, action="expire-snapshots")
    lineage = expire.get_openlineage_facets_on_start()
    assert [v for _, v in _names(lineage.inputs)] == [v for _, v in _names(lineage.outputs)] == [str(head)]
    dry = IcebergMaintenanceOperator(
        task_id="d", catalog="testing", table=events_table, action="remove-orphan-files", dry_run=True
    )
    assert dry.get_openlineage_facets_on_start().outputs == []


def test_a_finished_job_adds_icebergs_facets_to_the_table(testing_catalog, events_table) -> None:
    """From the result line: a commit report on what a job committed to, a scan report on what a read scanned, a
    maintenance report (and the commit report of a rewrite) on what maintenance changed."""
    from airflow_iceberg_provider.operators.read import IcebergReadOperator

    head = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    report = {"snapshot_id": 99, "sequence_number": 7, "operation": "replace", "attempts": 1, "duration_ms": 5}
    report["summary"] = {"added-data-files": "1", "deleted-data-files": "2", "total-records": "15"}
    compact = IcebergCompactOperator(task_id="compact", catalog="testing", table=events_table)
    compact.job_result = {"job": "compact", "starting_snapshot_id": head, "snapshot_id": 99, "commit_reports": [report]}
    (output,) = compact.get_openlineage_facets_on_complete(task_instance=None).outputs
    committed = output.outputFacets["icebergCommitReport"]
    assert (committed.snapshotId, committed.sequenceNumber, committed.operation) == (99, 7, "replace")
    assert committed.commitMetrics == {
        "addedDataFiles": 1,
        "removedDataFiles": 2,
        "totalRecords": 15,
        "attempts": 1,
        "totalDuration": 5,
    }

    rewrite = IcebergMaintenanceOperator(task_id="m", catalog="testing", table=events_table, action="rewrite-manifests")
    rewrite.job_result = {
        "job": "maintain", "action": "rewrite-manifests", "dry_run": False, "snapshot_id": head,
        "manifests_replaced": 2, "commit_reports": [report],
    }  # fmt: skip
    (changed,) = rewrite.get_openlineage_facets_on_complete(task_instance=None).outputs
    assert changed.facets["version"].datasetVersion == "99"
    assert changed.outputFacets["icebergMaintenanceReport"].metrics == {"manifestsReplaced": 2}
    assert changed.outputFacets["icebergCommitReport"].snapshotId == 99

    read = IcebergReadOperator(
        task_id="r", catalog="testing", table=events_table, output_path="/tmp/o", row_filter="id > 3"
    )
    read.job_arguments("testing", {})  # the filter used is known once the arguments are built
    read.job_result = {"job": "read", "snapshot_id": head, "counters": {"data_files_total": 2}, "seconds": {}}
    (scanned,) = read.get_openlineage_facets_on_complete(task_instance=None).inputs
    scan = scanned.inputFacets["icebergScanReport"]
    assert (scan.snapshotId, scan.filterDescription, scan.projectedFieldNames) == (head, "id > 3", ["id", "category"])
    assert scan.scanMetrics == {"resultDataFiles": 2, "skippedDataFiles": 0}


def test_an_unreachable_catalog_leaves_only_the_files(tmp_path) -> None:
    from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator

    ingest = IcebergIngestOperator(
        task_id="i", catalog="not-configured", table="ns.t", source=str(tmp_path / "in"), mode="append"
    )
    lineage = ingest.get_openlineage_facets_on_start()
    assert (_names(lineage.inputs), lineage.outputs) == ([(str(tmp_path / "in"), None)], [])


def test_no_lineage_and_no_failure_without_the_openlineage_provider(monkeypatch, testing_catalog, events_table) -> None:
    """A deployment without the OpenLineage provider: its import fails, the operators report nothing."""
    import sys

    from airflow_iceberg_provider.operators.read import IcebergReadOperator

    monkeypatch.setitem(sys.modules, "airflow.providers.openlineage.extractors", None)  # import raises ImportError
    read = IcebergReadOperator(task_id="r", catalog="testing", table=events_table, output_path="/tmp/out")
    assert read.get_openlineage_facets_on_start() is None
