"""Where a job's tasks run, decided once: in this process (the driver) or on Spark.

Spark's fixed cost (a SparkContext, a Python worker per task) is seconds; a read of at most one split costs less in
the driver that already planned it. The decision is one value, ``Placement.route``, set at most once and as early as
the facts allow, so that Spark, when it is needed, starts beside the planning rather than after it:

1. From the arguments alone (``export_may_run_in_driver``, else ``rule_out_driver``: ``--driver-max-bytes 0``,
   CSV output, a remote output).
2. From the snapshot, once the table is loaded (``spark_needed_before_planning``: no filter, and the snapshot's
   files exceed the limit).
3. From the plan (``decide`` with a reason only the plan shows, or ``decide_for_scan`` by the planned bytes,
   ``planned_bytes``: each data file slice, and each delete file or deletion vector once).
Ruling the driver out starts Spark at once (on a helper thread); its executor is awaited when the job needs it, and
this process's executor is made only when asked for.
A placement made with ``Placement.fixed`` is decided from the start (the Python API given a session, or none).
The ingest and compact jobs have no driver route: their tasks run on Spark's executor whenever they have any (an
ingest's source is read by Spark, a sort rewrite shuffles), and Spark starts only then (never for ``--dry-run``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from spark_jobs.engine.jobs.executor import RanIn, TaskExecutor

if TYPE_CHECKING:
    from pyiceberg.table.snapshots import Snapshot

    from spark_jobs.engine.planning.file_selection import RemoteManifestReader
    from spark_jobs.engine.planning.scan_tasks import ScanTask

# Starts Spark without waiting for it; the returned function waits and returns Spark's executor.
SparkStarter = Callable[[], Callable[[], TaskExecutor]]
log = logging.getLogger("spark_jobs.read")


def planned_bytes(tasks: Iterable[ScanTask]) -> int:
    """Bytes the planned read opens: each data file slice, and each delete file or deletion vector once."""
    total = 0
    delete_files: dict[tuple[str, int], int] = {}
    for task in tasks:
        for data_file in task.slices:
            total += data_file.length or data_file.file_size_in_bytes
            for position_file in data_file.position_deletes:
                delete_files[(position_file.path, 0)] = position_file.file_size_in_bytes
            for equality_file in data_file.equality_deletes:
                delete_files[(equality_file.path, 0)] = equality_file.file_size_in_bytes
            vector = data_file.deletion_vector
            if vector is not None:
                delete_files[(vector.path, vector.content_offset)] = vector.content_size_in_bytes
    return total + sum(delete_files.values())


def export_may_run_in_driver(output: str, output_format: str, max_bytes: int) -> bool:
    """Whether the arguments alone leave an export's driver route open (step 1): Parquet to a local path, a limit
    above 0 (the standard library only is imported: Spark, when ruled in, starts without waiting on it)."""
    from spark_jobs.engine.jobs.export_location import local_path

    return max_bytes > 0 and output_format == "parquet" and local_path(output) is not None


def spark_needed_before_planning(snapshot: Snapshot | None, row_filter: str | None, max_bytes: int) -> bool:
    """Whether Spark will run the read whatever the plan: no filter, and the snapshot's files exceed ``max_bytes``.

    A snapshot without ``total-files-size`` in its summary (or a table with no snapshot) is left to the plan.
    """
    if max_bytes <= 0:
        return True
    if row_filter is not None or snapshot is None or snapshot.summary is None:
        return False
    size = snapshot.summary.get("total-files-size")
    try:
        return size is not None and int(size) > max_bytes
    except ValueError:
        return False


class Placement:
    """The driver-or-Spark decision of one job (module doc): made once, then the executor it names."""

    def __init__(
        self, max_bytes: int, in_process: Callable[[], TaskExecutor], start_spark: SparkStarter | None
    ) -> None:
        self.max_bytes = max_bytes
        self.route: RanIn | None = None
        self._make_in_process = in_process
        self._in_process: TaskExecutor | None = None
        self._start_spark = start_spark
        self._spark_waiter: Callable[[], TaskExecutor] | None = None
        self._spark: TaskExecutor | None = None

    @classmethod
    def fixed(cls, executor: TaskExecutor) -> Placement:
        """A placement decided from the start: every task runs on ``executor``."""
        placement = cls(0, lambda: executor, None)
        placement.route = executor.ran_in
        if executor.ran_in == "spark":
            placement._spark = executor
        return placement

    @property
    def in_process(self) -> TaskExecutor:
        """This process's executor (made when first asked for: the job may start Spark before importing it)."""
        if self._in_process is None:
            self._in_process = self._make_in_process()
        return self._in_process

    @property
    def decided(self) -> bool:
        """Whether the route is known."""
        return self.route is not None

    @property
    def ran_in(self) -> RanIn:
        """Where the tasks ran: ``spark`` once Spark was chosen, else ``driver`` (also when nothing was scanned)."""
        return "spark" if self.route == "spark" else "driver"

    def rule_out_driver(self) -> None:
        """Decide for Spark (unless already decided) and start it now."""
        if self.route is not None:
            return
        if self._start_spark is None:
            raise RuntimeError("this placement has no Spark to start")
        self.route = "spark"
        self._spark_waiter = self._start_spark()

    def decide(self, refusal: str | None) -> TaskExecutor:
        """The executor, deciding now if still open: the driver unless ``refusal`` says why Spark must run."""
        if self.route is None:
            if refusal is None:
                self.route = "driver"
            else:
                self.rule_out_driver()
        return self.executor()

    def decide_for_scan(self, tasks: list[ScanTask]) -> TaskExecutor:
        """The executor for a scan of ``tasks``: decided by their planned bytes if still open (and logged so)."""
        if self.route is None:
            size = planned_bytes(tasks)
            if self.max_bytes > 0 and size <= self.max_bytes:
                log.info(
                    "the scan reads %d bytes, at most --driver-max-bytes %d: read in the driver", size, self.max_bytes
                )
                return self.decide(None)
            log.info("the scan reads %d bytes, more than --driver-max-bytes %d: read on Spark", size, self.max_bytes)
            return self.decide(f"the scan reads {size} bytes")
        return self.executor()

    def manifest_reader(self) -> RemoteManifestReader | None:
        """Spark's executors as a manifest reader once the route is Spark (waits for Spark), else None."""
        return self.executor().manifest_reader() if self.route == "spark" else None

    def executor(self) -> TaskExecutor:
        """The decided route's executor (waits for Spark to have started)."""
        if self.route is None:
            raise RuntimeError("the placement is not decided yet")
        if self.route == "driver":
            return self.in_process
        if self._spark is None:
            assert self._spark_waiter is not None
            self._spark = self._spark_waiter()
        return self._spark
