"""Read benchmark: our engine (in-process and through Spark) vs pyiceberg vs a plain pyarrow read (the floor).

For each generated table (no deletes, position deletes, equality deletes) and each query (count(*) + sum(price)
over the whole table, over a 0.1% range of ``k``, and for one ``id``), it times:

- ``floor``: ``pq.read_table`` of the same data files (needed columns, with the filter), deletes ignored;
- ``ours``: ``open_read_session(...).to_arrow()`` in this process, then count and sum (planning included);
- ``ours_cold``: the same with the engine's process caches (footers, loaded delete files) emptied before each run;
- ``spark``: ``load(spark, ...)`` then ``agg(count, sum).collect()`` on a warm local[2] session;
- ``spark_floor``: Spark's own Parquet reader over the same data files (deletes ignored), the same query, in the
  same session: the Spark route's floor, which scales the Java reader's reference figures to the day's machine;
- ``pyiceberg``: ``table.scan(row_filter, selected_fields).to_arrow()`` ("unsupported" when it raises).

The machine is shared, so the three in-process readers run interleaved, round by round (``--runs`` rounds after
``--warmup``), and their ratio to the floor is the median of per-round ratios (wall time, and this process's CPU
time); Spark and pyiceberg get ``--slow-runs`` runs each and a ratio of medians. Every answer is checked against
the generator's oracle. Bytes: ``session.metrics.bytes_read`` for ours; for the floor, the compressed bytes of the
columns it reads in the row groups its statistics keep. Results go to ``bench/results/read_<date>.json`` and a
Markdown table next to it.

    .venv/bin/python bench/read_benchmark.py [--runs 9] [--skip-spark] [--tables position_deletes]

The readers are in ``readers.py``; profiling and the Spark breakdown are in ``read_diagnostics.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_env import (
    BENCH_DIR,
    CATALOG_NAME,
    DEFAULT_DATA_DIR,
    REPO_ROOT,
    TABLES,
    Query,
    QueryExpectation,
    TablesDescription,
    benchmark_queries,
    configure_catalog,
    local_path,
)
from readers import (
    Answer,
    bloom_filter_bytes,
    clear_engine_caches,
    floor_bytes,
    process_tree_cpu_seconds,
    run_floor,
    run_ours,
    run_pyiceberg,
    run_spark,
    run_spark_parquet_floor,
    spark_session,
)

# floor_with_key too on the equality table
METHODS = ("ours", "ours_cold", "spark", "spark_floor", "pyiceberg", "floor")
PRUNING_COUNTERS = (
    "data_files_pruned",
    "row_groups_total",
    "row_groups_pruned_by_statistics",
    "row_groups_pruned_by_bloom_filter",
    "row_groups_pruned_by_page_index",
    "pages_total",
    "pages_pruned_by_page_index",
    "rows_pruned_by_page_index",
    "rows_read",
    "bytes_read",
)


@dataclass
class Measurement:
    """Timings and bytes of one method on one query of one table."""

    status: str = "ok"  # ok | unsupported | wrong | skipped
    median_s: float | None = None
    min_s: float | None = None
    runs_s: list[float] = field(default_factory=list)
    cpu_median_s: float | None = None  # CPU time of the processes doing the work (all threads)
    cpu_runs_s: list[float] = field(default_factory=list)
    bytes_read: int | None = None
    count: int | None = None
    sum_price: float | None = None
    detail: str | None = None


def time_runs(
    run: Callable[[], Answer],
    warmup: int,
    runs: int,
    before_each: Callable[[], None] | None = None,
    cpu_clock: Callable[[], float] = time.process_time,
) -> tuple[list[float], list[float], Answer]:
    """Call ``run`` ``warmup`` times untimed, then ``runs`` times timed: (wall times, CPU times, last answer).

    ``before_each`` (untimed) runs before every call, e.g. to empty the engine's process caches; ``cpu_clock`` is
    the CPU time of whatever does the work (this process, or this process plus Spark's JVM and its workers).
    """
    answer = None
    for _ in range(warmup):
        if before_each:
            before_each()
        answer = run()
    timings, cpu_timings = [], []
    for _ in range(runs):
        if before_each:
            before_each()
        started, cpu_started = time.perf_counter(), cpu_clock()
        answer = run()
        timings.append(time.perf_counter() - started)
        cpu_timings.append(cpu_clock() - cpu_started)
    assert answer is not None
    return timings, cpu_timings, answer


def measure(
    run: Callable[[], Answer],
    expected: QueryExpectation,
    warmup: int,
    runs: int,
    *,
    unsupported: type | tuple = (),
    cpu_clock: Callable[[], float] = time.process_time,
) -> Measurement:
    """Time ``run``; mark the measurement wrong if its answer disagrees with the oracle."""
    try:
        timings, cpu_timings, answer = time_runs(run, warmup, runs, cpu_clock=cpu_clock)
    except unsupported as error:  # type: ignore[misc]
        return Measurement(status="unsupported", detail=f"{type(error).__name__}: {str(error)[:200]}")
    return measurement_of(timings, cpu_timings, answer, expected)


def measurement_of(
    timings: list[float], cpu_timings: list[float], answer: Answer, expected: QueryExpectation
) -> Measurement:
    """Medians and minimum of the timings; status ``wrong`` if the answer disagrees with the oracle."""
    result = Measurement(
        median_s=statistics.median(timings),
        min_s=min(timings),
        runs_s=[round(t, 4) for t in timings],
        cpu_median_s=statistics.median(cpu_timings),
        cpu_runs_s=[round(t, 4) for t in cpu_timings],
        count=answer.count,
        sum_price=answer.sum_price,
    )
    if not answer.matches(expected):
        result.status = "wrong"
        result.detail = f"expected count={expected.count} sum={expected.sum_price}"
    return result


@dataclass
class Contender:
    """One in-process reader in an interleaved measurement."""

    name: str
    run: Callable[[], Answer]
    expected: QueryExpectation
    before_each: Callable[[], None] | None = None


def measure_interleaved(contenders: list[Contender], warmup: int, runs: int) -> dict[str, Measurement]:
    """Round-robin timing: each round runs every contender once, so all see the same load (the machine is shared).

    Paired runs also let ``ratios`` take the median of per-round ratios, which is steadier than a ratio of medians.
    """
    timings: dict[str, list[float]] = {c.name: [] for c in contenders}
    cpu: dict[str, list[float]] = {c.name: [] for c in contenders}
    answers: dict[str, Answer] = {}
    for round_index in range(warmup + runs):
        for contender in contenders:
            if contender.before_each:
                contender.before_each()
            started, cpu_started = time.perf_counter(), time.process_time()
            answers[contender.name] = contender.run()
            if round_index >= warmup:
                timings[contender.name].append(time.perf_counter() - started)
                cpu[contender.name].append(time.process_time() - cpu_started)
    return {c.name: measurement_of(timings[c.name], cpu[c.name], answers[c.name], c.expected) for c in contenders}


# ---------------------------------------------------------------------------------------------------------------
# One table, one query


@dataclass
class QueryResult:
    """All methods on one query of one table, the pruning counters, and the ratios."""

    table: str
    query: str
    methods: dict[str, Measurement] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    full_scan_bytes: int | None = None  # our bytes (warm) for the same columns without the filter
    bloom_filter_bytes: int | None = None  # size of the filter column's bloom filters in all row groups
    ratios: dict[str, float | None] = field(default_factory=dict)


def benchmark_query(
    kind: str, table: Any, query: Query, *, description: TablesDescription, spark: Any, args: argparse.Namespace
) -> QueryResult:
    """Measure every method on one query of one table and compute the ratios."""
    result = QueryResult(table=kind, query=query.name)
    paths = [local_path(uri) for uri in description.data_files]
    expected = description.expected[kind][query.name]
    measure_in_process(result, table, query, paths=paths, description=description, args=args)
    if query.filter_column is not None:
        unfiltered = Query("unfiltered", None, None)
        run_ours(table, unfiltered, columns=query.columns)  # warm, like "ours": remembered equality deletes too
        result.full_scan_bytes = run_ours(table, unfiltered, columns=query.columns)[1]["bytes_read"]
        result.bloom_filter_bytes = bloom_filter_bytes(paths, query.filter_column)
    if args.skip_pyiceberg:
        result.methods["pyiceberg"] = Measurement(status="skipped")
    else:
        result.methods["pyiceberg"] = measure(
            lambda: run_pyiceberg(table, query), expected, args.warmup, args.slow_runs, unsupported=ValueError
        )
    if spark is None:
        result.methods["spark"] = result.methods["spark_floor"] = Measurement(status="skipped")
    else:
        result.methods["spark"] = measure_spark(spark, lambda: run_spark(spark, TABLES[kind], query), expected, args)
        floor_expected = description.expected["no_deletes"][query.name]
        result.methods["spark_floor"] = measure_spark(
            spark, lambda: run_spark_parquet_floor(spark, paths, query), floor_expected, args
        )
    result.ratios = ratios(result)
    return result


def measure_in_process(
    result: QueryResult,
    table: Any,
    query: Query,
    *,
    paths: list[str],
    description: TablesDescription,
    args: argparse.Namespace,
) -> None:
    """Floor, ours (warm) and ours (cold caches) in interleaved rounds, plus their bytes and our pruning counters.

    On the equality delete table a second floor also reads the delete key ``id``, as every reader of it must.
    """
    expected = description.expected[result.table][query.name]
    floor_expected = description.expected["no_deletes"][query.name]
    warm_counters: dict[str, int] = {}
    cold_counters: dict[str, int] = {}

    def ours_into(counters: dict[str, int]) -> Callable[[], Answer]:
        def ours() -> Answer:
            answer, metrics = run_ours(table, query)
            counters.update(metrics)
            return answer

        return ours

    contenders = [
        Contender("floor", lambda: run_floor(paths, query), floor_expected),
        Contender("ours", ours_into(warm_counters), expected),
        Contender("ours_cold", ours_into(cold_counters), expected, before_each=clear_engine_caches),
    ]
    if result.table == "equality_deletes":
        contenders.append(Contender("floor_with_key", lambda: run_floor(paths, query, ("id",)), floor_expected))
    result.methods.update(measure_interleaved(contenders, args.warmup, args.runs))
    result.methods["floor"].bytes_read = floor_bytes(paths, query)
    result.methods["ours"].bytes_read = warm_counters.get("bytes_read")
    result.methods["ours_cold"].bytes_read = cold_counters.get("bytes_read")
    result.counters = {name: warm_counters.get(name, 0) for name in PRUNING_COUNTERS}


def measure_spark(
    spark: Any, run: Callable[[], Answer], expected: QueryExpectation, args: argparse.Namespace
) -> Measurement:
    """A Spark query; CPU time is the driver's plus that of the JVM and the Python workers below it."""
    jvm_pid = spark.sparkContext._gateway.proc.pid
    return measure(
        run,
        expected,
        args.spark_warmup,
        args.slow_runs,
        cpu_clock=lambda: time.process_time() + process_tree_cpu_seconds(jvm_pid),
    )


def warm_up_spark(spark: Any, kinds: list[str], queries: list[Query], rounds: int, paths: list[str]) -> None:
    """Run every Spark query (and the Spark floor's) ``rounds`` times, untimed, before any is measured.

    The JVM compiles its hot paths over the first few queries of a session: without this, whichever table is
    measured first looks slower (no deletes: 0.86-1.0 s first, 0.67 s when measured after the others).
    """
    for _ in range(rounds):
        for query in queries:
            run_spark_parquet_floor(spark, paths, query)
            for kind in kinds:
                run_spark(spark, TABLES[kind], query)


def ratios(result: QueryResult) -> dict[str, float | None]:
    """Time of each method over the floor's, and pyiceberg's time over ours (how many times faster we are).

    Ours (warm and cold) ran in the same rounds as the floor: their ratio is the median of per-round ratios.
    Spark and pyiceberg ran after: theirs is a ratio of medians.
    """

    def median(method: str) -> float | None:
        measurement = result.methods.get(method)
        return measurement.median_s if measurement and measurement.status == "ok" else None

    floor, ours, cold, pyiceberg = median("floor"), median("ours"), median("ours_cold"), median("pyiceberg")
    out: dict[str, float | None] = {}
    for method in ("ours", "ours_cold"):
        paired = zip(result.methods[method].runs_s, result.methods["floor"].runs_s, strict=True)
        out[f"{method}_vs_floor"] = round(statistics.median(a / b for a, b in paired), 3)
        paired_cpu = zip(result.methods[method].cpu_runs_s, result.methods["floor"].cpu_runs_s, strict=True)
        cpu_ratios = [a / b for a, b in paired_cpu if b > 0]
        out[f"{method}_cpu_vs_floor"] = round(statistics.median(cpu_ratios), 3) if cpu_ratios else None
    if "floor_with_key" in result.methods:
        paired = zip(result.methods["ours"].runs_s, result.methods["floor_with_key"].runs_s, strict=True)
        out["ours_vs_floor_with_key"] = round(statistics.median(a / b for a, b in paired), 3)
    for method in ("spark", "pyiceberg"):
        value = median(method)
        out[f"{method}_vs_floor"] = round(value / floor, 3) if value and floor else None
    spark, spark_floor = median("spark"), median("spark_floor")
    out["spark_vs_spark_floor"] = round(spark / spark_floor, 3) if spark and spark_floor else None
    out["pyiceberg_vs_ours"] = round(pyiceberg / ours, 2) if pyiceberg and ours else None
    out["pyiceberg_vs_ours_cold"] = round(pyiceberg / cold, 2) if pyiceberg and cold else None
    if result.full_scan_bytes and result.methods["ours"].bytes_read is not None:
        out["bytes_pct_of_full_scan"] = round(100 * result.methods["ours"].bytes_read / result.full_scan_bytes, 2)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Reporting


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    import pyiceberg
    import pyspark

    memory = subprocess.run(["free", "-h"], capture_output=True, text=True, check=False).stdout.strip()
    return {
        "nproc": os.cpu_count(),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "free_h": memory,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "pyiceberg": pyiceberg.__version__,
        "pyspark": pyspark.__version__,
        "engine_commit": _git("rev-parse", "HEAD"),
        "engine_uncommitted_changes": _git("status", "--porcelain", "--", "spark_jobs").splitlines(),
    }


def _git(*args: str) -> str:
    """Output of a git command in the repository (the engine version the numbers belong to)."""
    return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False).stdout.strip()


