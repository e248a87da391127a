"""Ingest benchmark: our Spark append against pyiceberg's ``table.append()`` of the same rows, in the same run.

1. ``--rows`` generated rows of the read benchmark's shape (``generate_read_tables.make_rows``: id bigint, k bigint,
   ts timestamptz, category string, qty int, price double, amount decimal(18,4), note string) are written once as
   ``--source-files`` Parquet files under ``--data-dir``/ingest/source: the source our job reads.
2. Each round creates two fresh, identical, unpartitioned format v2 tables in a SQLite catalog under ``--data-dir``
   and times, in alternating order:
   - ``ours``: ``spark.ingest.ingest`` (the ingest job's engine entry, mode append) of ``spark.read.parquet(source)``
     on a ``local[2]`` session warmed by one small ingest; the time covers reading the source, writing on the
     executors and the commit;
   - ``pyiceberg``: ``table.append(rows)`` of the same rows already in memory as an Arrow table; the time to read
     the source files into that table (``pq.read_table``) is measured separately and reported beside it;
   - ``spark_floor`` (not an ingest): the same source read by Spark and handed to Python tasks as Arrow batches
     (``mapInArrow``) that only count them: what any Python writer behind Spark pays before writing a byte.
3. After every round both tables are read back with pyiceberg's ``scan().to_arrow()``: each must hold the source
   rows exactly (sorted by id, compared with the source), and the checksum of each (sha256 of the rows sorted by
   id, serialized as uncompressed Parquet with fixed settings) is reported.

4. The upsert case (``--upsert-rows``, 0 skips it): per round, two fresh tables holding the source rows (appended
   with pyiceberg, not timed) receive the same batch of ``--upsert-rows`` changed existing rows plus a fifth as many
   new ones, keyed on ``id``: ours with ``IngestOptions(mode="upsert", key=("id",))`` (merge-on-read: position
   delete files plus the batch as data files) against pyiceberg's ``table.upsert(batch, join_cols=["id"])``
   (copy-on-write: the data files holding matched rows rewritten). Both tables must then hold the same rows as the
   source with the batch applied.

Figures are medians over ``--rounds``; the ratio is the median of the per-round ratios of rows/s (ours over
pyiceberg), so both sides of a ratio saw the same machine load. Results go to ``bench/results/ingest_<date>.json``
and a Markdown table next to it.

    .venv/bin/python bench/ingest_benchmark.py [--rows 5000000] [--rounds 3] [--source-files 4]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))
from bench_env import DEFAULT_DATA_DIR, configure_catalog  # noqa: E402
from generate_read_tables import iceberg_schema, make_rows  # noqa: E402
from run_info import RunStart, rows_checksum  # noqa: E402

CATALOG_NAME = "benchingest"
NAMESPACE = "bench"


def write_source(rows: pa.Table, source_dir: Path, files: int) -> list[Path]:
    """``rows`` as ``files`` Parquet files of contiguous ranges (zstd), replacing an earlier source."""
    shutil.rmtree(source_dir, ignore_errors=True)
    source_dir.mkdir(parents=True)
    per_file = -(-rows.num_rows // files)
    paths = []
    for index in range(files):
        path = source_dir / f"part-{index:03d}.parquet"
        pq.write_table(rows.slice(index * per_file, per_file), path, compression="zstd")
        paths.append(path)
    return paths


def normalized(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` sorted by id, in ``schema`` (no field metadata, every column nullable)."""
    return rows.select(schema.names).cast(schema).sort_by("id").combine_chunks()


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` without field metadata, every field nullable."""
    return pa.schema([pa.field(field.name, field.type) for field in schema])


def run_ours(spark, source_dir: Path, identifier: str) -> dict[str, Any]:
    """Ingest the source files into ``identifier`` through the job's engine entry; seconds, files, bytes."""
    from spark_jobs.spark.ingest import IngestOptions, ingest

    started = time.perf_counter()
    frame = spark.read.parquet(str(source_dir))
    result = ingest(spark, CATALOG_NAME, identifier, frame, IngestOptions(mode="append"))
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 3),
        "phases": result["seconds"],
        "files": result["data_files_added"],
        "bytes": result["bytes_added"],
        "rows_added": result["rows_added"],
    }


def run_spark_floor(spark, source_dir: Path, expected_rows: int) -> dict[str, Any]:
    """The source read by Spark and handed to Python tasks that count the rows; seconds."""

    def count(batches):
        yield pa.RecordBatch.from_pydict({"rows": [sum(batch.num_rows for batch in batches)]})

    started = time.perf_counter()
    counted = sum(row["rows"] for row in spark.read.parquet(str(source_dir)).mapInArrow(count, "rows long").collect())
    seconds = time.perf_counter() - started
    if counted != expected_rows:
        raise AssertionError(f"spark floor counted {counted} rows, expected {expected_rows}")
    return {"seconds": round(seconds, 3), "rows_per_second": round(expected_rows / seconds)}


def run_pyiceberg(table, rows: pa.Table) -> dict[str, Any]:
    """pyiceberg's append of the in-memory rows; seconds, files, bytes from the snapshot summary."""
    started = time.perf_counter()
    table.append(rows)
    seconds = time.perf_counter() - started
    summary = table.current_snapshot().summary
    return {
        "seconds": round(seconds, 3),
        "files": int(summary["added-data-files"]),
        "bytes": int(summary["added-files-size"]),
        "rows_added": int(summary["added-records"]),
    }


def verify(catalog, identifier: str, expected: pa.Table) -> dict[str, Any]:
    """The table read back with pyiceberg must equal the source rows; its count and checksum."""
    schema = expected.schema
    read = normalized(catalog.load_table(identifier).scan().to_arrow(), schema)
    if not read.equals(expected):
        raise AssertionError(f"table {identifier} does not hold the source rows ({read.num_rows} rows read)")
    return {"count": read.num_rows, "checksum": rows_checksum(read)}


def one_round(spark, catalog, index: int, source_dir: Path, *, rows: pa.Table, expected: pa.Table) -> dict[str, Any]:
    """Both contenders into fresh tables (order alternating by round); figures and read-back checks."""
    result: dict[str, Any] = {"round": index}
    order = ("ours", "pyiceberg") if index % 2 == 0 else ("pyiceberg", "ours")
    for contender in order:
        identifier = f"{NAMESPACE}.ingest_{contender}_{index}"
        if contender == "ours":
            catalog.create_table(identifier, iceberg_schema(), properties={"format-version": "2"})
            figures = run_ours(spark, source_dir, identifier)
        else:
            table = catalog.create_table(identifier, iceberg_schema(), properties={"format-version": "2"})
            figures = run_pyiceberg(table, rows)
        figures["rows_per_second"] = round(rows.num_rows / figures["seconds"])
        figures.update(verify(catalog, identifier, expected))
        result[contender] = figures
        print(json.dumps({"round": index, contender: figures}), flush=True)
    result["spark_floor"] = run_spark_floor(spark, source_dir, rows.num_rows)
    print(json.dumps({"round": index, "spark_floor": result["spark_floor"]}), flush=True)
    if result["ours"]["checksum"] != result["pyiceberg"]["checksum"]:
        raise AssertionError(f"round {index}: the two tables' checksums differ")
    result["ours_over_pyiceberg"] = round(result["ours"]["rows_per_second"] / result["pyiceberg"]["rows_per_second"], 3)
    result["ours_over_spark_floor"] = round(result["ours"]["seconds"] / result["spark_floor"]["seconds"], 3)
    return result


def upsert_batch(rows: pa.Table, changed: int, seed: int) -> pa.Table:
    """``changed`` existing rows with a new price and note, plus ``changed // 5`` rows with new ids."""
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    existing = rows.take(pa.array(rng.choice(rows.num_rows, changed, replace=False)))
    existing = existing.set_column(
        existing.schema.get_field_index("price"), existing.schema.field("price"), pc.add(existing["price"], 1.0)
    )
    existing = existing.set_column(
        existing.schema.get_field_index("note"),
        existing.schema.field("note"),
        pa.array(["upserted"] * changed, pa.string()),
    )
    fresh = rows.slice(0, changed // 5)
    fresh = fresh.set_column(
        0, fresh.schema.field("id"), pc.add(fresh["id"], pa.scalar(rows.num_rows + 1_000_000_000, pa.int64()))
    )
    return pa.concat_tables([existing, fresh]).combine_chunks()


def upsert_expected(rows: pa.Table, batch: pa.Table, schema: pa.Schema) -> pa.Table:
    """The source rows with ``batch`` applied by id, normalized."""
    import pyarrow.compute as pc

    kept = rows.filter(pc.invert(pc.is_in(rows["id"], value_set=batch["id"])))
    return normalized(pa.concat_tables([kept, batch]), schema)


def upsert_round(spark, catalog, index: int, source_dir: Path, *, rows: pa.Table, batch: pa.Table, expected):
    """One upsert round: both contenders on fresh copies of the source table (order alternating by round)."""
    from spark_jobs.spark.ingest import IngestOptions, ingest

    result: dict[str, Any] = {"round": index}
    order = ("ours", "pyiceberg") if index % 2 == 0 else ("pyiceberg", "ours")
    for contender in order:
        identifier = f"{NAMESPACE}.upsert_{contender}_{index}"
        table = catalog.create_table(identifier, iceberg_schema(), properties={"format-version": "2"})
        table.append(rows)
        started = time.perf_counter()
        if contender == "ours":
            frame = spark.read.parquet(str(source_dir))
            outcome = ingest(spark, CATALOG_NAME, identifier, frame, IngestOptions(mode="upsert", key=("id",)))
            seconds = time.perf_counter() - started
            figures = {
                "phases": outcome["seconds"],
                "data_files_added": outcome["data_files_added"],
                "delete_files_written": outcome["delete_files_written"],
                "data_files_removed": outcome["data_files_removed"],
            }
        else:
            before = {snapshot.snapshot_id for snapshot in table.snapshots()}
            table.upsert(batch, join_cols=["id"])
            seconds = time.perf_counter() - started
            new = [snapshot.summary for snapshot in table.snapshots() if snapshot.snapshot_id not in before]
            figures = {
                key: sum(int(summary.get(name) or 0) for summary in new)
                for key, name in (
                    ("data_files_added", "added-data-files"),
                    ("delete_files_written", "added-delete-files"),
                    ("data_files_removed", "deleted-data-files"),
                )
            }
        figures["seconds"] = round(seconds, 3)
        figures["rows_per_second"] = round(batch.num_rows / seconds)
        figures.update(verify(catalog, identifier, expected))
        result[contender] = figures
        print(json.dumps({"upsert_round": index, contender: figures}), flush=True)
    result["ours_over_pyiceberg"] = round(result["pyiceberg"]["seconds"] / result["ours"]["seconds"], 3)
    return result


def summarize(rounds: list[dict[str, Any]], read_seconds: list[float], rows: int) -> dict[str, Any]:
    """Medians per contender and the median of the per-round ratios."""
    summary: dict[str, Any] = {}
    for contender in ("ours", "pyiceberg"):
        runs = [r[contender] for r in rounds]
        summary[contender] = {
            "seconds": round(statistics.median(run["seconds"] for run in runs), 3),
            "rows_per_second": round(statistics.median(run["rows_per_second"] for run in runs)),
            "files": statistics.median(run["files"] for run in runs),
            "bytes": statistics.median(run["bytes"] for run in runs),
        }
    summary["spark_floor"] = {
        "seconds": round(statistics.median(r["spark_floor"]["seconds"] for r in rounds), 3),
        "rows_per_second": round(statistics.median(r["spark_floor"]["rows_per_second"] for r in rounds)),
    }
    summary["ours_time_over_spark_floor_time"] = statistics.median(r["ours_over_spark_floor"] for r in rounds)
    source_read = statistics.median(read_seconds)
    with_read = [r["pyiceberg"]["seconds"] + source_read for r in rounds]
    summary["pyiceberg_with_source_read"] = {
        "seconds": round(statistics.median(with_read), 3),
        "rows_per_second": round(rows / statistics.median(with_read)),
    }
    summary["ours_over_pyiceberg"] = statistics.median(r["ours_over_pyiceberg"] for r in rounds)
    summary["ours_over_pyiceberg_with_source_read"] = round(
        statistics.median(
            (rows / r["ours"]["seconds"]) / (rows / (r["pyiceberg"]["seconds"] + source_read)) for r in rounds
        ),
        3,
    )
    return summary


def markdown(report: dict[str, Any]) -> str:
    """The per-round figures and the medians as Markdown."""
    lines = [
        "| round | ours s | ours rows/s | ours files | ours MB | pyiceberg s | pyiceberg rows/s | pyiceberg files | "
        "pyiceberg MB | ours/pyiceberg (rows/s) | spark floor s | ours/floor (time) | checksum |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["rounds"]:
        ours, theirs = r["ours"], r["pyiceberg"]
        lines.append(
            f"| {r['round']} | {ours['seconds']} | {ours['rows_per_second']:,} | {ours['files']} | "
            f"{ours['bytes'] / 1e6:.1f} | {theirs['seconds']} | {theirs['rows_per_second']:,} | {theirs['files']} | "
            f"{theirs['bytes'] / 1e6:.1f} | {r['ours_over_pyiceberg']}x | {r['spark_floor']['seconds']} | "
            f"{r['ours_over_spark_floor']}x | {ours['checksum']} |"
        )
    summary = report["summary"]
    lines.append(
        f"| median | {summary['ours']['seconds']} | {summary['ours']['rows_per_second']:,} | "
        f"{summary['ours']['files']} | {summary['ours']['bytes'] / 1e6:.1f} | {summary['pyiceberg']['seconds']} | "
        f"{summary['pyiceberg']['rows_per_second']:,} | {summary['pyiceberg']['files']} | "
        f"{summary['pyiceberg']['bytes'] / 1e6:.1f} | {summary['ours_over_pyiceberg']}x | "
        f"{summary['spark_floor']['seconds']} | {summary['ours_time_over_spark_floor_time']}x | |"
    )
    if report.get("upsert_rounds"):
        lines += [
            "",
            "| upsert round | ours s | ours files added / delete files | pyiceberg s | pyiceberg files added / removed "
            "| pyiceberg/ours (time) | checksum |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for r in report["upsert_rounds"]:
            ours, theirs = r["ours"], r["pyiceberg"]
            lines.append(
                f"| {r['round']} | {ours['seconds']} | {ours['data_files_added']} / {ours['delete_files_written']} | "
                f"{theirs['seconds']} | {theirs['data_files_added']} / {theirs['data_files_removed']} | "
                f"{r['ours_over_pyiceberg']}x | {ours['checksum']} |"
            )
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source-files", type=int, default=4)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--upsert-rows", type=int, default=50_000, help="changed rows per upsert; 0 skips the case")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Generate the source, warm Spark, run the rounds, write the results."""
    args = parse_args(argv)
    start = RunStart()
    data_dir = (args.data_dir / "ingest").resolve()
    shutil.rmtree(data_dir, ignore_errors=True)
    (data_dir / "warehouse").mkdir(parents=True)
    configure_catalog(data_dir, CATALOG_NAME)
    from pyiceberg.catalog import load_catalog
    from pyspark.sql import SparkSession

    rows = make_rows(args.rows, np.random.default_rng(args.seed))
    source_dir = data_dir / "source"
    write_source(rows, source_dir, args.source_files)
    expected = normalized(rows, plain_schema(rows.schema))
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    catalog = load_catalog(CATALOG_NAME)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    warmup_dir = data_dir / "warmup-source"
    write_source(rows.slice(0, 10_000), warmup_dir, 2)
    catalog.create_table(f"{NAMESPACE}.warmup", iceberg_schema(), properties={"format-version": "2"})
    run_ours(spark, warmup_dir, f"{NAMESPACE}.warmup")  # Python workers up, engine imported, before any timing
    rounds, read_seconds = [], []
    for index in range(args.rounds):
        started = time.perf_counter()
        in_memory = pq.read_table(source_dir)
        read_seconds.append(time.perf_counter() - started)
        del in_memory
        rounds.append(one_round(spark, catalog, index, source_dir, rows=rows, expected=expected))
    upserts = []
    if args.upsert_rows:
        batch = upsert_batch(rows, args.upsert_rows, args.seed)
        upsert_source = data_dir / "upsert-source"
        write_source(batch, upsert_source, 1)
        expected_after = upsert_expected(rows, batch, plain_schema(rows.schema))
        for index in range(args.rounds):
            upserts.append(
                upsert_round(spark, catalog, index, upsert_source, rows=rows, batch=batch, expected=expected_after)
            )
    spark.stop()
    report = {
        **start.header(args),
        "source": {
            "files": args.source_files,
            "bytes": sum(path.stat().st_size for path in source_dir.glob("*.parquet")),
            "read_seconds_median": round(statistics.median(read_seconds), 3),
        },
        "rounds": rounds,
        "summary": summarize(rounds, read_seconds, args.rows),
        "upsert_rounds": upserts,
        "upsert_summary": {
            "batch_rows": args.upsert_rows + args.upsert_rows // 5,
            **{
                f"{contender}_seconds": round(statistics.median(r[contender]["seconds"] for r in upserts), 3)
                for contender in ("ours", "pyiceberg")
            },
            "pyiceberg_time_over_ours": statistics.median(r["ours_over_pyiceberg"] for r in upserts),
        }
        if upserts
        else None,
    }
    results_dir = BENCH_DIR / "results"
    stem = f"ingest_{dt.date.today().isoformat()}"
    (results_dir / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    (results_dir / f"{stem}.md").write_text(markdown(report))
    print(markdown(report))
    print(json.dumps(report["summary"], indent=2))


if __name__ == "__main__":
    main()
