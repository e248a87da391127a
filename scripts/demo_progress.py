"""Live console progress of the demo's DAG run, line by line, with the times the tasks themselves logged.

``airflow dags test --use-executor`` runs each task in its own process, which writes the task's log (one JSON event
per line) where the Airflow UI reads it. This filter takes the command's output on stdin (and drops it: it is in the
tee'd file), follows the log files of the run as they grow and, every half second, the task instances' states in
Airflow's metadata database:

1. A task's first log event prints ``[demo] HH:MM:SS  <task> ...`` at that event's time.
2. Its Spark job's own lines (``INFO spark_jobs...: <message>``) and errors print indented, at their time (with the
   task's name while another task runs beside it).
3. The report task's printed report and the compaction report's location print as they are.
4. A task instance that reached a finished state prints ``[demo] HH:MM:SS  <task> done (N s)`` at its end time,
   after the rest of its log; finished states are read before new logs, so a task's end prints before the start of
   the task that follows it.

Times are local (the log's are UTC). Every line is flushed as it is printed: no pipe buffering delays it.
"""

from __future__ import annotations

import argparse
import json
import re
import select
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

SPARK_JOB_LINE = re.compile(r"^(?:\S+ \S+ )?(?P<level>INFO|WARN|WARNING|ERROR) spark_jobs[.a-z_]*: (?P<message>.*)$")
REPORT_LINE = re.compile(r"^(=|Iceberg demo|  )")
# Where the demo DAG's report task logs its report (dags/iceberg_demo_pipeline.py), and printed output.
REPORT_LOGGERS = ("iceberg_demo.report", "task.stdout")
REPORT_WRITTEN = "Compaction report written to "


FINISHED_STATES = ("success", "failed", "skipped", "upstream_failed", "removed")


@dataclass(frozen=True)
class FinishedTask:
    """A task instance of the run that reached a finished state."""

    task: str
    state: str
    end: datetime
    seconds: float


def local_time(timestamp: str | datetime) -> str:
    """``HH:MM:SS`` in local time of an aware datetime or an ISO-8601 timestamp (``Z`` or an offset)."""
    moment = (
        timestamp
        if isinstance(timestamp, datetime)
        else datetime.fromisoformat(timestamp.strip().replace("Z", "+00:00"))
    )
    return moment.astimezone().strftime("%H:%M:%S")


def finished_tasks_in_airflow(dag_id: str, since: float) -> Callable[[], Iterable[FinishedTask]]:
    """A query of the DAG's task instances started since ``since`` that have finished, from Airflow's database."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    started_after = datetime.fromtimestamp(since, UTC)

    def query() -> list[FinishedTask]:
        with create_session() as session:
            rows = session.execute(
                select(TaskInstance.task_id, TaskInstance.state, TaskInstance.start_date, TaskInstance.end_date)
                .where(TaskInstance.dag_id == dag_id, TaskInstance.start_date >= started_after)
                .where(TaskInstance.state.in_(FINISHED_STATES))
            ).all()
        return [
            FinishedTask(str(task), str(state), end, (end - start).total_seconds())
            for task, state, start, end in rows
            if start is not None and end is not None
        ]

    return query


@dataclass
class TaskLog:
    """One task attempt's log file, read up to ``offset``."""

    task: str
    path: Path
    offset: int = 0
    started: bool = False
    pending: str = ""


@dataclass
class Progress:
    """Follows the run's task logs under ``log_root`` and prints what a person watching the demo wants to see."""

    log_root: Path
    dag_id: str
    out: TextIO
    since: float
    finished_tasks: Callable[[], Iterable[FinishedTask]] = lambda: ()
    logs: dict[Path, TaskLog] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    reported: set[str] = field(default_factory=set)

    def say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def discover(self) -> None:
        """Start following every task log of the DAG written since the run started."""
        for path in sorted((self.log_root / f"dag_id={self.dag_id}").glob("run_id=*/task_id=*/**/attempt=*.log")):
            if path not in self.logs and path.stat().st_mtime >= self.since:
                task = next(part for part in path.parts if part.startswith("task_id="))[len("task_id=") :]
                self.logs[path] = TaskLog(task, path)

    def poll(self) -> None:
        """Print the ends of tasks that finished, then the new complete lines of every followed log."""
        for done in sorted(self.finished_tasks(), key=lambda task: task.end):
            if done.task not in self.reported:
                self.finished(done)
        self.discover()
        for log in self.logs.values():
            self.read(log)

    def read(self, log: TaskLog) -> None:
        with log.path.open("rb") as stream:
            stream.seek(log.offset)
            data = stream.read()
        log.offset += len(data)
        text = log.pending + data.decode("utf-8", errors="replace")
        *lines, log.pending = text.split("\n")
        for line in lines:
            self.event(log, line)

    def event(self, log: TaskLog, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        when = local_time(str(event.get("timestamp", ""))) if event.get("timestamp") else "--:--:--"
        message = str(event.get("event", ""))
        if not log.started:
            log.started = True
            self.running.add(log.task)
            self.say(f"[demo] {when}  {log.task} ...")
        which = f"[{log.task}] " if len(self.running) > 1 else ""
        if spark := SPARK_JOB_LINE.match(message):
            level = "" if spark["level"] == "INFO" else f"{spark['level'].lower()}: "
            self.say(f"         {when}  {which}{level}{spark['message']}")
        elif event.get("logger") in REPORT_LOGGERS and REPORT_LINE.match(message):
            self.say(message)
        elif message.startswith(REPORT_WRITTEN):
            self.say(f"         {when}  {which}{message}")
        elif event.get("level") in ("error", "critical") and message:
            self.say(f"         {when}  {which}error: {message}")

    def finished(self, done: FinishedTask) -> None:
        """A task instance finished: print the rest of its log, then its end."""
        self.discover()
        for log in self.logs.values():
            if log.task == done.task:
                self.read(log)
        self.reported.add(done.task)
        self.running.discard(done.task)
        outcome = "done" if done.state == "success" else done.state
        self.say(f"[demo] {local_time(done.end)}  {done.task} {outcome} ({done.seconds:.0f} s)")


def follow(progress: Progress, commands: TextIO, interval: float = 0.5) -> None:
    """Read the command's output until it ends, following the logs every ``interval`` seconds meanwhile."""
    while True:
        ready, _, _ = select.select([commands], [], [], interval)
        if ready and not commands.readline():
            break
        progress.poll()
    progress.poll()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-root", required=True, type=Path, help="Airflow's [logging] base_log_folder")
    parser.add_argument("--dag-id", required=True)
    parser.add_argument("--since", required=True, type=float, help="epoch seconds: logs older than this are ignored")
    args = parser.parse_args(argv)
    progress = Progress(
        args.log_root, args.dag_id, sys.stdout, args.since, finished_tasks_in_airflow(args.dag_id, args.since)
    )
    follow(progress, sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
