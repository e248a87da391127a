"""The demo's console filter: task starts and ends in order at the tasks' own times, Spark lines, the report."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("demo_progress", REPO_ROOT / "scripts" / "demo_progress.py")
assert _spec and _spec.loader
demo_progress = importlib.util.module_from_spec(_spec)
sys.modules["demo_progress"] = demo_progress  # dataclasses look their module up there
_spec.loader.exec_module(demo_progress)


def event(when: str, message: str, **fields: str) -> str:
    return json.dumps({"timestamp": when, "level": fields.pop("level", "info"), "event": message, **fields}) + "\n"


def local(when: str) -> str:
    return datetime.fromisoformat(when.replace("Z", "+00:00")).astimezone().strftime("%H:%M:%S")


def test_a_run_reads_as_starts_job_lines_ends_and_the_report(tmp_path: Path) -> None:
    run = tmp_path / "dag_id=demo" / "run_id=manual__1"
    finished: list = []
    out = io.StringIO()
    progress = demo_progress.Progress(tmp_path, "demo", out, since=0, finished_tasks=lambda: list(finished))

    ingest = run / "task_id=ingest" / "attempt=1.log"
    ingest.parent.mkdir(parents=True)
    ingest.write_text(event("2026-01-01T10:00:01Z", "::group::Pre Execute"))
    progress.poll()
    with ingest.open("a") as log:
        log.write(event("2026-01-01T10:00:05Z", "2026-01-01 10:00:05,000 INFO spark_jobs: Spark started in 3.0 s"))
        log.write(event("2026-01-01T10:00:06Z", "2026-01-01 10:00:06,000 INFO spark_jobs.ingest: write done"))
        log.write('{"timestamp": "2026-01-01T10:00:07Z", "event": "half a li')  # not complete yet: not printed
    end = datetime(2026, 1, 1, 10, 0, 9, tzinfo=UTC)
    finished.append(demo_progress.FinishedTask("ingest", "success", end, 8.0))
    report = run / "task_id=report" / "attempt=1.log"
    report.parent.mkdir(parents=True)
    report.write_text(
        event("2026-01-01T10:00:10Z", "::group::Pre Execute")
        + event("2026-01-01T10:00:11Z", "=" * 10, logger="task.stdout")
        + event("2026-01-01T10:00:11Z", "Iceberg demo report: demo.events", logger="iceberg_demo.report")
        + event("2026-01-01T10:00:11Z", "not part of the report", logger="task.stdout")
        + event("2026-01-01T10:00:12Z", "Task failed", level="error")
    )
    progress.poll()

    assert out.getvalue().splitlines() == [
        f"[demo] {local('2026-01-01T10:00:01Z')}  ingest ...",
        f"         {local('2026-01-01T10:00:05Z')}  Spark started in 3.0 s",
        f"         {local('2026-01-01T10:00:06Z')}  write done",
        f"[demo] {local('2026-01-01T10:00:09Z')}  ingest done (8 s)",
        f"[demo] {local('2026-01-01T10:00:10Z')}  report ...",
        "=" * 10,
        "Iceberg demo report: demo.events",
        f"         {local('2026-01-01T10:00:12Z')}  error: Task failed",
    ]


def test_tasks_running_side_by_side_name_their_lines_and_old_runs_are_ignored(tmp_path: Path) -> None:
    run = tmp_path / "dag_id=demo" / "run_id=manual__2"
    old = tmp_path / "dag_id=demo" / "run_id=manual__1" / "task_id=read_a" / "attempt=1.log"
    old.parent.mkdir(parents=True)
    old.write_text(event("2025-01-01T10:00:00Z", "::group::Pre Execute"))
    since = old.stat().st_mtime + 1
    os.utime(old, (since - 100, since - 100))
    out = io.StringIO()
    progress = demo_progress.Progress(tmp_path, "demo", out, since=since)
    for task in ("read_a", "read_b"):
        path = run / f"task_id={task}" / "attempt=1.log"
        path.parent.mkdir(parents=True)
        path.write_text(
            event("2026-01-01T10:00:01Z", "::group::Pre Execute")
            + event("2026-01-01T10:00:02Z", "2026-01-01 10:00:02,000 WARNING spark_jobs.read: slow")
        )
        os.utime(path, (since + 1, since + 1))
    progress.poll()
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("  read_a ...") and lines[2].endswith("  read_b ...")
    assert lines[1].endswith("  warning: slow")  # one task running: no name
    assert lines[3].endswith("  [read_b] warning: slow")  # two at once: each line says whose
    assert not any("2025" in line or "manual__1" in line for line in lines)