def markdown_table(results: list[QueryResult]) -> str:
    """One row per table and query: medians, ratios to the floor, pyiceberg vs ours, bytes."""
    columns: list[tuple[str, Callable[[QueryResult], str]]] = [
        ("table", lambda r: r.table),
        ("query", lambda r: r.query),
        ("floor s", lambda r: _seconds(r.methods["floor"])),
        ("ours s", lambda r: _seconds(r.methods["ours"])),
        ("ours/floor", lambda r: _ratio(r.ratios["ours_vs_floor"])),
        ("ours CPU/floor CPU", lambda r: _ratio(r.ratios["ours_cpu_vs_floor"])),
        ("ours/floor with key", lambda r: _ratio(r.ratios.get("ours_vs_floor_with_key"))),
        ("ours cold s", lambda r: _seconds(r.methods["ours_cold"])),
        ("cold/floor", lambda r: _ratio(r.ratios["ours_cold_vs_floor"])),
        ("spark s", lambda r: _seconds(r.methods["spark"])),
        ("spark CPU s", lambda r: _cpu_seconds(r.methods["spark"])),
        ("spark floor s", lambda r: _seconds(r.methods["spark_floor"])),
        ("spark/spark floor", lambda r: _ratio(r.ratios.get("spark_vs_spark_floor"))),
        ("pyiceberg s", lambda r: _seconds(r.methods["pyiceberg"])),
        ("pyiceberg/ours", lambda r: _ratio(r.ratios["pyiceberg_vs_ours"])),
        ("pyiceberg/cold", lambda r: _ratio(r.ratios["pyiceberg_vs_ours_cold"])),
        ("ours MiB", lambda r: _mib(r.methods["ours"].bytes_read)),
        ("cold MiB", lambda r: _mib(r.methods["ours_cold"].bytes_read)),
        ("floor MiB", lambda r: _mib(r.methods["floor"].bytes_read)),
        ("ours % of full scan", lambda r: _pct(r.ratios.get("bytes_pct_of_full_scan"))),
    ]
    header = "| " + " | ".join(name for name, _ in columns) + " |\n"
    header += "|---|---|" + "---:|" * (len(columns) - 2) + "\n"
    rows = ["| " + " | ".join(cell(r) for _, cell in columns) + " |" for r in results]
    return header + "\n".join(rows) + "\n"


