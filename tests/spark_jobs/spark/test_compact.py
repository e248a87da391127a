"""Rewrites on real local Spark: partial progress in batches, a batch failing on a concurrent delete, a failed task."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.rewrite_commit import NothingCommittedError
from spark_jobs.spark import compact as spark_compact
from spark_jobs.spark.compact import run_rewrite
from tests.support.rewrite_tables import build_events, equality_delete_change, ids_and_checksum, position_delete_change

pytestmark = [pytest.mark.spark, pytest.mark.spark35]


@pytest.fixture
def events(sql_catalog):
    """Two partitions (a, b) of six 20-row files each, ids 0..239."""
    return build_events(sql_catalog)


def _plan(table, **options):
    resolved = RewriteOptions.resolve(table.properties, **{"min_input_files": 2, **options})
    return plan_rewrite(table, table.current_snapshot(), resolved)


def _data_files_on_disk(table) -> set[Path]:
    return set(Path(table.metadata.location.removeprefix("file://"), "data").rglob("*.parquet"))


def test_partial_progress_commits_one_batch_per_group_and_removes_their_deletes(spark, events):
    commit_change(events, position_delete_change(events, {0, 21}, "pos"))
    commit_change(events, equality_delete_change(events, {"a": [40], "b": [60]}, "eq"))
    before = ids_and_checksum(events)
    start = events.current_snapshot()
    plan = _plan(events, partial_progress_enabled=True, partial_progress_max_commits=2)
    assert (len(plan.groups), plan.groups_per_commit) == (2, 1)
    outcome = run_rewrite(spark, events, plan)
    assert len(outcome.commits) == 2 and outcome.committed_groups == [1, 2] and not outcome.failed_groups
    assert outcome.removed_delete_files == 4
    assert outcome.counters.rows_deleted_by_position_deletes == 2
    assert outcome.counters.rows_deleted_by_equality_deletes == 2
    assert outcome.rows_written == 240 - 4 == outcome.counters.rows_out
    history = [snapshot.snapshot_id for snapshot in events.snapshots()]
    first, second = (commit.snapshot_id for commit in outcome.commits)
    assert history[-2:] == [first, second] and events.metadata.snapshot_by_id(first).parent_snapshot_id == (
        start.snapshot_id
    )
    assert ids_and_checksum(events) == before
    assert events.current_snapshot().summary["total-delete-files"] == "0"
    assert events.current_snapshot().summary["total-data-files"] == "2"


def test_a_batch_failing_on_a_concurrent_position_delete_keeps_the_others(spark, events, monkeypatch):
    plan = _plan(events, partial_progress_enabled=True, partial_progress_max_commits=2)
    real_commit = spark_compact.commit_group_rewrites
    calls = []

    def commit_after_a_concurrent_delete(table, plan, rewrites, **kwargs):
        calls.append([rewrite.group.global_index for rewrite in rewrites])
        if len(calls) == 2:  # another job deletes a row of group 2's partition (b) before this commit
            other = table.catalog.load_table(table.name())
            commit_change(other, position_delete_change(other, {21}, "pos"))
        return real_commit(table, plan, rewrites, **kwargs)

    monkeypatch.setattr(spark_compact, "commit_group_rewrites", commit_after_a_concurrent_delete)
    before_files = _data_files_on_disk(events)
    outcome = run_rewrite(spark, events, plan)
    assert outcome.committed_groups == [1] and outcome.failed_groups == [2]
    assert "position deletes" in outcome.failures[0]
    assert ids_and_checksum(events)[0] == sorted(set(range(240)) - {21})
    # partition a was rewritten into one file; nothing written for partition b is left behind
    on_disk = {path for path in _data_files_on_disk(events) - before_files if path.name.endswith("-data.parquet")}
    assert len(on_disk) == 1 and "category=a" in str(next(iter(on_disk)))


def test_without_partial_progress_a_failed_executor_task_leaves_no_file_and_no_snapshot(spark, events):
    before_location = events.metadata_location
    before_files = _data_files_on_disk(events)
    plan = _plan(events)
    victim = next(candidate.path for candidate in plan.groups[1].files)
    moved = Path(victim.removeprefix("file://"))
    moved.rename(moved.with_suffix(".away"))  # the task of group 2 cannot read its input
    try:
        with pytest.raises(Exception, match=r"away|No such file|not found|FileNotFound"):
            run_rewrite(spark, events, plan)
    finally:
        moved.with_suffix(".away").rename(moved)
    assert events.catalog.load_table(events.name()).metadata_location == before_location
    assert _data_files_on_disk(events) == before_files


def test_when_every_batch_fails_the_rewrite_fails(spark, events, monkeypatch):
    plan = _plan(events, partial_progress_enabled=True, partial_progress_max_commits=2)
    before_location = events.metadata_location
    other = events.catalog.load_table(events.name())
    commit_change(other, position_delete_change(other, {0, 21}, "pos"))
    with pytest.raises(NothingCommittedError, match="no commit of the rewrite"):
        run_rewrite(spark, events, plan)
    after = events.catalog.load_table(events.name())
    assert after.metadata_location != before_location  # the delete, and nothing after it
    assert after.current_snapshot().summary.operation.value == "delete"


@pytest.mark.parametrize(("max_concurrent", "jobs"), [(1, 2), (2, 1)])
def test_at_most_max_concurrent_groups_are_rewritten_in_one_spark_job(spark, events, max_concurrent, jobs):
    plan = _plan(events, max_concurrent_file_group_rewrites=max_concurrent)
    tasks_per_group = [group.expected_output_files for group in plan.groups]
    assert len(plan.groups) == 2 and tasks_per_group == [1, 1]
    context = spark.sparkContext
    job_group = f"rewrite-waves-{max_concurrent}"
    context.setJobGroup(job_group, "rewrite waves test")
    try:
        outcome = run_rewrite(spark, events, plan)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    tracker = context.statusTracker()
    job_ids = tracker.getJobIdsForGroup(job_group)
    assert len(job_ids) == jobs == outcome.waves
    # Each job ran the tasks of at most max_concurrent groups (one task per group here).
    for job_id in job_ids:
        stages = [tracker.getStageInfo(stage_id) for stage_id in tracker.getJobInfo(job_id).stageIds]
        assert sum(stage.numTasks for stage in stages if stage is not None) <= max_concurrent
    assert outcome.rows_written == 240 and outcome.committed_groups == [1, 2]
