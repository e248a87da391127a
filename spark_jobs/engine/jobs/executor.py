"""The executor seam: where a job's tasks run, behind one interface (run tasks, write files, count rows).

A job's orchestration plans on the driver and hands the planned tasks to a ``TaskExecutor``. Two implement it:
Spark's executors (``spark/executor.py``: one Spark task per planned task) and this process
(``spark/driver_read.py``: tasks run one after another by the driver, without starting Spark).

- ``run_tasks`` is the one way a job runs its planned tasks: each task is run by a function given the task, the
  counters its reads add to, and a tag naming this attempt of it (the files it writes carry the tag, so a retried
  attempt's files are told apart); each task's results come back to the driver in task order, with the counters
  summed. The read job's folds (``fold_tasks``), compaction's rewrite waves (``spark/compact.py``) and an
  ingest's Parquet-source writes (``write_files``: written files, or the rows with nulls a table forbids, counted
  over every task) all go through it.
- ``count_rows`` and ``write_export`` are the read job's whole-scan routes (Spark's count and writer, or this
  process's).
- Spark's executor also collects the keys an upsert or delete matches (``SparkExecutor.task_frame``: the rows of
  planned key-scan tasks as a DataFrame that Spark joins and writes, never brought to the driver); the ingest has
  no driver route, so this process's executor has no counterpart. The ingest job (``ingest_job.py``) reaches
  these through its rows (``IngestRows``, Spark's in ``spark/ingest.py``): the job decides, the rows run.
Both implementations read with ``read.task_scan`` and report the same counters, so a job's result is the same
wherever it ran; its ``ran_in`` says where. Where the tasks run is decided once per job (``placement.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

if TYPE_CHECKING:  # kept off the import path: the read job rules Spark in or out before it imports the engine
    import pyarrow as pa

    from spark_jobs.engine.planning.file_selection import RemoteManifestReader
    from spark_jobs.engine.planning.scan_tasks import ScanTask
    from spark_jobs.engine.read.session import ReadSession
    from spark_jobs.engine.shared.metrics import ScanMetrics
    from spark_jobs.engine.write.file_entries import WrittenFile
    from spark_jobs.engine.write.task_files import TaskFiles

RanIn = Literal["driver", "spark"]
TaskT = TypeVar("TaskT")
ResultT = TypeVar("ResultT")
# Runs one task where the executor runs it: (the task, the counters its reads add to, the tag naming this attempt
# in the files it writes) -> what the task sends back to the driver. Pickled to Spark's executors with its closure.
TaskRun = Callable[[TaskT, "ScanMetrics", str], list[ResultT]]
# What ``run_tasks`` returns: each task's results (in task order) and the counters of the tasks' reads, summed.
TaskResults = tuple[list[list[ResultT]], dict[str, int]]
# Folds one task's batches into a list of partial values (an aggregate's partials); runs where the task runs.
TaskFold = Callable[[Iterator["pa.RecordBatch"]], list[Any]]


@dataclass(frozen=True)
class ExportTarget:
    """Where and how a read's rows are written: a directory URI, ``parquet`` or ``csv``, ``error`` or ``overwrite``."""

    output: str
    output_format: str
    mode: str


class TaskExecutor(Protocol):
    """Runs a job's planned tasks (``run_tasks``), and a read session's: folds them, counts their rows, or writes
    them as files."""

    @property
    def ran_in(self) -> RanIn:
        """``driver`` or ``spark``: the result line's ``ran_in``."""
        ...

    def parallelism(self) -> int | None:
        """The task slots a plan should fill (``None``: no preference, plan by the table's split size)."""
        ...

    def run_tasks(self, tasks: Sequence[TaskT], run: TaskRun[TaskT, ResultT], description: str) -> TaskResults[ResultT]:
        """Every task run by ``run`` (module doc); ``description`` names the work in Spark's UI."""
        ...

    def fold_tasks(
        self, session: ReadSession, fold: TaskFold, description: str
    ) -> tuple[list[list[Any]], dict[str, int]]:
        """Every task's fold (one list of partials per task) and the counters of the reads, summed."""
        ...

    def count_rows(self, session: ReadSession) -> int:
        """The rows ``session`` reads (every delete applied)."""
        ...

    def write_export(self, session: ReadSession, target: ExportTarget) -> dict[str, int]:
        """Write ``session``'s rows at ``target`` through a staging directory; the counters of the reads that ran
        outside ``session.metrics`` (on other processes), to add to them."""
        ...

    def ansi_mode(self) -> bool:
        """Spark SQL's ANSI mode for folds (overflow raises instead of wrapping)."""
        ...

    def export_refusal(self, session: ReadSession, target: ExportTarget, max_bytes: int) -> str | None:
        """Why this executor cannot write ``session`` at ``target`` (``None``: it can)."""
        ...

    def manifest_reader(self) -> RemoteManifestReader | None:
        """Where a plan may read its manifests besides this process (Spark's executors), or None."""
        ...


def fold_session(executor: TaskExecutor, session: ReadSession, fold: TaskFold, description: str) -> TaskResults[Any]:
    """``session``'s tasks read (deletes and the row filter applied) and each folded where it runs: ``run_tasks``
    with ``fold`` over ``read.task_scan.read_task`` (what both executors' ``fold_tasks`` do)."""
    from spark_jobs.engine.read.task_scan import read_task

    context = session.context

    def read_and_fold(task: ScanTask, metrics: ScanMetrics, _attempt: str) -> list[Any]:
        return fold(read_task(task, context, metrics))

    return executor.run_tasks(session.tasks, read_and_fold, description)


def write_files(
    executor: TaskExecutor, tasks: Sequence[TaskT], write: TaskRun[TaskT, WrittenFile], description: str
) -> tuple[list[WrittenFile], dict[str, int]]:
    """Every task's written files, in task order, and the counters summed; ``write`` returns the files one task
    wrote (naming them with the attempt's tag).

    A task that finds nulls in a column the table requires sends its counts instead of raising (Spark would retry
    it, and it would name its own rows only): ``RequiredColumnNullsError`` then says how many rows of all the tasks
    hold them (``write.task_files``).
    """
    from spark_jobs.engine.write.task_files import files_without_nulls, written_or_nulls

    def write_or_count_nulls(task: TaskT, metrics: ScanMetrics, attempt: str) -> TaskFiles:
        return written_or_nulls(lambda: write(task, metrics, attempt))

    per_task, counters = executor.run_tasks(tasks, write_or_count_nulls, description)
    return files_without_nulls([item for described in per_task for item in described]), counters
