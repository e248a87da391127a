"""Sort and z-order compaction against Iceberg Java's ``rewrite_data_files`` on the same table, in one run.

The data is the read benchmark's (``generate_read_tables.make_rows``: 5M rows of ``id, k, ts, category, qty, price,
amount, note``, same writer settings) but written unsorted on ``k``: the rows are shuffled before being split into 8
files, so every row group spans the whole range of ``k`` and no statistic can prune. Each contender gets its own
table over the same data files (``sort_ours``, ``sort_java``, ``zorder_ours``, ``zorder_java``; the tables carry the
read benchmark's sort order on ``k``), and:

1. Before: the 0.1% range query on ``k`` and a query filtering both ``k`` and ``price`` (3% of each range, about
   0.1% of the rows together) through our engine in-process (warm, median of 3): seconds and bytes read.
2. Sort compaction on ``k`` (the table's sort order), rewrite-all, target 32 MiB: ours on a local[2] Spark session
   in this process (``spark_compact.run_rewrite``; warm: the session has run a job first) against Java's
   ``CALL system.rewrite_data_files(strategy => 'sort')`` on Spark 3.5 local[2] in its own JVM, timed there
   (``tests/support/iceberg_java.py``). Z-order on ``(k, price)`` the same way
   (``sort_order => 'zorder(k, price)'``). Ours cold: one ``spark-submit compact.py`` of a fifth table copy.
3. After, on every rewritten table (ours and Java's, read by our engine): the same two queries, and the count and
   sum(price) of the whole table, which must equal the unsorted table's.

    .venv/bin/python bench/sort_benchmark.py --rows 5000000        # ~10 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_env import configure_catalog
from generate_read_tables import (
    K_SPAN_PER_ROW,
    ROW_GROUP_BYTES,
    iceberg_schema,
    make_rows,
    row_group_rows_for,
    write_data_files,
)

CATALOG = "sortbench"
NAMESPACE = "sortbench"
TABLES = ("unsorted", "sort_ours", "sort_java", "zorder_ours", "zorder_java", "sort_ours_cold")
TARGET_FILE_SIZE = 32 * 1024 * 1024
ZORDER = "zorder(k, price)"
PRICE_RANGE = (1.0, 1000.0)  # make_rows draws price cents in [100, 100000)
REPO_ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--data-dir", type=Path, default=REPO_ROOT / "bench" / "data" / "sort")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-java", action="store_true", help="only our engine (no Java environment needed)")
    parser.add_argument("--skip-cold", action="store_true", help="no spark-submit run")
    parser.add_argument("--results-name", default=f"sort_{datetime.now(UTC):%Y-%m-%d}")
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------------------------------------------
# Data


def generate(data_dir: Path, rows: int, seed: int) -> list[str]:
    """The read benchmark's rows, shuffled, in 8 files; one table per contender over the same files."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.io.pyarrow import parquet_file_to_data_file
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform

    rng = np.random.default_rng(seed)
    table = make_rows(rows, rng)
    table = table.take(rng.permutation(len(table)))  # unsorted on k
    row_group_rows = row_group_rows_for(table, ROW_GROUP_BYTES)
    uris = [f"file://{path}" for path in write_data_files(table, data_dir / "files", row_group_rows)]
    catalog = load_catalog(CATALOG)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    order = SortOrder(SortField(source_id=2, transform=IdentityTransform()))
    for name in TABLES:
        created = catalog.create_table(
            f"{NAMESPACE}.{name}",
            schema=iceberg_schema(),
            sort_order=order,
            properties={"format-version": "2", "write.target-file-size-bytes": str(TARGET_FILE_SIZE)},
        )
        data_files = [parquet_file_to_data_file(created.io, created.metadata, uri) for uri in uris]
        with created.transaction() as transaction, transaction.update_snapshot().fast_append() as append:
            for data_file in data_files:
                append.append_data_file(data_file)
    return uris


# ---------------------------------------------------------------------------------------------------------------
# Queries (our engine, in-process)


def queries(rows: int) -> dict[str, str]:
    """The 0.1% range on k, and about 0.1% of rows by 3% of k's range and 3% of price's."""
    span = K_SPAN_PER_ROW * rows
    low = int(span * 0.42)
    k_low, k_high = int(span * 0.61), int(span * 0.61) + int(span * 0.03)
    p_low = PRICE_RANGE[0] + (PRICE_RANGE[1] - PRICE_RANGE[0]) * 0.37
    p_high = p_low + (PRICE_RANGE[1] - PRICE_RANGE[0]) * 0.03
    return {
        "k_range_0.1%": f"k >= {low} and k < {low + int(span * 0.001)}",
        "k_and_price_3%x3%": f"k >= {k_low} and k < {k_high} and price >= {p_low:.2f} and price < {p_high:.2f}",
        "full": "",
    }


