"""Compaction benchmark: our Spark rewrite against a naive single-process rewrite, on generated tables.

Cases (each generated fresh in ``--data-dir``, in two identical copies, one per contender):

- ``small_files``: ``--files`` data files of ``--rows-per-file`` rows in one partition (one append commit).
- ``deletes``: ``--delete-table-rows`` rows in ten files, then 2% of the rows deleted by position delete files and
  another 2% by equality delete files (committed with the project's writers and committer).

Contenders, timed end to end (planning, reading, writing, committing):

- ``ours``: ``plan_rewrite`` with Java's defaults (512 MiB target) and ``spark.compact.run_rewrite`` on a
  ``local[2]`` SparkSession warmed by one small rewrite: the files are read through the merge-on-read reader
  and one ``replace`` snapshot keeps the starting sequence number.
- ``naive``: read the whole table in this process (pyiceberg's ``scan().to_arrow()`` without equality deletes;
  our reader's ``to_arrow()`` with them, since pyiceberg cannot apply them) and pyiceberg's ``overwrite`` of the
  result (a copy-on-write rewrite of every file, no sequence number kept).

Each run checks that the rows (sorted by id) are unchanged and records their checksum (``run_info.rows_checksum``)
before and after each rewrite, with the load average at the start and end. Results go to
``bench/results/compaction_<date>.json`` (or ``--results-name``) and a Markdown table next to it.

    .venv/bin/python bench/compaction_benchmark.py [--files 2000] [--rows-per-file 100] [--delete-table-rows 5000000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))
from bench_env import configure_catalog as configure_bench_catalog  # noqa: E402
from run_info import RunStart, rows_checksum  # noqa: E402

CATALOG_NAME = "benchcompact"  # pyiceberg reads "_" in env names as "-"


def configure_catalog(data_dir: Path) -> None:
    """The ``benchcompact`` SQLite catalog under ``data_dir``, through pyiceberg's env configuration."""
    configure_bench_catalog(data_dir, CATALOG_NAME)


def rows(first_id: int, count: int, rng: np.random.Generator) -> pa.Table:
    """Generated rows: unique ids from ``first_id``, a category, a price and a note."""
    ids = np.arange(first_id, first_id + count, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "category": pa.array([f"c{i % 7}" for i in range(count)]),
            "price": rng.random(count) * 100,
            "note": pa.array([f"note-{i}" for i in ids]),
        }
    )


def create_table(catalog, name: str, batches: list[pa.Table]):
    """A format v2 table of one data file per batch, committed in one append with the project's committer."""
    from pyiceberg.table.snapshots import Operation

    from spark_jobs.engine.commit.committer import commit_change
    from spark_jobs.engine.commit.snapshot_change import SnapshotChange
    from spark_jobs.engine.write.file_entries import to_data_file
    from spark_jobs.engine.write.write_context import WriteContext, write_data

    table = catalog.create_table(name, schema=batches[0].schema, properties={"format-version": "2"})
    context = WriteContext.for_table(table)
    files = [
        to_data_file(item) for index, batch in enumerate(batches) for item in write_data(batch, context, f"f{index}")
    ]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    return table


