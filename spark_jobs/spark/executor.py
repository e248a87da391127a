"""Spark's implementation of the executor seam (``engine/jobs/executor.py``): one Spark task per planned task.

- ``run_tasks`` (``run_on_spark``): one stage of tasks, each sending its results to the driver:
  1. each planned task becomes one partition of a Python RDD (``parallelize`` of the pickled tasks, one per slice);
  2. on the executor the task is run by the job's function, given a fresh ``ScanMetrics`` and the attempt's tag
     (``task_attempt_tag``: stage, partition, attempt and Spark's task attempt id); it yields (results, counters);
  3. ``collect`` brings the pairs to the driver: one Spark job of one stage, no shuffle, and no row crosses into
     the JVM. A failed attempt's results never reach the driver; a retried one's files carry another tag.
  An aggregate's folds (``fold_tasks``: each task read by ``read.task_scan.read_task`` and folded in pyarrow),
  compaction's rewrite waves and an ingest's Parquet-source writes run this way.
- ``task_frame`` (Spark's own): the rows planned tasks read, as a DataFrame Spark goes on to join, shuffle or
  write, so they never reach the driver: one Spark partition per task (``scan.task_rows``), read with
  ``mapInArrow``. An upsert's or delete's key scan (the keys and positions of the files that may hold the batch's
  keys) runs this way.
- ``count_rows``: a DataFrame over the tasks (``mapInArrow``), counted by Spark.
- ``write_export``: that DataFrame with its executors' counters, written by Spark's writer through a staging
  directory where Spark's JVM has a file system for the output (``spark/export.py``), else by pyarrow on the
  executors (``spark/files.py``).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession

from spark_jobs.engine.jobs.executor import (
    ExportTarget,
    ResultT,
    TaskFold,
    TaskResults,
    TaskRun,
    TaskT,
    fold_session,
)
from spark_jobs.engine.planning.scan_context import ScanContext
from spark_jobs.engine.planning.scan_tasks import ScanTask
from spark_jobs.engine.read.task_scan import read_task
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.spark.ansi import ansi_enabled
from spark_jobs.spark.distributed_planning import SparkManifestReader
from spark_jobs.spark.scan import (
    counted_dataframe_from_session,
    dataframe_from_session,
    read_parallelism,
    task_payloads,
    task_rows,
)
from spark_jobs.spark.types import conform_batch, spark_arrow_schema_of, spark_schema_of

if TYPE_CHECKING:
    from spark_jobs.engine.read.session import ReadSession

JOB_DESCRIPTION = "spark.job.description"
# Reads one task's rows on an executor: (the task, the counters its reads add to) -> its Arrow batches.
TaskRead = Callable[[TaskT, ScanMetrics], Iterator[pa.RecordBatch]]


def task_attempt_tag() -> str:
    """What names this task attempt in the files it writes: stage, partition, attempt, and Spark's task attempt id.

    The attempt id is unique within the Spark application: a stage re-run after a fetch failure restarts attempt
    numbers at 0 while tasks of the earlier stage attempt may still be writing, so stage, partition and attempt
    number alone could name two writers' files the same.
    """
    context = TaskContext.get()
    if context is None:
        return "driver"
    return f"s{context.stageId()}-t{context.partitionId()}-a{context.attemptNumber()}-i{context.taskAttemptId()}"


def run_on_spark(
    spark: SparkSession, tasks: Sequence[TaskT], run: TaskRun[TaskT, ResultT], description: str
) -> TaskResults[ResultT]:
    """Every task run by ``run`` on the executors (one Spark task each, module doc), its results in task order, and
    the executors' counters summed; ``description`` is what Spark's UI shows for the job."""
    payloads = [pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL) for task in tasks]
    if not payloads:
        return [], {}

    def run_tasks(task_payloads: Iterable[bytes]) -> Iterator[tuple[list[ResultT], dict[str, int]]]:
        attempt = task_attempt_tag()  # one planned task per Spark task (one per slice): the tag names it alone
        for payload in task_payloads:
            metrics = ScanMetrics()
            results = run(pickle.loads(payload), metrics, attempt)
            yield results, metrics.as_dict()

    context_ = spark.sparkContext
    previous = context_.getLocalProperty(JOB_DESCRIPTION)
    context_.setJobDescription(description)  # what Spark's UI shows
    try:
        replies = context_.parallelize(payloads, len(payloads)).mapPartitions(run_tasks).collect()
    finally:
        context_.setLocalProperty(JOB_DESCRIPTION, previous)  # type: ignore[arg-type]  # None removes it
    counters: dict[str, int] = {}
    for _, task_counters in replies:
        for key, value in task_counters.items():
            counters[key] = counters.get(key, 0) + value
    return [results for results, _ in replies], counters


def fold_on_spark(
    spark: SparkSession, tasks: Sequence[ScanTask], context: ScanContext, fold: TaskFold, description: str
) -> tuple[list[list[Any]], dict[str, int]]:
    """Every task's ``fold`` of its batches (one Spark task each, module doc) and the executors' counters summed."""

    def read_and_fold(task: ScanTask, metrics: ScanMetrics, _attempt: str) -> list[Any]:
        return fold(read_task(task, context, metrics))

    return run_on_spark(spark, tasks, read_and_fold, description)


class SparkExecutor:
    """Scan tasks run on a Spark session's executors (the engine must be importable there)."""

    ran_in: Literal["spark"] = "spark"

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def parallelism(self) -> int:
        """Spark's task slots (``spark/scan.py``: one task per slot suits these routes)."""
        return read_parallelism(self.spark)

    def run_tasks(self, tasks: Sequence[TaskT], run: TaskRun[TaskT, ResultT], description: str) -> TaskResults[ResultT]:
        """Every task run on the executors, one Spark stage (``run_on_spark``)."""
        return run_on_spark(self.spark, tasks, run, description)

    def task_frame(self, tasks: Sequence[TaskT], read: TaskRead[TaskT], schema: pa.Schema) -> DataFrame:
        """The rows ``read`` reads of each task, as a DataFrame of ``schema`` in Spark's types (module doc); the
        reads' counters are not gathered."""
        spark_schema = spark_schema_of(schema)
        if not tasks:
            return self.spark.createDataFrame([], spark_schema)
        spark_arrow = spark_arrow_schema_of(schema)
        payloads = [pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL) for task in tasks]
        frame, closed_over = task_rows(self.spark, payloads)

        def read_tasks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            metrics = ScanMetrics()
            for payload in task_payloads(batches, closed_over):
                for batch in read(pickle.loads(payload), metrics):
                    yield conform_batch(batch, spark_arrow)

        return frame.mapInArrow(read_tasks, spark_schema)

    def fold_tasks(
        self, session: ReadSession, fold: TaskFold, description: str
    ) -> tuple[list[list[Any]], dict[str, int]]:
        """Every task folded on the executors, one Spark stage; ``description`` is what Spark's UI shows."""
        return fold_session(self, session, fold, description)

    def count_rows(self, session: ReadSession) -> int:
        """Spark's count of the DataFrame over the tasks."""
        return int(dataframe_from_session(self.spark, session).count())

    def write_export(self, session: ReadSession, target: ExportTarget) -> dict[str, int]:
        """The rows written at ``target`` (module doc); the executors' counters."""
        from spark_jobs.spark.export import write_with_hadoop
        from spark_jobs.spark.files import hadoop_uri, write_output

        frame, executor_counters = counted_dataframe_from_session(self.spark, session)
        spark_output = hadoop_uri(self.spark, target.output)
        if spark_output is not None:  # a file system Spark's JVM has (local, HDFS, S3A on a cluster that has it)
            options = {"header": "true"} if target.output_format == "csv" else {}
            write_with_hadoop(
                frame, spark_output, output_format=target.output_format, mode=target.mode, options=options
            )
        else:  # an object store without a JVM connector: pyarrow on the executors (spark/files.py)
            write_output(frame, target.output, target.output_format, target.mode, session.context.io_properties)
        return dict(executor_counters.value)

    def ansi_mode(self) -> bool:
        """The session's own ANSI mode."""
        return ansi_enabled(self.spark)

    def export_refusal(self, session: ReadSession, target: ExportTarget, max_bytes: int) -> str | None:
        """Spark writes every export."""
        return None

    def manifest_reader(self) -> SparkManifestReader:
        """The executors read manifests for distributed planning (``spark/distributed_planning.py``)."""
        return SparkManifestReader(self.spark)