def run_query(identifier: str, row_filter: str, repeats: int = 3) -> dict[str, Any]:
    """Median seconds of a warm in-process read of ``sum(price)`` with the filter, bytes read, rows, sum."""
    from spark_jobs.engine.read.session import open_read_session

    times, result = [], {}
    for _ in range(repeats + 1):  # the first run warms caches and is not counted
        started = time.perf_counter()
        session = open_read_session(CATALOG, identifier, columns=["price"], row_filter=row_filter or None)
        data = session.to_arrow()
        elapsed = time.perf_counter() - started
        times.append(elapsed)
        prices = data.column("price").to_numpy()
        result = {
            "rows": data.num_rows,
            "sum_price": round(float(prices.sum()), 2),
            "bytes_read": session.metrics.bytes_read,
            "row_groups_read": session.metrics.row_groups_total
            - session.metrics.row_groups_pruned_by_statistics
            - session.metrics.row_groups_pruned_by_page_index
            - session.metrics.row_groups_pruned_by_range,
            "data_files": session.metrics.data_files_total - session.metrics.data_files_pruned,
        }
    return {**result, "seconds": round(statistics.median(times[1:]), 4)}


def query_all(identifier: str, rows: int) -> dict[str, Any]:
    return {name: run_query(identifier, text) for name, text in queries(rows).items()}


# ---------------------------------------------------------------------------------------------------------------
# Rewrites


def rewrite_ours(spark: Any, name: str, sort_order: str | None) -> dict[str, Any]:
    """Plan and rewrite on this process's Spark session; seconds from plan to commit."""
    from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
    from spark_jobs.engine.compaction.strategy import resolve_strategy
    from spark_jobs.engine.table.catalog import load_catalog, load_table
    from spark_jobs.spark.compact import run_rewrite

    started = time.perf_counter()
    table = load_table(load_catalog(CATALOG), f"{NAMESPACE}.{name}")
    strategy = resolve_strategy(table, "sort", sort_order)
    options = RewriteOptions.resolve(table.properties, rewrite_all=True)
    plan = plan_rewrite(table, table.current_snapshot(), options, strategy=strategy)
    outcome = run_rewrite(spark, table, plan)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 3),
        "phases": {key: round(value, 3) for key, value in outcome.seconds.items()},
        "output_files": sum(int(c.summary.get("added-data-files", 0)) for c in outcome.commits),
        "expected_output_files": sum(group.expected_output_files for group in plan.groups),
    }


