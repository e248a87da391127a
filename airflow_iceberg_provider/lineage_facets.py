"""Iceberg's OpenLineage dataset facets, as Spark's Iceberg integration emits them, built from a job's result line.

Needs the OpenLineage client (imported only by ``lineage.operator_lineage`` when the OpenLineage provider is
installed). The facets, with the schemas of OpenLineage's Iceberg registry (``spec/registry/iceberg``):

1. ``icebergScanReport`` (input facet of the table a read scanned; ``IcebergScanReportInputDatasetFacet`` 1-0-1):
   snapshot id, schema id, the filter as given (``""`` for none), the projected column names, and the scan metrics
   the read job counts exactly: ``resultDataFiles`` (data files planned), ``skippedDataFiles`` (pruned by
   partitions and column metrics), ``resultDeleteFiles`` (delete files applied) and ``totalPlanningDuration``
   (ms); the job's other counters (manifests, bytes and rows read, where it ran) go in ``metadata``, because its
   manifest counts do not split data from delete manifests as Java's do.
2. ``icebergCommitReport`` (output facet of the table a job committed to; ``IcebergCommitReportOutputDatasetFacet``
   1-0-2): snapshot id, sequence number, operation, and ``commitMetrics`` as Java's ``CommitMetricsResult.from``
   takes them: attempts and duration from the commit, every count from the snapshot summary (``COMMIT_METRICS``).
   A job that committed several snapshots (partial progress, dangling deletes) reports its last one, the dataset's
   version, and names them all in ``metadata`` (``snapshot-ids``).
3. ``icebergMaintenanceReport`` (output facet of this provider's own, ``MAINTENANCE_REPORT_SCHEMA``): the action,
   whether it was a dry run, and what it did in numbers (snapshots expired, files and bytes deleted, orphans found,
   manifests or delete files rewritten): Iceberg's metrics reports have none for maintenance, so no engine reports
   it. Actions that commit a snapshot (position delete and manifest rewrites) also carry ``icebergCommitReport``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attr
from openlineage.client.generated.base import InputDatasetFacet, OutputDatasetFacet

from airflow_iceberg_provider import __version__

SCAN_REPORT = "icebergScanReport"
COMMIT_REPORT = "icebergCommitReport"
MAINTENANCE_REPORT = "icebergMaintenanceReport"
ENGINE_NAME = "airflow-iceberg-provider"
MAINTENANCE_REPORT_SCHEMA = "IcebergMaintenanceReportOutputDatasetFacet.json"

# commitMetrics field -> snapshot summary property (Iceberg Java's CommitMetricsResult.from and SnapshotSummary).
COMMIT_METRICS = {
    "addedDataFiles": "added-data-files",
    "removedDataFiles": "deleted-data-files",
    "totalDataFiles": "total-data-files",
    "addedDeleteFiles": "added-delete-files",
    "addedEqualityDeleteFiles": "added-equality-delete-files",
    "addedPositionalDeleteFiles": "added-position-delete-files",
    "addedDVs": "added-dvs",
    "removedDeleteFiles": "removed-delete-files",
    "removedEqualityDeleteFiles": "removed-equality-delete-files",
    "removedPositionalDeleteFiles": "removed-position-delete-files",
    "removedDVs": "removed-dvs",
    "totalDeleteFiles": "total-delete-files",
    "addedRecords": "added-records",
    "removedRecords": "deleted-records",
    "totalRecords": "total-records",
    "addedFilesSizeInBytes": "added-files-size",
    "removedFilesSizeInBytes": "removed-files-size",
    "totalFilesSizeInBytes": "total-files-size",
    "addedPositionalDeletes": "added-position-deletes",
    "removedPositionalDeletes": "removed-position-deletes",
    "totalPositionalDeletes": "total-position-deletes",
    "addedEqualityDeletes": "added-equality-deletes",
    "removedEqualityDeletes": "removed-equality-deletes",
    "totalEqualityDeletes": "total-equality-deletes",
}
# Read-job counters reported in a scan report's metadata (by Iceberg's kebab-case convention).
SCAN_COUNTERS_IN_METADATA = (
    "manifests_total",
    "manifests_pruned",
    "files_opened",
    "bytes_read",
    "delete_bytes_read",
    "rows_read",
    "rows_out",
)
# A maintenance result line's numbers -> the report's metric names (a list counts its items).
MAINTENANCE_METRICS = {
    # expire-snapshots
    "expired_snapshot_ids": "expiredSnapshots",
    "retained_snapshot_ids": "retainedSnapshots",
    "removed_refs": "removedRefs",
    "deleted_data_files": "deletedDataFiles",
    "deleted_position_delete_files": "deletedPositionDeleteFiles",
    "deleted_equality_delete_files": "deletedEqualityDeleteFiles",
    "deleted_manifests": "deletedManifests",
    "deleted_manifest_lists": "deletedManifestLists",
    "deleted_statistics_files": "deletedStatisticsFiles",
    # remove-orphan-files
    "files_listed": "filesListed",
    "orphan_files": "orphanFiles",
    "orphan_bytes": "orphanBytes",
    "deleted_orphan_files": "deletedOrphanFiles",
    "files_held_by_pending_commits": "filesHeldByPendingCommits",
    # rewrite-manifests
    "manifests_before": "manifestsBefore",
    "manifests_replaced": "manifestsReplaced",
    "manifests_created": "manifestsCreated",
    "manifests_after": "manifestsAfter",
    # rewrite-position-deletes
    "rewritten_delete_files": "rewrittenDeleteFiles",
    "delete_files_removed": "deleteFilesRemoved",
    "delete_files_added": "deleteFilesAdded",
    "bytes_removed": "bytesRemoved",
    "bytes_added": "bytesAdded",
    "positions_read": "positionsRead",
    "positions_written": "positionsWritten",
    "positions_dropped": "positionsDropped",
    "dangling_delete_files_removed": "danglingDeleteFilesRemoved",
    # every action
    "files_already_gone": "filesAlreadyGone",
    "files_failed": "filesFailed",
    "commits": "commits",
}


@attr.define
class IcebergScanReportInputDatasetFacet(InputDatasetFacet):
    """OpenLineage's ``icebergScanReport`` (module doc, 1)."""

    snapshotId: int | None = attr.field(default=None)  # noqa: N815
    filterDescription: str = attr.field(default="")  # noqa: N815
    schemaId: int | None = attr.field(default=None)  # noqa: N815
    projectedFieldNames: list[str] = attr.field(factory=list)  # noqa: N815
    scanMetrics: dict[str, int] = attr.field(factory=dict)  # noqa: N815
    metadata: dict[str, str] = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return (
            "https://openlineage.io/spec/facets/1-0-1/IcebergScanReportInputDatasetFacet.json"
            "#/$defs/IcebergScanReportInputDatasetFacet"
        )


