"""The compact job: plan on the driver, explain, then print the plan (``--dry-run``) or rewrite and commit it.

1. Plan the rewrite from the current snapshot (``compaction.plan_rewrite``) and explain its decisions per partition
   and file group (``compaction.explain``: logged, and carried by a dry run's result).
2. ``--dry-run``: print the plan in words (``describe_plan``) and return it; nothing is committed, no Spark starts.
3. Otherwise refuse a table the commit machinery cannot write, then (when there is a group) run the rewrite where
   its tasks run (``RewriteRunner``: ``rewrite_run.run_rewrite`` on Spark, ``spark/compact.py``), and with
   ``remove-dangling-deletes`` commit one more ``replace`` that removes the delete files no data file needs (Java's
   action).
Each outcome is a result value whose ``as_json`` is the job's final JSON line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.table import Table

from spark_jobs.engine.commit.commit_report import commit_report
from spark_jobs.engine.commit.committer import CommitResult, commit_change, require_writable_format
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.candidates import list_candidates
from spark_jobs.engine.compaction.dangling_deletes import dangling_deletes_change, find_dangling_deletes
from spark_jobs.engine.compaction.explain import explain_plan
from spark_jobs.engine.compaction.outcome import RewriteOutcome
from spark_jobs.engine.compaction.planner import RewritePlan
from spark_jobs.engine.compaction.strategy import RewriteStrategy

log = logging.getLogger("spark_jobs.compact")  # the job's logger: these lines are the compact job's
# Rewrites and commits a plan's groups where the rewrite tasks run (Spark's executors).
RewriteRunner = Callable[[Table, RewritePlan], RewriteOutcome]
_ROWS_DELETED = (
    "rows_deleted_by_position_deletes",
    "rows_deleted_by_deletion_vectors",
    "rows_deleted_by_equality_deletes",
)


@dataclass(frozen=True)
class DryRunResult:
    """``--dry-run``: the plan, its explanation, and what a rewrite of it would commit."""

    plan: RewritePlan
    explanation: list[str]
    seconds: dict[str, float]

    def as_json(self) -> dict[str, Any]:
        """The job's final JSON line."""
        return {
            "status": "ok",
            "job": "compact",
            "dry_run": True,
            "operation": "replace" if self.plan.groups else None,  # what a rewrite of this plan would commit
            **self.plan.as_dict(),
            "explanation": self.explanation,
            "commit_reports": [],
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class CompactResult:
    """A rewrite's result: snapshots, groups, files and bytes added and removed, delete files removed, rows."""

    plan: RewritePlan
    outcome: RewriteOutcome | None
    seconds: dict[str, float]
    dangling: dict[str, Any] = field(default_factory=dict)
    dangling_commit: CommitResult | None = None

    def as_json(self) -> dict[str, Any]:
        """The job's final JSON line."""
        plan, outcome = self.plan, self.outcome
        commits = outcome.commits if outcome is not None else []

        def total(key: str) -> int:
            return sum(int(commit.summary.get(key, 0)) for commit in commits)

        counters = outcome.counters.as_dict() if outcome is not None else {}
        return {
            "status": "ok",
            "job": "compact",
            "dry_run": False,
            "table": plan.table_name,
            **plan.strategy.as_dict(),
            "starting_snapshot_id": plan.snapshot_id,
            "snapshot_id": commits[-1].snapshot_id if commits else plan.snapshot_id,
            "snapshot_ids": [commit.snapshot_id for commit in commits],
            "operation": "replace" if commits else None,
            "commits": len(commits),
            "file_groups": len(plan.groups),
            "rewritten_file_groups": len(outcome.committed_groups) if outcome is not None else 0,
            "failed_file_groups": outcome.failed_groups if outcome is not None else [],
            "failures": outcome.failures if outcome is not None else [],
            "data_files_added": total("added-data-files"),
            "data_files_removed": total("deleted-data-files"),
            "bytes_added": total("added-files-size"),
            "bytes_removed": total("removed-files-size"),
            "delete_files_removed": total("removed-delete-files"),
            "rows_read": counters.get("rows_read", 0),
            "rows_deleted": sum(counters.get(key, 0) for key in _ROWS_DELETED),
            "rows_written": outcome.rows_written if outcome is not None else 0,
            "rewrite_waves": outcome.waves if outcome is not None else 0,
            "counters": counters,
            **self.dangling,
            # Every commit as Iceberg Java's commit report has it (``commit.commit_report``), dangling deletes last.
            "commit_reports": [commit_report(commit) for commit in (*commits, self.dangling_commit) if commit],
            "seconds": self.seconds,
        }


def compact_table(
    table: Table,
    options: RewriteOptions,
    strategy: RewriteStrategy,
    *,
    where: str | None,
    dry_run: bool,
    run_rewrite: RewriteRunner,
) -> DryRunResult | CompactResult:
    """Plan ``table``'s compaction and print it or carry it out (module doc)."""
    log.info("plan: compaction of %s ...", ".".join(table.name()))
    started = time.perf_counter()
    plan = plan_rewrite(table, table.current_snapshot(), options, where=where, strategy=strategy)
    seconds = {"plan": round(time.perf_counter() - started, 3)}
    log.info("plan done in %.1f s: %d file groups", seconds["plan"], len(plan.groups))
    explanation = _explanation(table, options, where)
    for line in explanation:
        log.info("  %s", line)
    if dry_run:
        print(describe_plan(plan), flush=True)
        return DryRunResult(plan, explanation, seconds)
    require_writable_format(table)
    if not plan.groups:
        return CompactResult(plan, None, seconds)
    outcome = run_rewrite(table, plan)
    seconds.update({phase: round(value, 3) for phase, value in outcome.seconds.items()})
    dangling: dict[str, Any] = {}
    dangling_commit: CommitResult | None = None
    if plan.options.remove_dangling_deletes and outcome.commits:
        started = time.perf_counter()
        dangling, dangling_commit = _remove_dangling_deletes(table)
        seconds["remove_dangling_deletes"] = round(time.perf_counter() - started, 3)
    return CompactResult(plan, outcome, seconds, dangling, dangling_commit)


def _explanation(table: Table, options: RewriteOptions, where: str | None) -> list[str]:
    """The plan's decisions per partition and file group, in words (the manifests are cached by now)."""
    candidates = list_candidates(table, table.current_snapshot(), where)
    return explain_plan(candidates, table.spec().spec_id, len(table.spec().fields), options)


def _remove_dangling_deletes(table: Table) -> tuple[dict[str, Any], CommitResult | None]:
    """Java's remove-dangling-deletes after the rewrite: one more ``replace`` removing deletes nothing needs; what
    the result line adds, and that commit (``None`` when nothing dangled)."""
    table.refresh()
    start = table.current_snapshot()
    assert start is not None  # the rewrite committed
    dangling = find_dangling_deletes(table, start)
    if not dangling.locations:
        return {"dangling_delete_files_removed": 0}, None
    result = commit_change(table, dangling_deletes_change(dangling), starting_snapshot_id=start.snapshot_id)
    removed = {
        "dangling_delete_files_removed": len(dangling.locations),
        "dangling_deletes_snapshot_id": result.snapshot_id,
        "snapshot_id": result.snapshot_id,
    }
    return removed, result


def describe_plan(plan: RewritePlan) -> str:
    """The plan in words, one line per group (what ``--dry-run`` prints before its JSON line)."""
    strategy = plan.strategy
    how = strategy.java_name if not strategy.is_shuffling else f"{strategy.java_name} by {strategy.description}"
    if not plan.groups:
        return (
            f"plan: nothing to rewrite in {plan.table_name} at snapshot {plan.snapshot_id} "
            f"({plan.candidate_files} candidate data files, none selected by the {how} rules)"
        )
    summary = plan.as_dict()
    lines = [
        f"plan: {how} rewrite of {plan.table_name} at snapshot {plan.snapshot_id}: {summary['rewritten_data_files']} "
        f"data files ({summary['rewritten_bytes']} bytes, {summary['rewritten_rows']} rows) in "
        f"{summary['file_groups']} file groups into about {summary['expected_output_files']} files of spec "
        f"{plan.output_spec_id}, {summary['expected_commits']} replace commit(s); {summary['delete_files']} delete "
        f"files apply, {summary['delete_files_freed']} would be removed"
    ]
    for group in summary["groups"]:
        partition = ", ".join(f"{name}={value}" for name, value in group["partition"].items()) or "unpartitioned"
        lines.append(
            f"  group {group['global_index']} ({partition}): {group['input_files']} files, {group['input_bytes']} "
            f"bytes -> {group['expected_output_files']} file(s)"
        )
    return "\n".join(lines)
