"""The maintain job's actions and its result: expiry, orphan removal, position delete and manifest rewrites.

1. Expire snapshots or remove orphan files (``maintenance``): metadata and file deletion on the driver; a dry run
   prints what would be removed (``describe_removal``).
2. Rewrite manifests or position delete files: plan, then print the plan (dry run, or nothing to do) or carry it
   out and say what was committed. A format v3 table's position delete files (left from before an upgrade from v2)
   become deletion vectors instead, as its equality deletes do on ``convert-equality-deletes``
   (``maintenance.deletion_vector_conversion``).
``MaintainResult.as_json`` is the job's final JSON line: the action, the table, the snapshot it started from, what
the action reported, and the commits it made (``commit_reports``, Iceberg Java's commit reports; none for expiry
and orphan removal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyiceberg.table import Table

from spark_jobs.engine.commit.commit_report import commit_report
from spark_jobs.engine.jobs.maintain_actions import EXPIRE_SNAPSHOTS
from spark_jobs.engine.maintenance import expire_snapshots, remove_orphan_files
from spark_jobs.engine.maintenance.deletion_vector_conversion import (
    convert_to_deletion_vectors,
    plan_vector_conversion,
)
from spark_jobs.engine.maintenance.rewrite_manifests import plan_manifest_rewrite, rewrite_manifests
from spark_jobs.engine.maintenance.rewrite_position_deletes import (
    PositionDeleteRewriteOptions,
    plan_position_delete_rewrite,
    rewrite_position_deletes,
)


@dataclass(frozen=True)
class MaintainResult:
    """One action's result: what it reported, on which table, from which snapshot, in how many seconds."""

    action: str
    table: str
    dry_run: bool
    snapshot_id: int | None
    outcome: dict[str, Any]
    seconds: float

    def as_json(self) -> dict[str, Any]:
        """The job's final JSON line."""
        return {
            "status": "ok",
            "job": "maintain",
            "action": self.action,
            "table": self.table,
            "dry_run": self.dry_run,
            "snapshot_id": self.snapshot_id,
            "commit_reports": [],  # expiry and orphan removal commit no snapshot; the rewrites' outcomes say theirs
            **self.outcome,
            "seconds": {self.action: round(self.seconds, 3)},
        }


def rewrite_manifests_action(
    table: Table, *, spec_id: int | None, sort_by: list[str] | None, dry_run: bool
) -> dict[str, Any]:
    """Plan, then (unless ``dry_run``) run, a manifest rewrite; what the JSON line adds."""
    manifest_plan = plan_manifest_rewrite(table, spec_id=spec_id, sort_by=sort_by)
    if dry_run:
        print(manifest_plan.describe(), flush=True)
        return {"operation": "replace" if manifest_plan.rewrites else None, **manifest_plan.as_dict()}
    result = rewrite_manifests(table, manifest_plan)
    done = {
        "operation": "replace" if result else None,
        **manifest_plan.as_dict(),
        "commit_reports": [commit_report(result)] if result is not None else [],
    }
    if result is not None:
        current = table.current_snapshot()
        done.update(
            committed_snapshot_id=result.snapshot_id,
            manifests_created=int(result.summary.get("manifests-created", 0)) if result.summary else 0,
            manifests_after=len(current.manifests(table.io)) if current is not None else 0,
        )
    return done