def rewrite_ours_cold(data_dir: Path, name: str) -> dict[str, Any]:
    """One spark-submit of compact.py (JVM start, Spark session, plan, rewrite, commit): wall seconds."""
    spark_submit = Path(sys.executable).parent / "spark-submit"
    command = [
        str(spark_submit),
        *("--master", "local[2]", "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1"),
        str(REPO_ROOT / "spark_jobs" / "compact.py"),
        *("--catalog", CATALOG, "--table", f"{NAMESPACE}.{name}", "--strategy", "sort", "--rewrite-all"),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"spark-submit compact.py failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"seconds": round(seconds, 3), "job_seconds": result["seconds"], "output_files": result["data_files_added"]}


def rewrite_java(data_dir: Path, calls: dict[str, str]) -> dict[str, Any]:
    """Java's rewrite_data_files per table, timed around the CALL in Java's warm session.

    The procedure's table name is fully qualified: Spark reads a first part that names a catalog as the catalog,
    and the namespace here has the catalog's name.
    """
    from tests.support import java_env
    from tests.support.iceberg_java import IcebergJava

    env = java_env.ensure()
    results: dict[str, Any] = {}
    with IcebergJava(
        env,
        catalog=CATALOG,
        catalog_uri=f"sqlite:///{data_dir}/catalog.db",
        warehouse=f"file://{data_dir}/warehouse",
        log_path=data_dir / "java.log",
        driver_memory="4g",
        spark_conf={"spark.sql.shuffle.partitions": "2"},
    ) as java:
        java.sql(f"SELECT count(*) FROM {CATALOG}.{NAMESPACE}.unsorted WHERE k < 0")  # warm the session
        results["spark"] = java.spark_version
        for name, sort_order in calls.items():
            options = "map('rewrite-all', 'true')"
            started = time.perf_counter()
            rows = java.sql(
                f"CALL {CATALOG}.system.rewrite_data_files(table => '{CATALOG}.{NAMESPACE}.{name}', "
                f"strategy => 'sort', sort_order => '{sort_order}', options => {options})"
            )
            seconds = time.perf_counter() - started
            results[name] = {"seconds": round(seconds, 3), "result": rows[0] if rows else None}
    return results


# ---------------------------------------------------------------------------------------------------------------


def spark_session() -> Any:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("sort-benchmark")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    from spark_jobs.job_support import engine_on_executors

    engine_on_executors(session)
    session.range(1000).selectExpr("sum(id)").collect()  # warm the JVM and a Python worker
    return session


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"rows {report['rows']}, 8 files unsorted on k, target {TARGET_FILE_SIZE // 2**20} MiB, rewrite-all; "
        f"load before {report['load'][0]:.1f}, after {report['load'][1]:.1f}",
        "",
        "| rewrite | ours (s) | Java (s) | ours / Java | output files ours / Java |",
        "|---|---|---|---|---|",
    ]
    for kind in ("sort", "zorder"):
        ours = report["rewrites"].get(f"{kind}_ours", {})
        java = report["rewrites"].get(f"{kind}_java", {})
        ratio = f"{ours['seconds'] / java['seconds']:.2f}x" if ours and java else "-"
        java_files = (java.get("result") or [None, None])[1] if java else None
        lines.append(
            f"| {kind} | {ours.get('seconds', '-')} | {java.get('seconds', '-')} | {ratio} | "
            f"{ours.get('output_files', '-')} / {java_files if java_files is not None else '-'} |"
        )
    cold = report["rewrites"].get("sort_ours_cold")
    if cold:
        lines.append(f"| sort, ours cold (spark-submit) | {cold['seconds']} | | | {cold['output_files']} |")
    lines += ["", "| table | query | seconds | bytes read | row groups read | rows |", "|---|---|---|---|---|---|"]
    for table, answers in report["queries"].items():
        for query, answer in answers.items():
            if query == "full":
                continue
            lines.append(
                f"| {table} | {query} | {answer['seconds']} | {answer['bytes_read']} | {answer['row_groups_read']} | "
                f"{answer['rows']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    import os

    args = parse_args(argv)
    data_dir = args.data_dir.resolve()
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    configure_catalog(data_dir, CATALOG)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    generate(data_dir, args.rows, args.seed)
    print(f"generated in {time.perf_counter() - started:.1f}s", flush=True)
    report: dict[str, Any] = {"rows": args.rows, "rewrites": {}, "queries": {}}
    report["queries"]["unsorted"] = query_all(f"{NAMESPACE}.unsorted", args.rows)
    print("before:", json.dumps(report["queries"]["unsorted"]), flush=True)
    spark = spark_session()
    report["rewrites"]["sort_ours"] = rewrite_ours(spark, "sort_ours", None)
    report["rewrites"]["zorder_ours"] = rewrite_ours(spark, "zorder_ours", ZORDER)
    print("ours:", json.dumps(report["rewrites"]), flush=True)
    spark.stop()
    if not args.skip_cold:
        report["rewrites"]["sort_ours_cold"] = rewrite_ours_cold(data_dir, "sort_ours_cold")
    if not args.skip_java:
        java = rewrite_java(data_dir, {"sort_java": "k ASC NULLS FIRST", "zorder_java": ZORDER})
        report["java_spark"] = java.pop("spark")
        report["rewrites"].update(java)
        print("java:", json.dumps(java), flush=True)
    for name in ("sort_ours", "sort_java", "zorder_ours", "zorder_java"):
        if name in report["rewrites"]:
            report["queries"][name] = query_all(f"{NAMESPACE}.{name}", args.rows)
    full = report["queries"]["unsorted"]["full"]
    for name, answers in report["queries"].items():
        if (answers["full"]["rows"], answers["full"]["sum_price"]) != (full["rows"], full["sum_price"]):
            raise SystemExit(f"{name}: rows or sum(price) changed by the rewrite: {answers['full']} != {full}")
    report["load"] = (load_before, os.getloadavg()[0])
    results = REPO_ROOT / "bench" / "results"
    (results / f"{args.results_name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (results / f"{args.results_name}.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