def pruning_table(results: list[QueryResult]) -> str:
    """The pruning counters of our engine for the range and point queries."""
    header = (
        "| table | query | row groups | pruned by stats | by bloom | by page index | pages pruned / total "
        "| rows read | bytes read | full-scan bytes | % | bloom filter bytes in files |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for r in results:
        if r.full_scan_bytes is None:
            continue
        c = r.counters
        rows.append(
            f"| {r.table} | {r.query} | {c['row_groups_total']} | {c['row_groups_pruned_by_statistics']} "
            f"| {c['row_groups_pruned_by_bloom_filter']} | {c['row_groups_pruned_by_page_index']} "
            f"| {c['pages_pruned_by_page_index']} / {c['pages_total']} | {c['rows_read']} | {c['bytes_read']} "
            f"| {r.full_scan_bytes} | {_pct(r.ratios.get('bytes_pct_of_full_scan'))} | {r.bloom_filter_bytes} |"
        )
    return header + "\n".join(rows) + "\n"


def _seconds(m: Measurement) -> str:
    if m.status == "ok":
        return f"{m.median_s:.3f}"
    return m.status


def _cpu_seconds(m: Measurement) -> str:
    if m.status == "ok" and m.cpu_median_s is not None:
        return f"{m.cpu_median_s:.2f}"
    return m.status


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}%"


