"""What a person reads in a job's log: each phase as it starts and ends, then a short summary of the result.

The summary comes right before the result's JSON line:
1. a headline: the job (and its action), ``dry run``, the table, the snapshot it started from and the one it
   read or committed, and a read run in the driver without Spark;
2. every count of rows, files and bytes the result carries, at its top level or in its ``counters``;
3. what pruning skipped (the counters named ``*_pruned*``), or that it skipped nothing;
4. the scan's time per stage of the per-file read (the counters ``*_time_ns``, summed over files and tasks);
5. the seconds: in all, Spark's start apart, then each phase.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from spark_jobs.job_contract import SCAN_TIME_STAGES

log = logging.getLogger("spark_jobs")
SPARK_START_PHASE = "spark_start"


@contextmanager
def phase(name: str, seconds: dict[str, float] | None = None) -> Iterator[None]:
    """Log ``name`` as it starts and as it ends with its seconds (also added to ``seconds[name]`` when given)."""
    log.info("%s ...", name)
    started = time.perf_counter()
    yield
    elapsed = time.perf_counter() - started
    if seconds is not None:
        seconds[name] = round(seconds.get(name, 0.0) + elapsed, 3)
    log.info("%s done in %.1f s", name, elapsed)


def _words(key: str) -> str:
    return key.replace("_", " ")


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def size_text(size: float) -> str:
    """Bytes for a person: ``512 B``, ``1.5 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def _headline(result: Mapping[str, Any]) -> str:
    words = [str(result.get("job", "job"))]
    if result.get("action"):
        words.append(str(result["action"]))
    if result.get("dry_run"):
        words.append("(dry run)")
    if result.get("table"):
        words.append(f"of {result['table']}")
    starting, snapshot = result.get("starting_snapshot_id"), result.get("snapshot_id")
    if starting is not None and starting != snapshot:
        words.append(f"from snapshot {starting}")
    if snapshot is not None:
        words.append(f"at snapshot {snapshot}")
    if result.get("ran_in") == "driver":
        words.append("(read in the driver: no Spark session)")
    return " ".join(words)


def summary_lines(result: Mapping[str, Any]) -> list[str]:
    """The summary of a job's result, a few lines a person reads at a glance (see the module's steps)."""
    raw_counters = result.get("counters")
    counters: Mapping[str, Any] = raw_counters if isinstance(raw_counters, Mapping) else {}
    # A scan's counters that are zero (no deletes, say) say nothing; the result's own figures are always shown.
    figures = {**{k: v for k, v in counters.items() if "pruned" not in k and v}, **result}
    counts = {key: value for key, value in figures.items() if _is_count(value)}
    rows = [f"{_words(k)} {v:,}" for k, v in counts.items() if k.startswith("rows") or k.endswith("_rows")]
    files = [
        f"{_words(k)} {v:,}"
        for k, v in counts.items()
        if not k.startswith("rows")
        and ("files" in k or "file_groups" in k or k in ("commits", "tasks", "row_groups_total"))
    ]
    sizes = [f"{_words(k)} {size_text(v)}" for k, v in counts.items() if "bytes" in k]
    lines = [_headline(result)]
    lines += [f"{label}: {', '.join(items)}" for label, items in (("rows", rows), ("files", files), ("bytes", sizes))]
    lines = [line for line in lines if not line.endswith(": ")]
    if counters:
        pruned = [f"{_words(k)} {v:,}" for k, v in counters.items() if "pruned" in k and _is_count(v) and v]
        lines.append("pruning skipped: " + (", ".join(pruned) if pruned else "nothing"))
    stage_times = [
        f"{stage.replace('_', ' ')} {counters[f'{stage}_time_ns'] / 1e9:.2f}"
        for stage in SCAN_TIME_STAGES
        if _is_count(counters.get(f"{stage}_time_ns")) and counters[f"{stage}_time_ns"] > 0
    ]
    if stage_times:
        lines.append(f"scan seconds per stage (all files and tasks): {', '.join(stage_times)}")
    seconds = result.get("seconds")
    if isinstance(seconds, Mapping) and seconds:
        spent = {name: float(value) for name, value in seconds.items() if isinstance(value, int | float)}
        start = spent.pop(SPARK_START_PHASE, None)
        parts = ([f"Spark start {start:.1f}"] if start is not None else []) + [
            f"{_words(name)} {value:.1f}" for name, value in spent.items()
        ]
        total = sum(spent.values()) + (start or 0.0)
        lines.append(f"seconds: {total:.1f} in all ({', '.join(parts)})")
    return lines


def log_summary(result: Mapping[str, Any]) -> None:
    """Log the summary of ``result`` (before its JSON line is printed)."""
    for line in summary_lines(result):
        log.info("%s", line)