@attr.define
class IcebergCommitReportOutputDatasetFacet(OutputDatasetFacet):
    """OpenLineage's ``icebergCommitReport`` (module doc, 2)."""

    snapshotId: int | None = attr.field(default=None)  # noqa: N815
    sequenceNumber: int | None = attr.field(default=None)  # noqa: N815
    operation: str | None = attr.field(default=None)
    commitMetrics: dict[str, int] = attr.field(factory=dict)  # noqa: N815
    metadata: dict[str, str] = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return (
            "https://openlineage.io/spec/facets/1-0-2/IcebergCommitReportOutputDatasetFacet.json"
            "#/$defs/IcebergCommitReportOutputDatasetFacet"
        )


@attr.define
class IcebergMaintenanceReportOutputDatasetFacet(OutputDatasetFacet):
    """This provider's ``icebergMaintenanceReport`` (module doc, 3); its JSON schema ships with the package."""

    action: str = attr.field(default="")
    dryRun: bool = attr.field(default=False)  # noqa: N815
    snapshotIdBefore: int | None = attr.field(default=None)  # noqa: N815
    metrics: dict[str, int] = attr.field(factory=dict)
    metadata: dict[str, str] = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return maintenance_schema_url()


def maintenance_schema_url() -> str:
    """Where the maintenance report's schema is published: the package's own copy, by version."""
    return (
        f"https://pypi.org/project/airflow-iceberg-provider/{__version__}/openlineage/{MAINTENANCE_REPORT_SCHEMA}"
        "#/$defs/IcebergMaintenanceReportOutputDatasetFacet"
    )


