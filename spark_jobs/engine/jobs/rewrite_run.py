"""Run a planned rewrite: groups rewritten where the executor seam runs tasks, ``replace`` commits on the driver.

1. Refuse tables the commit machinery cannot write (format v2 and v3 without features we do not write) before any work.
2. Per batch of ``plan.groups_per_commit`` groups (all of them without partial progress): the batch's groups are
   rewritten in waves of at most ``max-concurrent-file-group-rewrites`` groups, so no more than that many groups
   are rewritten at the same time (Java's meaning of the option). A wave's rewrite tasks
   (``compaction.rewrite_tasks``) run through the executor seam (``TaskExecutor.run_tasks``: on Spark one job, one
   task per expected output file); each returns the files it wrote with its reader's counters. Java keeps up
   to N groups in flight on a thread pool, one Spark job per group; here the next wave starts when the slowest
   group of the previous one is done, which keeps one job per wave and the bound easy to see
   (``RewriteOutcome.waves``).
   Sort and z-order rewrites run each wave as a sample, a shuffle by key range and sorted writes instead (the
   ``ShuffleWave`` the caller gives: Spark's, ``spark/shuffle_rewrite.py``; without one they are refused).
3. The batch is committed (``compaction.rewrite_commit``) as one ``replace`` snapshot with the starting data
   sequence number, validated from the starting snapshot.
4. Files named with the batch's write id that its commit does not name (files of retried Spark tasks) are deleted
   whatever happens. A batch that certainly did not commit has its files deleted by the committer; when a commit's
   outcome is unknown, its files are kept (the committer recorded them beside the table) and the job stops there
   with that error, whatever the partial progress setting. Otherwise, without partial progress the error ends the
   job; with it, a failed batch is reported and the next batches still run; if none commits, the job fails.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Protocol

from pyiceberg.table import Table

from spark_jobs.engine.commit.committer import CommitOutcomeUnknownError, CommitResult, require_writable_format
from spark_jobs.engine.compaction.dangling_deletes import DeleteKey
from spark_jobs.engine.compaction.outcome import RewriteOutcome
from spark_jobs.engine.compaction.planner import FileGroup, RewritePlan
from spark_jobs.engine.compaction.rewrite_commit import GroupRewrite, NothingCommittedError, commit_group_rewrites
from spark_jobs.engine.compaction.rewrite_tasks import (
    RewriteContexts,
    RewriteTask,
    plan_rewrite_tasks,
    rewrite_contexts,
    rewrite_task,
)
from spark_jobs.engine.compaction.strategy import RewriteStrategy
from spark_jobs.engine.jobs.executor import TaskExecutor
from spark_jobs.engine.shared.errors import UnsupportedFeatureError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.job_files import delete_leftovers

log = logging.getLogger(__name__)


class ShuffleWave(Protocol):
    """Rewrites one wave of a sort or z-order plan with a shuffle by key range (``spark/shuffle_rewrite.py``)."""

    def __call__(
        self,
        strategy: RewriteStrategy,
        groups: list[FileGroup],
        tasks: list[RewriteTask],
        contexts: RewriteContexts,
        *,
        counters: ScanMetrics | None,
    ) -> list[tuple[int, WrittenFile]]:
        """(group index, written file) pairs of the wave's groups, their reads' counters added to ``counters``."""
        ...


class CommitGroups(Protocol):
    """Commits a batch's group rewrites as one ``replace`` (``compaction.rewrite_commit.commit_group_rewrites``)."""

    def __call__(
        self, table: Table, plan: RewritePlan, rewrites: list[GroupRewrite], *, replaced_before: set[str]
    ) -> tuple[CommitResult, set[DeleteKey]]:
        """The commit and the delete files it removed."""
        ...


@dataclass(frozen=True)
class RewriteRun:
    """Where a rewrite runs: the executor for its tasks, the shuffle for sort and z-order waves (``None``: refused),
    and the commit of each batch."""

    executor: TaskExecutor
    shuffle_wave: ShuffleWave | None = None
    commit: CommitGroups = commit_group_rewrites


def rewrite_waves(groups: list[FileGroup], max_concurrent: int) -> list[list[FileGroup]]:
    """``groups`` in plan order, cut into waves of at most ``max_concurrent`` groups."""
    return [groups[start : start + max_concurrent] for start in range(0, len(groups), max_concurrent)]


