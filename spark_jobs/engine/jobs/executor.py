"""The executor seam: where a job's scan tasks run, behind one interface (run tasks, write files, count rows).

A job's orchestration (``engine/jobs/``) plans on the driver and hands the planned tasks to a ``TaskExecutor``.
Two implement it: Spark's executors (``spark/executor.py``: one Spark task per scan task) and this process
(``spark/driver_read.py``: a read small enough for one Spark task, run by the driver without starting Spark).
Both read each task with ``read.task_scan`` and report the same counters, so a job's result is the same wherever
it ran; its ``ran_in`` says where.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # kept off the import path: the read job rules Spark in or out before it imports the engine
    import pyarrow as pa

    from spark_jobs.engine.planning.file_selection import RemoteManifestReader
    from spark_jobs.engine.read.session import ReadSession

RanIn = Literal["driver", "spark"]
# Folds one task's batches into a list of partial values (an aggregate's partials); runs where the task runs.
TaskFold = Callable[[Iterator["pa.RecordBatch"]], list[Any]]


@dataclass(frozen=True)
class ExportTarget:
    """Where and how a read's rows are written: a directory URI, ``parquet`` or ``csv``, ``error`` or ``overwrite``."""

    output: str
    output_format: str
    mode: str


class TaskExecutor(Protocol):
    """Runs a read session's scan tasks: folds them, counts their rows, or writes them as files."""

    @property
    def ran_in(self) -> RanIn:
        """``driver`` or ``spark``: the result line's ``ran_in``."""
        ...

    def parallelism(self) -> int | None:
        """The task slots a plan should fill (``None``: no preference, plan by the table's split size)."""
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