def write_results(results: list[QueryResult], description: TablesDescription, args: argparse.Namespace) -> Path:
    """Write the JSON results and the Markdown tables to bench/results/; returns the JSON path."""
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    suffix = "" if description.rows == 5_000_000 else f"_{description.rows}rows"
    out_dir: Path = args.results_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"read_{today}{suffix}.json"
    payload = {
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rows": description.rows,
        "deleted_rows": description.deleted_rows,
        "row_group_rows": description.row_group_rows,
        "runs": args.runs,
        "warmup": args.warmup,
        "machine_at_start": args.machine_at_start,
        "machine_at_end": machine(),
        "results": [asdict(r) for r in results],
    }
    json_path.write_text(json.dumps(payload, indent=2) + "\n")
    markdown = f"{markdown_table(results)}\nPruning (our engine):\n\n{pruning_table(results)}"
    json_path.with_suffix(".md").write_text(markdown)
    print(markdown)
    return json_path


# ---------------------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--results-dir", type=Path, default=BENCH_DIR / "results")
    parser.add_argument("--runs", type=int, default=9, help="timed in-process rounds (floor, ours, ours cold)")
    parser.add_argument("--slow-runs", type=int, default=5, help="timed runs of pyiceberg and of Spark")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs before the timed ones")
    parser.add_argument("--spark-warmup", type=int, default=2, help="untimed Spark runs before each query's timed runs")
    parser.add_argument(
        "--spark-session-warmup", type=int, default=2, help="untimed rounds of every Spark query before any is timed"
    )
    parser.add_argument("--tables", default=",".join(TABLES), help="comma-separated table kinds")
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--skip-pyiceberg", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run every method on every query of every table, print and write the results."""
    args = parse_args(argv)
    data_dir: Path = args.data_dir.resolve()
    configure_catalog(data_dir)  # before any SparkSession: Spark's Python workers inherit the environment
    description = TablesDescription.load(data_dir)
    queries = benchmark_queries(description)
    from pyiceberg.catalog import load_catalog

    args.machine_at_start = machine()  # the machine is shared: the load average tells how noisy the run was
    catalog = load_catalog(CATALOG_NAME)
    spark = None if args.skip_spark else spark_session()
    if spark is not None:
        paths = [local_path(uri) for uri in description.data_files]
        warm_up_spark(spark, args.tables.split(","), queries, args.spark_session_warmup, paths)
    results = []
    for kind in args.tables.split(","):
        table = catalog.load_table(TABLES[kind])
        for query in queries:
            result = benchmark_query(kind, table, query, description=description, spark=spark, args=args)
            results.append(result)
            print(
                f"{kind:17s} {query.name:13s} "
                + " ".join(f"{name}={_seconds(result.methods[name])}" for name in METHODS)
                + f" ratios={result.ratios}",
                flush=True,
            )
    path = write_results(results, description, args)
    wrong = [f"{r.table}/{r.query}/{n}" for r in results for n, m in r.methods.items() if m.status == "wrong"]
    if spark is not None:
        spark.stop()
    print(f"results: {path}")
    if wrong:
        raise SystemExit(f"wrong answers: {', '.join(wrong)}")


if __name__ == "__main__":
    main()
