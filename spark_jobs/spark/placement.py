"""The Python API's placement: where ``count`` and ``aggregate`` run their scans when called with or without Spark."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import SparkSession

from spark_jobs.engine.jobs.executor import TaskExecutor
from spark_jobs.engine.jobs.placement import Placement
from spark_jobs.engine.planning.scan_tasks import ScanTask
from spark_jobs.spark.driver_read import InProcessExecutor
from spark_jobs.spark.executor import SparkExecutor


def placement_of(
    spark: SparkSession | None,
    spark_for_plan: Callable[[Sequence[ScanTask]], SparkSession | None] | None,
    *,
    ansi: bool | None = None,
) -> Placement:
    """The Python API's placement: on ``spark`` when given; else in this process, unless ``spark_for_plan`` returns
    a session for the planned tasks."""
    in_process = InProcessExecutor(ansi=True if ansi is None else ansi)
    if spark is not None:
        return Placement.fixed(SparkExecutor(spark))
    if spark_for_plan is None:
        return Placement.fixed(in_process)
    return _ChosenPlacement(in_process, spark_for_plan)


class _ChosenPlacement(Placement):
    """A placement whose scans run where ``spark_for_plan`` says: the session it returns, or this process."""

    def __init__(self, in_process: TaskExecutor, spark_for_plan: Callable[[Sequence[ScanTask]], SparkSession | None]):
        super().__init__(0, lambda: in_process, None)
        self.spark_for_plan = spark_for_plan

    def decide_for_scan(self, tasks: list[ScanTask]) -> TaskExecutor:
        if self.route is None:
            spark = self.spark_for_plan(tasks)
            self.route = "driver" if spark is None else "spark"
            if spark is not None:
                self._spark = SparkExecutor(spark)
        return self.executor()