def rewrite_position_deletes_action(
    table: Table, options: PositionDeleteRewriteOptions, *, where: str | None, dry_run: bool
) -> dict[str, Any]:
    """Plan, then (unless ``dry_run`` or nothing to do) run, a position delete rewrite; what the JSON line adds."""
    plan = plan_position_delete_rewrite(table, options, where=where)
    if plan.format_version >= 3 and plan.candidate_files:
        return convert_deletes_action(table, "position", where=where, dry_run=dry_run)
    planned = plan.as_dict()
    planned.pop("table", None)
    planned.pop("snapshot_id", None)
    if dry_run or not (plan.groups or plan.dangling):
        print(plan.describe(), flush=True)
        return {"operation": "replace" if plan.groups or plan.dangling else None, **planned}
    outcome = rewrite_position_deletes(table, plan)
    return {
        "operation": "replace",
        **planned,
        "snapshot_ids": [commit.snapshot_id for commit in outcome.commits],
        "commits": len(outcome.commits),
        "delete_files_removed": outcome.rewritten_files + outcome.dangling_files_removed,
        "delete_files_added": outcome.added_files,
        "bytes_removed": outcome.rewritten_bytes,
        "bytes_added": outcome.added_bytes,
        "positions_read": outcome.positions_read,
        "positions_written": outcome.positions_written,
        "positions_dropped": outcome.positions_dropped,
        "dangling_delete_files_removed": outcome.dangling_files_removed,
        "failures": outcome.failures,
        "commit_reports": [commit_report(commit) for commit in outcome.commits],
    }


def convert_deletes_action(table: Table, kind: str, *, where: str | None, dry_run: bool) -> dict[str, Any]:
    """Plan, then (unless ``dry_run`` or nothing to do) carry out, the conversion of a v3 table's ``kind`` deletes
    (``position`` or ``equality``) into deletion vectors; what the JSON line adds."""
    plan = plan_vector_conversion(table, kind, where=where)
    changes = bool(plan.files or plan.removed_delete_files)
    if dry_run or not changes:
        print(plan.describe(), flush=True)
        return {"operation": "replace" if changes else None, **plan.as_dict()}
    outcome = convert_to_deletion_vectors(table, plan)
    if outcome.commit is None:  # pragma: no cover - a plan with changes always commits or raises
        raise RuntimeError(f"the conversion of {plan.table_name}'s {kind} deletes committed nothing")
    return {
        "operation": "replace",
        **plan.as_dict(),
        "committed_snapshot_id": outcome.commit.snapshot_id,
        "deletion_vectors_written": outcome.deletion_vectors_written,
        "positions_written": outcome.positions_written,
        "commit_reports": [commit_report(outcome.commit)],
    }


def removal_action(
    table: Table,
    action: str,
    *,
    older_than_ms: int | None,
    retain_last: int | None,
    allow_short_retention: bool,
    dry_run: bool,
) -> dict[str, Any]:
    """Expire snapshots or remove orphan files (module doc, 1); what the JSON line adds. A dry run prints what
    would be removed first (``describe_removal``)."""
    if action == EXPIRE_SNAPSHOTS:
        outcome = expire_snapshots(table, older_than_ms=older_than_ms, retain_last=retain_last, dry_run=dry_run)
        removed = outcome.as_dict()
    else:
        orphans = remove_orphan_files(
            table, older_than_ms=older_than_ms, dry_run=dry_run, allow_short_retention=allow_short_retention
        )
        removed = orphans.as_dict()
    if dry_run:
        print(describe_removal(action, ".".join(table.name()), removed), flush=True)
    return removed


def describe_removal(action: str, table_name: str, outcome: dict[str, Any]) -> str:
    """What an expiry or orphan removal would do, in words (its --dry-run output before the JSON line)."""
    if action == EXPIRE_SNAPSHOTS:
        files = sum(value for key, value in outcome.items() if key.endswith("_files") and isinstance(value, int))
        return (
            f"plan: expire {len(outcome['expired_snapshot_ids'])} snapshot(s) of {table_name} "
            f"{outcome['expired_snapshot_ids']}, keep {len(outcome['retained_snapshot_ids'])}; "
            f"drop ref(s) past their max age {outcome['removed_refs']}; {files} file(s) no "
            "remaining snapshot references would be deleted"
        )
    return (
        f"plan: remove {outcome['orphan_files']} orphan file(s) ({outcome['orphan_bytes']} bytes) of {table_name} "
        f"older than {outcome['older_than_ms']} ms, out of {outcome['files_listed']} files listed"
    )
