"""Spark's executor (``spark/executor.py``): planned tasks run one Spark task each, in one job of one stage, their
results in task order with the executors' counters summed, each attempt named apart."""

from __future__ import annotations

import pytest

from spark_jobs.engine.jobs.executor import write_files
from spark_jobs.engine.shared.errors import RequiredColumnNullsError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.spark.executor import JOB_DESCRIPTION, SparkExecutor, task_attempt_tag

pytestmark = pytest.mark.spark35


def test_each_task_runs_as_one_spark_task_of_one_job_and_its_results_come_back_in_order(spark) -> None:
    def run(rows: int, metrics: ScanMetrics, attempt: str) -> list[tuple[int, str]]:
        metrics.rows_read += rows
        return [(rows, attempt)] * (rows % 3)

    context = spark.sparkContext
    context.setJobGroup("executor-run-tasks", "run tasks test")
    context.setJobDescription("the caller's")
    try:
        results, counters = SparkExecutor(spark).run_tasks([4, 5, 6, 7], run, "four tasks")
        assert context.getLocalProperty(JOB_DESCRIPTION) == "the caller's"  # restored
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty(JOB_DESCRIPTION, None)
    assert [[rows for rows, _ in task] for task in results] == [[4], [5, 5], [], [7]]
    tags = [attempt for task in results for _, attempt in task]
    assert all(tag.startswith("s") and "-a0-i" in tag for tag in tags) and len(set(tags)) == 3
    assert counters["rows_read"] == 22
    tracker = context.statusTracker()
    (job,) = tracker.getJobIdsForGroup("executor-run-tasks")
    (stage,) = tracker.getJobInfo(job).stageIds
    assert tracker.getStageInfo(stage).numTasks == 4
    assert SparkExecutor(spark).run_tasks([], run, "nothing") == ([], {})
    assert task_attempt_tag() == "driver"


def test_written_files_and_nulls_in_required_columns_gathered_from_the_executors(spark) -> None:
    def write(nulls: int, metrics: ScanMetrics, attempt: str) -> list[WrittenFile]:
        if nulls:
            raise RequiredColumnNullsError({"id": nulls})
        return [WrittenFile(0, f"{attempt}.parquet", 10, 0, (), 1)]

    files, _ = write_files(SparkExecutor(spark), [0, 0], write, "writes")
    assert len({item.file_path for item in files}) == 2
    with pytest.raises(RequiredColumnNullsError) as raised:
        write_files(SparkExecutor(spark), [2, 0, 3], write, "writes with nulls")
    assert raised.value.null_counts == {"id": 5}  # counted over every task, reported once (no task retried)
