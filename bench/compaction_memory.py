"""Peak memory of a compaction rewrite task: rows streamed to the rolling writer against gathered first.

Builds the compaction benchmark's deletes case (``--rows`` rows in ten files, 2% deleted by position and 2% by
equality deletes) once under ``--data-dir``, then, in a fresh process per mode, plans the rewrite with Java's
defaults and runs its rewrite tasks in this process (as an executor would; nothing is committed, the written files
are deleted):

- ``stream``: ``rewrite_tasks.rewrite_task`` (batches from the reader go to the rolling writer as they come);
- ``materialize``: the task's batches gathered into one Arrow table and written with ``write_data`` (what the
  rewrite task did before it streamed).

Reported per mode: pyarrow's default memory pool peak (``max_memory``), the process's peak RSS, seconds, rows and
files written, and the checksum of the written rows; the whole run goes to
``bench/results/compaction_memory_<date>.json``.

    .venv/bin/python bench/compaction_memory.py [--rows 5000000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))
from compaction_benchmark import add_deletes, configure_catalog, create_table, rows  # noqa: E402
from run_info import RunStart, rows_checksum  # noqa: E402

TABLE = "bench.memory_deletes"
MODES = ("stream", "materialize")


def build(data_dir: Path, row_count: int, seed: int) -> None:
    """The deletes case table, created once."""
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("benchcompact")
    catalog.create_namespace_if_not_exists("bench")
    if catalog.table_exists(TABLE):
        catalog.drop_table(TABLE)
    rng = np.random.default_rng(seed)
    per_file = row_count // 10
    table = create_table(catalog, TABLE, [rows(i * per_file, per_file, rng) for i in range(10)])
    add_deletes(table, 0.02, np.random.default_rng(seed))


def measure(mode: str) -> dict:
    """Run every rewrite task of the plan in this process in ``mode``; peak memory and what was written."""
    from pyiceberg.catalog import load_catalog

    from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
    from spark_jobs.engine.compaction.rewrite_tasks import (
        plan_rewrite_tasks,
        read_task_batches,
        rewrite_contexts,
        rewrite_task,
    )
    from spark_jobs.engine.shared.metrics import ScanMetrics
    from spark_jobs.engine.write.job_files import delete_leftovers
    from spark_jobs.engine.write.write_context import write_data

    table = load_catalog("benchcompact").load_table(TABLE)
    plan = plan_rewrite(table, table.current_snapshot(), RewriteOptions.resolve(table.properties))
    tasks = plan_rewrite_tasks(table, plan.groups)
    contexts = rewrite_contexts(table, plan, tasks)
    pool = pa.default_memory_pool()
    baseline_pool, baseline_rss = pool.max_memory(), _rss_mib()
    started = time.perf_counter()
    written = []
    metrics = ScanMetrics()
    for task in tasks:
        if mode == "stream":
            written += rewrite_task(task, contexts, metrics)
        else:
            batches = list(read_task_batches(task, contexts.scan, metrics))
            gathered = pa.Table.from_batches(batches, schema=contexts.scan.output_schema)
            written += write_data(gathered, contexts.write, f"g{task.group_index}-t{task.task_index}-driver")
            del batches, gathered
    seconds = time.perf_counter() - started
    result = {
        "mode": mode,
        "tasks": len(tasks),
        "seconds": round(seconds, 2),
        "pool_peak_mib": round((pool.max_memory() or 0) / 2**20, 1),
        "pool_peak_before_mib": round((baseline_pool or 0) / 2**20, 1),
        "rss_peak_mib": _rss_mib(),
        "rss_peak_before_mib": baseline_rss,
        "files": len(written),
        "rows": sum(item.record_count for item in written),
        "row_groups": sum(pq.ParquetFile(item.file_path.removeprefix("file://")).num_row_groups for item in written),
    }
    data = pa.concat_tables(pq.read_table(item.file_path.removeprefix("file://")) for item in written)
    result["checksum"] = rows_checksum(data.sort_by("id").combine_chunks())
    delete_leftovers(contexts.write.table_location, contexts.write.write_id, set(), table.io)
    return result


def _rss_mib() -> float:
    """This process's peak resident set size so far, in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def main() -> None:
    """Build the table, then measure each mode in its own process (peaks are per process)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data" / "compaction-memory")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--mode", choices=MODES, help="measure one mode in this process (used by the main run)")
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    (data_dir / "warehouse").mkdir(parents=True, exist_ok=True)
    configure_catalog(data_dir)
    if args.mode:
        print(json.dumps(measure(args.mode)))
        return
    start = RunStart()
    build(data_dir, args.rows, args.seed)
    results = []
    for mode in MODES:
        command = [sys.executable, __file__, "--mode", mode, "--data-dir", str(data_dir)]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        results.append(json.loads(output.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    if results[0]["checksum"] != results[1]["checksum"] or results[0]["rows"] != results[1]["rows"]:
        raise AssertionError("streamed and materialized rewrites wrote different rows")
    report = {
        **start.header(args),
        "rows": args.rows,
        "modes": results,
    }
    path = BENCH_DIR / "results" / f"compaction_memory_{dt.date.today().isoformat()}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
