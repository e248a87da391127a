"""Upsert into a format v3 table (deletion vectors) against the same upsert into a v2 table (position deletes), then
the full-scan read cost of each, in the same run.

1. Tables: per round, two fresh tables in a SQLite catalog under ``--data-dir``/v3-upsert, ``upsert_v2`` (format v2)
   and ``upsert_v3`` (format v3, row lineage), each holding the read benchmark's eight data files
   (``generate_read_tables.py``, table ``read_no_deletes``) by reference: one append commit of their manifest
   entries through our committer, no data copied.
2. Batch: ``--keys`` existing ids (default 60,000) drawn at random (``--seed``), their rows with ``price`` + 1 and a
   new ``note``, written once as one Parquet source file.
3. Per round, in alternating order, the ingest job's engine (``spark_ingest.ingest``, mode upsert, key ``id``, on a
   ``local[2]`` session warmed by one small upsert) upserts the batch into each table. Reported: seconds (wall, and
   the job's own phases), bytes written (the distinct files the snapshot added: data files, and position delete
   files or Puffin files), delete files or deletion vectors added.
4. Then each table's full scan with our reader (in-process, ``price`` only: count and sum; one warm-up, median of
   ``--reads``); both answers must equal the oracle (count unchanged, sum = base sum + keys).
Ratios (v3 over v2) are medians of per-round ratios, so both sides saw the same machine load. Results go to
``bench/results/v3_upsert_<date>.json`` and a Markdown table next to it.

    .venv/bin/python bench/generate_read_tables.py --rows 5000000     # once
    .venv/bin/python bench/v3_upsert_benchmark.py [--keys 60000] [--rounds 3] [--reads 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))
from bench_env import DEFAULT_DATA_DIR, TABLES, configure_catalog, local_path  # noqa: E402
from run_info import RunStart  # noqa: E402

CATALOG_NAME = "benchv3"
NAMESPACE = "bench"
FORMATS = (2, 3)


def base_data_files(data_dir: Path) -> tuple[Any, list]:
    """The read benchmark's no-deletes table and its live data files (pyiceberg DataFile records)."""
    from spark_jobs.engine.table.catalog import load_catalog
    from spark_jobs.engine.table.manifest_entries import read_live_entries

    configure_catalog(data_dir)
    table = load_catalog("bench").load_table(TABLES["no_deletes"])
    files = [
        entry.data_file
        for manifest in table.current_snapshot().manifests(table.io)
        for entry in read_live_entries(manifest, table.io)
    ]
    return table, files


def fresh_table(catalog: Any, name: str, schema: Any, files: list, format_version: int) -> Any:
    """A new table of ``format_version`` whose one snapshot appends ``files`` (shared, never copied)."""
    from pyiceberg.table.snapshots import Operation

    from spark_jobs.engine.commit.committer import commit_change
    from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes
    from spark_jobs.engine.commit.snapshot_change import SnapshotChange

    allow_v3_metadata_writes()
    identifier = f"{NAMESPACE}.{name}"
    if catalog.table_exists(identifier):
        catalog.drop_table(identifier)  # a SQL catalog drops only its row; the shared files stay
    table = catalog.create_table(identifier, schema, properties={"format-version": str(format_version)})
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=list(files)))
    return table


def make_batch(files: list, keys: int, seed: int, out: Path) -> tuple[Path, float]:
    """The upsert source (module doc, step 2) and the sum of the price changes it makes."""
    tables = [pq.read_table(local_path(f.file_path)) for f in files]
    ids = np.concatenate([t.column("id").to_numpy() for t in tables])
    chosen = pa.array(np.random.default_rng(seed).choice(ids, size=keys, replace=False))
    rows = pa.concat_tables([t.filter(pc.is_in(t.column("id"), value_set=chosen)) for t in tables])
    price = rows.column("price")
    rows = rows.set_column(rows.schema.get_field_index("price"), "price", pc.add(price, 1.0))
    notes = pa.array([f"upserted-{i}" for i in range(rows.num_rows)], rows.schema.field("note").type)
    rows = rows.set_column(rows.schema.get_field_index("note"), "note", notes)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, out)
    return out, float(rows.num_rows)


def added_bytes(table: Any) -> tuple[int, int, int, int]:
    """Bytes of the distinct files the current snapshot added (data, delete), its delete entries, distinct files."""
    from spark_jobs.engine.table.manifest_entries import read_live_entries

    snapshot = table.current_snapshot()
    sizes: dict[str, int] = {}
    delete_paths: set[str] = set()
    deletes = 0
    for manifest in snapshot.manifests(table.io):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        for entry in read_live_entries(manifest, table.io):
            if entry.snapshot_id == snapshot.snapshot_id:
                sizes[entry.data_file.file_path] = entry.data_file.file_size_in_bytes
                if entry.data_file.content != 0:
                    deletes += 1
                    delete_paths.add(entry.data_file.file_path)
    delete_bytes = sum(size for path, size in sizes.items() if path in delete_paths)
    return sum(sizes.values()), delete_bytes, deletes, len(sizes)