def _metadata(job: str, **more: Any) -> dict[str, str]:
    values = {"engine-name": ENGINE_NAME, "engine-version": __version__, "job": job}
    values.update({key: str(value) for key, value in more.items() if value is not None})
    return values


def scan_report(
    result: Mapping[str, Any], *, schema_id: int | None, row_filter: str | None, columns: list[str]
) -> IcebergScanReportInputDatasetFacet:
    """The read's ``icebergScanReport`` (module doc, 1)."""
    counters = result.get("counters") or {}
    metrics: dict[str, int] = {}
    if "data_files_total" in counters:
        metrics["resultDataFiles"] = int(counters["data_files_total"]) - int(counters.get("data_files_pruned", 0))
        metrics["skippedDataFiles"] = int(counters.get("data_files_pruned", 0))
    if "delete_files_applied" in counters:
        metrics["resultDeleteFiles"] = int(counters["delete_files_applied"])
    plan_seconds = (result.get("seconds") or {}).get("plan")
    if plan_seconds is not None:
        metrics["totalPlanningDuration"] = round(float(plan_seconds) * 1000)
    extra = {key.replace("_", "-"): counters[key] for key in SCAN_COUNTERS_IN_METADATA if key in counters}
    return IcebergScanReportInputDatasetFacet(
        snapshotId=result.get("snapshot_id"),
        filterDescription="" if row_filter in (None, "", "true") else str(row_filter),
        schemaId=schema_id,
        projectedFieldNames=list(columns),
        scanMetrics=metrics,
        metadata=_metadata("read", **extra, **{"ran-in": result.get("ran_in")}),
    )


def commit_report(result: Mapping[str, Any]) -> IcebergCommitReportOutputDatasetFacet | None:
    """The ``icebergCommitReport`` of the last commit a result line reports (module doc, 2); ``None`` for none."""
    reports = result.get("commit_reports") or []
    if not reports:
        return None
    last = reports[-1]
    summary = last.get("summary") or {}
    metrics = {name: int(summary[key]) for name, key in COMMIT_METRICS.items() if _is_count(summary.get(key))}
    if last.get("attempts") is not None:
        metrics["attempts"] = int(last["attempts"])
    if last.get("duration_ms") is not None:
        metrics["totalDuration"] = int(last["duration_ms"])
    ids = ",".join(str(report.get("snapshot_id")) for report in reports) if len(reports) > 1 else None
    already = "true" if last.get("already_committed") else None
    return IcebergCommitReportOutputDatasetFacet(
        snapshotId=last.get("snapshot_id"),
        sequenceNumber=last.get("sequence_number"),
        operation=last.get("operation"),
        commitMetrics=metrics,
        metadata=_metadata(str(result.get("job")), **{"snapshot-ids": ids, "already-committed": already}),
    )


def maintenance_report(result: Mapping[str, Any]) -> IcebergMaintenanceReportOutputDatasetFacet:
    """A maintenance action's ``icebergMaintenanceReport`` (module doc, 3)."""
    metrics: dict[str, int] = {}
    for key, name in MAINTENANCE_METRICS.items():
        value: Any = result.get(key)
        if isinstance(value, list):
            metrics[name] = len(value)
        elif _is_count(value):
            metrics[name] = int(value)
    return IcebergMaintenanceReportOutputDatasetFacet(
        action=str(result.get("action")),
        dryRun=bool(result.get("dry_run")),
        snapshotIdBefore=result.get("snapshot_id"),
        metrics=metrics,
        metadata=_metadata("maintain"),
    )


def _is_count(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    try:
        int(value)
    except (TypeError, ValueError):
        return False
    return True
