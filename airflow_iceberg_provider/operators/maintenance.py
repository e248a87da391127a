"""Table maintenance of an Iceberg table: ``spark_jobs/maintain.py`` as an operator, one action per task."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_iceberg_provider.lineage import LineageDatasets, TableDescription, TableVersion
from airflow_iceberg_provider.operators._arguments import REWRITE_JOB_ORDERS, check_choice, check_integer
from airflow_iceberg_provider.operators.spark_job import IcebergSparkJobOperator, flag_arguments, is_enabled

if TYPE_CHECKING:
    from airflow.sdk import Context

EXPIRE_SNAPSHOTS = "expire-snapshots"
REMOVE_ORPHAN_FILES = "remove-orphan-files"
REWRITE_POSITION_DELETES = "rewrite-position-deletes"
REWRITE_MANIFESTS = "rewrite-manifests"
CONVERT_EQUALITY_DELETES = "convert-equality-deletes"
ACTIONS = (EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES, REWRITE_POSITION_DELETES, REWRITE_MANIFESTS, CONVERT_EQUALITY_DELETES)

# operator attribute -> (job flag, the actions that take it)
_OPTIONS = (
    ("older_than", "--older-than", (EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES)),
    ("retain_last", "--retain-last", (EXPIRE_SNAPSHOTS,)),
    ("where", "--where", (REWRITE_POSITION_DELETES, CONVERT_EQUALITY_DELETES)),
    ("target_file_size_bytes", "--target-file-size-bytes", (REWRITE_POSITION_DELETES,)),
    ("min_input_files", "--min-input-files", (REWRITE_POSITION_DELETES,)),
    ("rewrite_job_order", "--rewrite-job-order", (REWRITE_POSITION_DELETES,)),
    ("spec_id", "--spec-id", (REWRITE_MANIFESTS,)),
    ("sort_by", "--sort-by", (REWRITE_MANIFESTS,)),
)


class IcebergMaintenanceOperator(IcebergSparkJobOperator):
    """
    One table maintenance action, with Iceberg Java's semantics and defaults:

    - ``expire-snapshots``: snapshots older than a time, keeping the last N, and the files no remaining snapshot
      references;
    - ``remove-orphan-files``: files older than a time that no snapshot references;
    - ``rewrite-position-deletes`` (Java's ``rewrite_position_delete_files``): small position delete files of each
      partition bin-packed into fewer, positions of removed data files and delete files that apply to nothing dropped;
      on a format v3 table (e.g. upgraded from v2) every position delete file becomes deletion vectors in one pass;
    - ``rewrite-manifests`` (Java's ``rewrite_manifests``): manifests clustered by partition into fewer;
    - ``convert-equality-deletes``: a format v3 table's equality deletes become deletion vectors.

    Command line: ``maintain.py <action> --catalog NAME --table NS.TABLE [options] [--dry-run]``. With ``dry_run`` the
    result lists what would be done and nothing changes.

    :param action: One of ``expire-snapshots``, ``remove-orphan-files``, ``rewrite-position-deletes``,
        ``rewrite-manifests``, ``convert-equality-deletes``.
    :param older_than: Epoch milliseconds or ISO-8601, e.g. ``"{{ macros.ds_add(ds, -7) }}"``; default the job's
        (five days ago for snapshots, three days for orphan files). (templated)
    :param retain_last: ``expire-snapshots``: always keep this many most recent snapshots. (templated)
    :param allow_short_retention: ``remove-orphan-files``: allow ``older_than`` later than 24 hours ago (the job
        refuses it otherwise: files of writes still in progress could be deleted).
    :param where: ``rewrite-position-deletes``, ``convert-equality-deletes``: only partitions that may hold matching
        rows. (templated)
    :param target_file_size_bytes: ``rewrite-position-deletes``: default ``write.delete.target-file-size-bytes``.
        (templated)
    :param min_input_files: ``rewrite-position-deletes``: default 5. (templated)
    :param rewrite_all: ``rewrite-position-deletes``: every position delete file, whatever its size.
    :param rewrite_job_order: ``rewrite-position-deletes``: order of the file groups. (templated)
    :param spec_id: ``rewrite-manifests``: the spec whose manifests to rewrite (default: current). (templated)
    :param sort_by: ``rewrite-manifests``: partition fields to cluster by, comma-separated. (templated)
    :param dry_run: Report only, change nothing. (templated, held as ``report_only``: e.g. ``"{{ params.dry_run }}"``)
    """

    job = "maintain"
    template_fields: Sequence[str] = (
        *IcebergSparkJobOperator.template_fields,
        *(attribute for attribute, _, _ in _OPTIONS),
        "report_only",
    )

    def __init__(
        self,
        *,
        action: str,
        older_than: str | int | None = None,
        retain_last: int | str | None = None,
        where: str | None = None,
        target_file_size_bytes: int | str | None = None,
        min_input_files: int | str | None = None,
        rewrite_all: bool = False,
        rewrite_job_order: str | None = None,
        spec_id: int | str | None = None,
        sort_by: str | None = None,
        allow_short_retention: bool = False,
        dry_run: bool | str = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if action not in ACTIONS:
            raise ValueError(f"IcebergMaintenanceOperator {self.task_id}: action {action!r} is not one of {ACTIONS}")
        given = {
            "older_than": older_than,
            "retain_last": retain_last,
            "where": where,
            "target_file_size_bytes": target_file_size_bytes,
            "min_input_files": min_input_files,
            "rewrite_job_order": rewrite_job_order,
            "spec_id": spec_id,
            "sort_by": sort_by,
            "rewrite_all": rewrite_all or None,
            "allow_short_retention": allow_short_retention or None,
        }
        takes = {attribute: actions for attribute, _, actions in _OPTIONS} | {
            "rewrite_all": (REWRITE_POSITION_DELETES,),
            "allow_short_retention": (REMOVE_ORPHAN_FILES,),
        }
        for attribute, value in given.items():
            if value is not None and action not in takes[attribute]:
                raise ValueError(
                    f"IcebergMaintenanceOperator {self.task_id}: {attribute} applies to {', '.join(takes[attribute])}"
                )
        owner = f"IcebergMaintenanceOperator {self.task_id}"
        check_integer(owner, "retain_last", retain_last, minimum=1)
        check_integer(owner, "target_file_size_bytes", target_file_size_bytes)
        check_integer(owner, "min_input_files", min_input_files)
        check_integer(owner, "spec_id", spec_id)
        check_choice(owner, "rewrite_job_order", rewrite_job_order, REWRITE_JOB_ORDERS)
        self.action = action
        self.allow_short_retention = allow_short_retention
        self.older_than = older_than
        self.retain_last = retain_last
        self.where = where
        self.target_file_size_bytes = target_file_size_bytes
        self.min_input_files = min_input_files
        self.rewrite_all = rewrite_all
        self.rewrite_job_order = rewrite_job_order
        self.spec_id = spec_id
        self.sort_by = sort_by
        # Not ``self.dry_run``: that name is BaseOperator's method (render templates only).
        self.report_only = dry_run

    def lineage_datasets(self, result: dict[str, Any] | None, current_snapshot_id: int | None) -> LineageDatasets:
        """The table, read and changed (its metadata and unreferenced files) at its current snapshot; a dry run
        changes nothing."""
        snapshot_id = result.get("snapshot_id") if result else current_snapshot_id
        commits = (result or {}).get("commit_reports") or []
        changed = commits[-1].get("snapshot_id") if commits else snapshot_id  # a rewrite's own snapshot
        return [TableVersion(snapshot_id)], [] if is_enabled(self.report_only) else [TableVersion(changed)]

    def iceberg_facets(
        self, result: dict[str, Any], description: TableDescription
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The table as the action changed it: ``icebergMaintenanceReport``, and ``icebergCommitReport`` when the
        action committed a snapshot (``lineage_facets``)."""
        from airflow_iceberg_provider.lineage_facets import MAINTENANCE_REPORT, maintenance_report

        _, committed = super().iceberg_facets(result, description)
        return {}, {MAINTENANCE_REPORT: maintenance_report(result), **committed}

    def job_arguments(self, catalog_name: str, context: Context) -> list[str]:
        """The action, then ``--catalog --table`` and the options that are set."""
        arguments = [self.action]
        arguments += flag_arguments(
            [
                ("--catalog", catalog_name),
                ("--table", self.table),
                *((flag, getattr(self, attribute)) for attribute, flag, _ in _OPTIONS),
            ]
        )
        if is_enabled(self.rewrite_all):
            arguments.append("--rewrite-all")
        if self.allow_short_retention:
            arguments.append("--allow-short-retention")
        if is_enabled(self.report_only):
            arguments.append("--dry-run")
        return arguments