def add_deletes(table, fraction: float, rng: np.random.Generator) -> int:
    """Delete ``fraction`` of the rows by position and another ``fraction`` by equality on id; rows deleted."""
    import pyarrow.compute as pc
    from pyiceberg.table.snapshots import Operation

    from spark_jobs.engine.commit.committer import commit_change
    from spark_jobs.engine.commit.snapshot_change import SnapshotChange
    from spark_jobs.engine.compaction.candidates import list_candidates
    from spark_jobs.engine.write.file_entries import to_data_file
    from spark_jobs.engine.write.write_context import (
        WriteContext,
        write_equality_delete_rows,
        write_position_delete_rows,
    )

    context = WriteContext.for_table(table)
    positions, keys, required = [], [], set()
    for index, candidate in enumerate(list_candidates(table, table.current_snapshot())):
        ids = pq.read_table(candidate.path.removeprefix("file://"), columns=["id"]).column("id")
        chosen = rng.permutation(len(ids))[: int(len(ids) * 2 * fraction)]
        by_position, by_key = np.sort(chosen[: len(chosen) // 2]), chosen[len(chosen) // 2 :]
        positions += write_position_delete_rows(
            pa.table({"file_path": [candidate.path] * len(by_position), "pos": by_position.astype(np.int64)}),
            context,
            candidate.file.spec_id,
            (),
            f"pos{index}",
        )
        required.add(candidate.path)
        keys.append(pc.take(ids, pa.array(by_key)))
    key_table = pa.table({"id": pa.chunked_array(keys).combine_chunks()})
    equality = write_equality_delete_rows(
        key_table, context, key_names=["id"], spec_id=0, partition_values=(), task_tag="eq"
    )
    commit_change(
        table,
        SnapshotChange(
            Operation.DELETE,
            added_delete_files=[to_data_file(item) for item in positions + equality],
            no_new_data_in_partitions=None,
            required_data_file_paths=required,
        ),
    )
    return sum(item.record_count for item in positions + equality)


def live_files(table) -> list[int]:
    """Sizes of the current snapshot's data files."""
    return (
        table.inspect.files()
        .filter(pa.compute.equal(pa.compute.field("content"), 0))
        .column("file_size_in_bytes")
        .to_pylist()
    )


def current_rows(table) -> pa.Table:
    """The table's rows through our merge-on-read reader, sorted by id."""
    from spark_jobs.engine.read.session import open_read_session

    return open_read_session(table.catalog, table.catalog.load_table(table.name())).to_arrow().sort_by("id")


def run_ours(spark, table) -> dict[str, Any]:
    """Plan with Java's defaults and rewrite on Spark; seconds per phase."""
    from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
    from spark_jobs.spark.compact import run_rewrite

    started = time.perf_counter()
    plan = plan_rewrite(table, table.current_snapshot(), RewriteOptions.resolve(table.properties))
    planned = time.perf_counter() - started
    outcome = run_rewrite(spark, table, plan)
    total = time.perf_counter() - started
    return {
        "seconds": round(total, 3),
        "phases": {"plan": round(planned, 3), **{k: round(v, 3) for k, v in outcome.seconds.items()}},
        "commits": len(outcome.commits),
        "delete_files_removed": outcome.removed_delete_files,
    }


def run_naive(table, has_equality_deletes: bool) -> dict[str, Any]:
    """Read everything in this process and overwrite the table with pyiceberg."""
    started = time.perf_counter()
    data = current_rows(table) if has_equality_deletes else table.scan().to_arrow()
    table.overwrite(data)
    return {"seconds": round(time.perf_counter() - started, 3), "commits": 1}


def benchmark_case(spark, catalog, name: str, batches: list[pa.Table], *, deletes: float, seed: int) -> dict[str, Any]:
    """Both contenders on two identical copies of one case; rows checked after each."""
    results: dict[str, Any] = {"case": name, "input_rows": sum(b.num_rows for b in batches)}
    for contender in ("ours", "naive"):
        table = create_table(catalog, f"bench.{name}_{contender}", batches)
        if deletes:
            results["deleted_rows"] = add_deletes(table, deletes, np.random.default_rng(seed))
        before = current_rows(table)
        results.setdefault("rows_before", before.num_rows)
        results.setdefault("checksum_before", rows_checksum(before))
        sizes = live_files(table)
        results.setdefault("input_files", len(sizes))
        results.setdefault("input_bytes", sum(sizes))
        outcome = run_ours(spark, table) if contender == "ours" else run_naive(table, bool(deletes))
        after = current_rows(table)
        if not after.equals(before):
            raise AssertionError(f"{name}/{contender}: rows changed by the rewrite")
        output = live_files(catalog.load_table(table.name()))
        results[contender] = {
            **outcome,
            "output_files": len(output),
            "output_bytes": sum(output),
            "rows": after.num_rows,
            "checksum": rows_checksum(after),
        }
        print(json.dumps({name: {contender: results[contender]}}), flush=True)
    results["naive_over_ours"] = round(results["naive"]["seconds"] / results["ours"]["seconds"], 2)
    return results


def markdown(report: dict[str, Any]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| case | input files | input MB | rows | ours s (plan/rewrite/commit) | ours files | naive s | naive files | "
        "naive/ours (time) | checksum before = ours = naive |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in report["cases"]:
        ours, naive, phases = case["ours"], case["naive"], case["ours"]["phases"]
        lines.append(
            f"| {case['case']} | {case['input_files']} | {case['input_bytes'] / 1e6:.1f} | {ours['rows']} | "
            f"{ours['seconds']} ({phases['plan']}/{phases['rewrite']}/{phases['commit']}) | {ours['output_files']} | "
            f"{naive['seconds']} | {naive['output_files']} | {case['naive_over_ours']}x | "
            f"{case['checksum_before']} = {ours['checksum']} = {naive['checksum']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Generate, run both contenders per case, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rows-per-file", type=int, default=100)
    parser.add_argument("--delete-table-rows", type=int, default=5_000_000, help="0 skips the deletes case")
    parser.add_argument("--data-dir", type=Path, help="default: a temp dir, removed afterwards")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--results-name", help="file name stem in bench/results (default: compaction_<date>)")
    args = parser.parse_args()
    start = RunStart()
    data_dir = (args.data_dir or Path(tempfile.mkdtemp(prefix="compaction-bench-"))).resolve()
    (data_dir / "warehouse").mkdir(parents=True, exist_ok=True)
    configure_catalog(data_dir)
    from pyiceberg.catalog import load_catalog
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    catalog = load_catalog(CATALOG_NAME)
    catalog.create_namespace_if_not_exists("bench")
    rng = np.random.default_rng(args.seed)
    warmup = create_table(catalog, "bench.warmup", [rows(i * 10, 10, rng) for i in range(5)])
    run_ours(spark, warmup)  # Python workers started and the engine imported before anything is timed
    cases = []
    small = [rows(i * args.rows_per_file, args.rows_per_file, rng) for i in range(args.files)]
    cases.append(benchmark_case(spark, catalog, "small_files", small, deletes=0.0, seed=args.seed))
    if args.delete_table_rows:
        per_file = args.delete_table_rows // 10
        big = [rows(i * per_file, per_file, rng) for i in range(10)]
        cases.append(benchmark_case(spark, catalog, "deletes_2pct_each", big, deletes=0.02, seed=args.seed))
    spark.stop()
    report = {
        **start.header(args),
        "cases": cases,
    }
    results_dir = BENCH_DIR / "results"
    stem = args.results_name or f"compaction_{dt.date.today().isoformat()}"
    (results_dir / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    (results_dir / f"{stem}.md").write_text(markdown(report))
    print(markdown(report))
    if args.data_dir is None:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
