"""Expire snapshots or remove orphan files of an Iceberg table: ``spark_jobs/maintain.py`` as an operator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_iceberg_provider.operators.spark_job import IcebergSparkJobOperator, flag_arguments

if TYPE_CHECKING:
    from airflow.sdk import Context

EXPIRE_SNAPSHOTS = "expire-snapshots"
REMOVE_ORPHAN_FILES = "remove-orphan-files"
ACTIONS = (EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES)


class IcebergMaintenanceOperator(IcebergSparkJobOperator):
    """
    Table maintenance: ``expire-snapshots`` (older than a time, keeping the last N, deleting the files no remaining
    snapshot references) or ``remove-orphan-files`` (files older than a time that no snapshot references).

    Command line: ``maintain.py <action> --catalog NAME --table NS.TABLE [--older-than TS] [--retain-last N]
    [--allow-short-retention] [--dry-run]``. With ``dry_run`` the result lists what would be removed and nothing is
    deleted.

    :param action: ``expire-snapshots`` or ``remove-orphan-files``.
    :param older_than: Epoch milliseconds or ISO-8601, e.g. ``"{{ macros.ds_add(ds, -7) }}"``; default the job's
        (five days ago for snapshots, three days for orphan files). (templated)
    :param retain_last: ``expire-snapshots`` only: always keep this many most recent snapshots. (templated)
    :param allow_short_retention: ``remove-orphan-files`` only: allow ``older_than`` later than 24 hours ago (the
        job refuses it otherwise: files of writes still in progress could be deleted).
    :param dry_run: Report only, delete nothing.
    """

    job = "maintain"
    template_fields: Sequence[str] = (*IcebergSparkJobOperator.template_fields, "older_than", "retain_last")

    def __init__(
        self,
        *,
        action: str,
        older_than: str | int | None = None,
        retain_last: int | str | None = None,
        dry_run: bool = False,
        allow_short_retention: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if action not in ACTIONS:
            raise ValueError(f"IcebergMaintenanceOperator {self.task_id}: action {action!r} is not one of {ACTIONS}")
        if retain_last is not None and action != EXPIRE_SNAPSHOTS:
            raise ValueError(f"IcebergMaintenanceOperator {self.task_id}: retain_last applies to {EXPIRE_SNAPSHOTS}")
        if allow_short_retention and action != REMOVE_ORPHAN_FILES:
            raise ValueError(
                f"IcebergMaintenanceOperator {self.task_id}: allow_short_retention applies to {REMOVE_ORPHAN_FILES}"
            )
        self.action = action
        self.allow_short_retention = allow_short_retention
        self.older_than = older_than
        self.retain_last = retain_last
        # Not ``self.dry_run``: that name is BaseOperator's method (render templates only).
        self.report_only = dry_run

    def job_arguments(self, catalog_name: str, context: Context) -> list[str]:
        """The action, then ``--catalog --table`` and the options that are set."""
        arguments = [self.action]
        arguments += flag_arguments(
            [
                ("--catalog", catalog_name),
                ("--table", self.table),
                ("--older-than", self.older_than),
                ("--retain-last", self.retain_last),
            ]
        )
        if self.allow_short_retention:
            arguments.append("--allow-short-retention")
        if self.report_only:
            arguments.append("--dry-run")
        return arguments