def rewrite_groups(
    runner: RewriteRun,
    table: Table,
    plan: RewritePlan,
    groups: list[FileGroup],
    counters: ScanMetrics | None = None,
    *,
    outcome: RewriteOutcome | None = None,
) -> tuple[list[GroupRewrite], RewriteContexts]:
    """Rewrite ``groups`` where ``runner`` runs them, a wave of groups at a time (module doc, step 2); nothing
    committed."""
    tasks = plan_rewrite_tasks(table, groups)
    contexts = rewrite_contexts(table, plan, tasks)
    written_by_group: dict[int, list[WrittenFile]] = {group.global_index: [] for group in groups}
    try:
        for wave in rewrite_waves(groups, plan.options.max_concurrent_file_group_rewrites):
            in_wave = {group.global_index for group in wave}
            wave_tasks = [task for task in tasks if task.group_index in in_wave]
            if not wave_tasks:
                continue
            if plan.strategy.is_shuffling:  # sort and z-order: a shuffle by key range per wave
                assert runner.shuffle_wave is not None  # run_rewrite refused the plan otherwise
                results = runner.shuffle_wave(plan.strategy, wave, wave_tasks, contexts, counters=counters)
            else:
                results = _run_wave(runner.executor, wave_tasks, contexts, counters)
            for group_index, written in results:
                written_by_group[group_index].append(written)
            if outcome is not None:
                outcome.waves += 1
    except BaseException:
        delete_leftovers(contexts.write.table_location, contexts.write.write_id, set(), table.io)
        raise
    rewrites = [GroupRewrite(group, tuple(written_by_group[group.global_index])) for group in groups]
    return rewrites, contexts


def _run_wave(
    executor: TaskExecutor, tasks: list[RewriteTask], contexts: RewriteContexts, counters: ScanMetrics | None
) -> list[tuple[int, WrittenFile]]:
    """Run ``tasks`` through the executor seam (on Spark one job, one Spark task each); (group index, written file)
    pairs."""

    def rewrite(task: RewriteTask, metrics: ScanMetrics, attempt: str) -> list[WrittenFile]:
        return rewrite_task(task, contexts, metrics, attempt)

    groups = sorted({task.group_index for task in tasks})
    description = f"rewrite file groups {groups} ({len(tasks)} tasks)"
    written, task_counters = executor.run_tasks(tasks, rewrite, description)
    if counters is not None:
        for key, value in task_counters.items():
            setattr(counters, key, getattr(counters, key) + value)
    return [(task.group_index, item) for task, files in zip(tasks, written, strict=True) for item in files]


def run_rewrite(runner: RewriteRun, table: Table, plan: RewritePlan) -> RewriteOutcome:
    """Rewrite and commit every group of ``plan`` (module doc); ``table`` is refreshed to the last commit."""
    require_writable_format(table)
    if plan.strategy.is_shuffling and runner.shuffle_wave is None:  # refused before any work
        raise UnsupportedFeatureError(
            f"a {plan.strategy.java_name} rewrite of table {plan.table_name} shuffles its rows by key range, on Spark"
        )
    outcome = RewriteOutcome()
    replaced: set[str] = set()
    batch_size = plan.groups_per_commit
    batches = [list(plan.groups[start : start + batch_size]) for start in range(0, len(plan.groups), batch_size)]
    last_error: BaseException | None = None
    for batch in batches:
        try:
            result, removed_deletes = _rewrite_and_commit(
                runner, table, plan, batch, replaced=replaced, outcome=outcome
            )
        except CommitOutcomeUnknownError:
            raise
        except Exception as error:
            if not plan.options.partial_progress_enabled:
                raise
            last_error = error
            outcome.failed_groups += [group.global_index for group in batch]
            outcome.failures.append(f"groups {[group.global_index for group in batch]}: {error}")
            log.warning("rewrite of groups %s of %s failed: %s", outcome.failed_groups, plan.table_name, error)
            continue
        outcome.commits.append(result)
        outcome.committed_groups += [group.global_index for group in batch]
        outcome.removed_delete_files += len(removed_deletes)
        replaced |= {candidate.path for group in batch for candidate in group.files}
    if batches and not outcome.commits and last_error is not None:
        raise NothingCommittedError(
            f"no commit of the rewrite of table {plan.table_name} succeeded; last failure: {last_error}"
        ) from last_error
    return outcome


def _rewrite_and_commit(
    runner: RewriteRun,
    table: Table,
    plan: RewritePlan,
    batch: list[FileGroup],
    *,
    replaced: set[str],
    outcome: RewriteOutcome,
) -> tuple[CommitResult, set[DeleteKey]]:
    """One batch: rewritten where ``runner`` runs it, committed; files of the write id its commit does not name are
    deleted.

    The files the commit names are the committer's to delete (only when it certainly did not land).
    """
    started = time.perf_counter()
    contexts: RewriteContexts | None = None
    named: set[str] = set()
    log.info("rewrite of %d file groups of %s ...", len(batch), plan.table_name)
    try:
        rewrites, contexts = rewrite_groups(runner, table, plan, batch, outcome.counters, outcome=outcome)
        named = {item.file_path for rewrite in rewrites for item in rewrite.written}
        log.info("rewrite done in %.1f s (%d files written); commit ...", time.perf_counter() - started, len(named))
        outcome.seconds["rewrite"] += time.perf_counter() - started
        started = time.perf_counter()
        result, removed_deletes = runner.commit(table, plan, rewrites, replaced_before=replaced)
        outcome.seconds["commit"] += time.perf_counter() - started
        log.info("commit done: snapshot %s", result.snapshot_id)
        outcome.rows_written += sum(item.record_count for rewrite in rewrites for item in rewrite.written)
        return result, removed_deletes
    finally:
        if contexts is not None:
            delete_leftovers(contexts.write.table_location, contexts.write.write_id, named, table.io)