def full_scan(catalog_name: str, identifier: str) -> tuple[int, float]:
    """Count and sum(price) of the table through our reader (in-process)."""
    from spark_jobs.engine.read.session import open_read_session

    price = open_read_session(catalog_name, identifier, columns=["price"]).to_arrow().column("price")
    return len(price), float(pc.sum(price).as_py() or 0.0)


def timed(fn):
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--keys", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reads", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    run = RunStart()

    base, files = base_data_files(args.data_dir)
    schema = base.schema()
    work = args.data_dir.resolve() / "v3-upsert"
    shutil.rmtree(work, ignore_errors=True)
    (work / "warehouse").mkdir(parents=True)
    configure_catalog(work, CATALOG_NAME)
    from pyspark.sql import SparkSession

    from spark_jobs.engine.table.catalog import load_catalog
    from spark_jobs.spark.ingest import IngestOptions, ingest

    catalog = load_catalog(CATALOG_NAME)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    source, price_delta = make_batch(files, args.keys, args.seed, work / "source" / "batch.parquet")
    base_count, base_sum = full_scan("bench", TABLES["no_deletes"])
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("v3-upsert-benchmark")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "6g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    options = IngestOptions(mode="upsert", key=("id",))
    warm = fresh_table(catalog, "warm", schema, files[:1], 3)
    small = spark.read.parquet(str(source)).limit(100)
    ingest(spark, CATALOG_NAME, ".".join(warm.name()), small, options)

    rounds: list[dict[str, Any]] = []
    for number in range(args.rounds):
        order = FORMATS if number % 2 == 0 else tuple(reversed(FORMATS))
        measured: dict[int, dict[str, Any]] = {}
        for version in order:
            table = fresh_table(catalog, f"upsert_v{version}", schema, files, version)
            identifier = ".".join(table.name())
            started = time.perf_counter()
            result = ingest(spark, CATALOG_NAME, identifier, spark.read.parquet(str(source)), options)
            seconds = time.perf_counter() - started
            table.refresh()
            written, delete_bytes, delete_entries, distinct_files = added_bytes(table)
            full_scan(CATALOG_NAME, identifier)  # warm-up
            reads = []
            for _ in range(args.reads):
                (count, total), read_seconds = timed(lambda: full_scan(CATALOG_NAME, identifier))  # noqa: B023
                reads.append(read_seconds)
                if count != base_count or not math.isclose(total, base_sum + price_delta, rel_tol=1e-9):
                    raise SystemExit(
                        f"v{version}: full scan read {count} rows, sum {total}; expected "
                        f"{base_count}, {base_sum + price_delta}"
                    )
            measured[version] = {
                "upsert_s": round(seconds, 3),
                "job_phases_s": result["seconds"],
                "bytes_written": written,
                "delete_bytes_written": delete_bytes,
                "files_written": distinct_files,
                "delete_entries_added": delete_entries,
                "rows_deleted_by_key": result["rows_deleted_by_key"],
                "full_scan_median_s": round(statistics.median(reads), 3),
                "full_scan_runs_s": [round(r, 3) for r in reads],
            }
            print(f"round {number} v{version}: {measured[version]}", flush=True)
        measured_ratio = {
            "upsert_time_v3_over_v2": measured[3]["upsert_s"] / measured[2]["upsert_s"],
            "bytes_v3_over_v2": measured[3]["bytes_written"] / measured[2]["bytes_written"],
            "delete_bytes_v3_over_v2": measured[3]["delete_bytes_written"] / measured[2]["delete_bytes_written"],
            "full_scan_v3_over_v2": measured[3]["full_scan_median_s"] / measured[2]["full_scan_median_s"],
        }
        rounds.append({"order": list(order), "v2": measured[2], "v3": measured[3], "ratios": measured_ratio})
    spark.stop()

    ratios = {key: round(statistics.median(r["ratios"][key] for r in rounds), 3) for key in rounds[0]["ratios"]}
    report = {
        **run.header(args),
        "rows": base_count,
        "rounds": rounds,
        "median_ratios": ratios,
    }
    results = BENCH_DIR / "results"
    stamp = dt.date.today().isoformat()
    (results / f"v3_upsert_{stamp}.json").write_text(json.dumps(report, indent=1, default=str))
    lines = [
        "| table | upsert s (median) | bytes written | of which deletes | files written | delete entries "
        "| full scan s (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    for version in FORMATS:
        label = "v3 (deletion vectors)" if version == 3 else "v2 (position deletes)"
        lines.append(
            f"| {label} | {statistics.median(r[f'v{version}']['upsert_s'] for r in rounds):.2f} "
            f"| {statistics.median(r[f'v{version}']['bytes_written'] for r in rounds):,.0f} "
            f"| {statistics.median(r[f'v{version}']['delete_bytes_written'] for r in rounds):,.0f} "
            f"| {rounds[-1][f'v{version}']['files_written']} | {rounds[-1][f'v{version}']['delete_entries_added']} "
            f"| {statistics.median(r[f'v{version}']['full_scan_median_s'] for r in rounds):.3f} |"
        )
    lines.append("")
    lines.append(f"v3 / v2 (median of per-round ratios): {ratios}")
    (results / f"v3_upsert_{stamp}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
