"""The executor seam's job-level helpers on this process's executor: tasks run in order with their own tags,
counters summed, written files gathered and nulls in required columns summed over every task."""

from __future__ import annotations

import pytest

from spark_jobs.engine.jobs.executor import write_files
from spark_jobs.engine.shared.errors import RequiredColumnNullsError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.spark.driver_read import InProcessExecutor


def _file(path: str, rows: int) -> WrittenFile:
    return WrittenFile(
        content=0, file_path=path, file_size_in_bytes=10, spec_id=0, partition_values=(), record_count=rows
    )


def test_tasks_run_in_order_each_with_its_own_attempt_tag_and_the_counters_summed() -> None:
    def run(rows: int, metrics: ScanMetrics, attempt: str) -> list[tuple[int, str]]:
        metrics.rows_read += rows
        return [(rows, attempt)] * (rows % 3)

    results, counters = InProcessExecutor().run_tasks([4, 5, 6], run, "test")
    assert results == [[(4, "driver-t0")], [(5, "driver-t1")] * 2, []]
    assert counters["rows_read"] == 15


def test_written_files_come_back_in_task_order() -> None:
    def write(task: str, metrics: ScanMetrics, attempt: str) -> list[WrittenFile]:
        return [_file(f"{task}-{attempt}-{index}.parquet", 1) for index in range(2)]

    files, _ = write_files(InProcessExecutor(), ["a", "b"], write, "test")
    assert [item.file_path for item in files] == [
        "a-driver-t0-0.parquet",
        "a-driver-t0-1.parquet",
        "b-driver-t1-0.parquet",
        "b-driver-t1-1.parquet",
    ]


def test_nulls_in_required_columns_are_counted_over_every_task() -> None:
    def write(nulls: int, metrics: ScanMetrics, attempt: str) -> list[WrittenFile]:
        if nulls:
            raise RequiredColumnNullsError({"id": nulls})
        return [_file(f"{attempt}.parquet", 1)]

    with pytest.raises(RequiredColumnNullsError) as raised:
        write_files(InProcessExecutor(), [2, 0, 3], write, "test")
    assert raised.value.null_counts == {"id": 5}  # both tasks' rows, not the first task's alone
