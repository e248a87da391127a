"""Read benchmark: our engine (in-process and through Spark) vs pyiceberg vs a plain pyarrow read (the floor).

For each generated table (no deletes, position deletes, equality deletes) and each query (count(*) + sum(price)
over the whole table, over a 0.1% range of ``k``, and for one ``id``), it times:

- ``floor``: ``pq.read_table`` of the same data files (needed columns, with the filter), deletes ignored;
- ``ours``: ``open_read_session(...).to_arrow()`` in this process, then count and sum (planning included);
- ``ours_cold``: the same with the engine's process caches (footers, loaded delete files) emptied before each run;
- ``spark``: ``load(spark, ...)`` then ``agg(count, sum).collect()`` on a warm local[2] session;
- ``pyiceberg``: ``table.scan(row_filter, selected_fields).to_arrow()`` ("unsupported" when it raises).

The machine is shared, so the three in-process readers run interleaved, round by round (``--runs`` rounds after
``--warmup``), and their ratio to the floor is the median of per-round ratios (wall time, and this process's CPU
time); Spark and pyiceberg get ``--slow-runs`` runs each and a ratio of medians. Every answer is checked against
the generator's oracle. Bytes: ``session.metrics.bytes_read`` for ours; for the floor, the compressed bytes of the
columns it reads in the row groups its statistics keep. Results go to ``bench/results/read_<date>.json`` and a
Markdown table next to it.

    .venv/bin/python bench/read_benchmark.py [--runs 9] [--skip-spark] [--tables position_deletes]
    .venv/bin/python bench/read_benchmark.py --profile equality_deletes:full [--cold]
    .venv/bin/python bench/read_benchmark.py --spark-breakdown position_deletes:full
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import json
import math
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

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

METHODS = ("ours", "ours_cold", "spark", "pyiceberg", "floor")  # floor_with_key too on the equality table
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
class Answer:
    """What one run returned: row count and sum(price)."""

    count: int
    sum_price: float

    def matches(self, expected: QueryExpectation) -> bool:
        """Equal count, and sum(price) equal up to float summation order."""
        return self.count == expected.count and math.isclose(
            self.sum_price, expected.sum_price, rel_tol=1e-9, abs_tol=1e-6
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


def process_tree_cpu_seconds(root_pid: int) -> float:
    """CPU seconds used so far by ``root_pid`` and every process below it (including children they reaped).

    Spark's work happens in its JVM and the Python workers the JVM forks, outside this process's own clock.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    parent_of: dict[int, int] = {}
    cpu_of: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        pid = int(entry.name)
        parent_of[pid] = int(fields[1])
        # utime, stime, cutime, cstime
        cpu_of[pid] = sum(int(value) for value in fields[11:15]) / ticks
    total = 0.0
    for pid, cpu_seconds in cpu_of.items():
        ancestor = pid
        while ancestor not in (0, 1, root_pid):
            ancestor = parent_of.get(ancestor, 0)
        if ancestor == root_pid:
            total += cpu_seconds
    return total


def answer_of(table: pa.Table) -> Answer:
    """count(*) and sum(price) of an Arrow result."""
    return Answer(count=table.num_rows, sum_price=pc.sum(table.column("price")).as_py() or 0.0)


# ---------------------------------------------------------------------------------------------------------------
# The readers


def run_ours(table: Any, query: Query, columns: list[str] | None = None) -> tuple[Answer, dict[str, int]]:
    """Our engine in this process: plan, read to Arrow, then count and sum; also returns the scan counters."""
    from spark_jobs.engine.read_session import open_read_session

    session = open_read_session(CATALOG_NAME, table, columns=columns or ["price"], row_filter=query.row_filter)
    result = session.to_arrow()
    return answer_of(result), session.metrics.as_dict()


def clear_engine_caches() -> None:
    """Empty the engine's process-wide caches (loaded delete files, Parquet footers): a first read in a process."""
    from spark_jobs.engine.deletes.cache import delete_file_cache
    from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE

    delete_file_cache().clear()
    FOOTER_CACHE.clear()


def run_pyiceberg(table: Any, query: Query) -> Answer:
    """pyiceberg's own scan to Arrow (it plans and applies position deletes itself)."""
    from pyiceberg.expressions import AlwaysTrue

    scan = table.scan(row_filter=query.row_filter or AlwaysTrue(), selected_fields=("price",))
    return answer_of(scan.to_arrow())


def run_floor(paths: list[str], query: Query, extra_columns: tuple[str, ...] = ()) -> Answer:
    """A plain pyarrow read of the data files (no deletes): needed columns, the filter pushed to pyarrow.

    ``extra_columns`` are read too (and dropped): the equality delete key, which any reader applying those
    deletes has to decode, for a floor that does the same I/O and decoding.
    """
    columns = ["price", *extra_columns]
    return answer_of(pq.read_table(paths, columns=columns, filters=query.arrow_filter()))


def run_spark(spark: Any, identifier: str, query: Query) -> Answer:
    """Our engine through Spark: ``load`` then one aggregate collected to the driver."""
    from pyspark.sql import functions as F  # noqa: N812

    from spark_jobs.read import load

    frame = load(spark, CATALOG_NAME, identifier, columns=["price"], row_filter=query.row_filter)
    row = frame.agg(F.count(F.lit(1)).alias("n"), F.sum("price").alias("s")).collect()[0]
    return Answer(count=int(row["n"]), sum_price=float(row["s"] or 0.0))


def floor_bytes(paths: list[str], query: Query) -> int:
    """Compressed bytes of the floor's columns in the row groups pyarrow's min/max statistics keep."""
    total = 0
    for path in paths:
        metadata = pq.ParquetFile(path).metadata
        names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
        wanted = [names.index(name) for name in query.columns]
        for group_index in range(metadata.num_row_groups):
            group = metadata.row_group(group_index)
            if query.filter_column is not None and not _stats_overlap(
                group.column(names.index(query.filter_column)).statistics, query
            ):
                continue
            total += sum(group.column(i).total_compressed_size for i in wanted)
    return total


def bloom_filter_bytes(paths: list[str], column: str) -> int:
    """Total length of ``column``'s bloom filters (header and bitset) over every row group of the files."""
    total = 0
    for path in paths:
        metadata = pq.ParquetFile(path).metadata
        names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
        index = names.index(column)
        for group_index in range(metadata.num_row_groups):
            total += max(0, metadata.row_group(group_index).column(index).bloom_filter_length or 0)
    return total


def _stats_overlap(stats: Any, query: Query) -> bool:
    if stats is None or not stats.has_min_max:
        return True
    high = query.low if query.high is None else query.high - 1
    return stats.min <= high and stats.max >= query.low


def spark_session() -> Any:
    """A warm-able local[2] session bound to loopback (the catalog env is already set, workers inherit it)."""
    import logging

    from pyspark.sql import SparkSession

    logging.getLogger("py4j").setLevel(logging.WARNING)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("read-benchmark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------------------------------------------------------
# One table, one query


@dataclass
class QueryResult:
    """All methods on one query of one table, the pruning counters, and the ratios."""

    table: str
    query: str
    methods: dict[str, Measurement] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    full_scan_bytes: int | None = None  # our bytes for the same columns without the filter
    bloom_filter_bytes: int | None = None  # size of the filter column's bloom filters in all row groups
    ratios: dict[str, float | None] = field(default_factory=dict)


def benchmark_query(
    kind: str, table: Any, query: Query, *, description: TablesDescription, spark: Any, args: argparse.Namespace
) -> QueryResult:
    """Measure every method on one query of one table and compute the ratios."""
    expected = description.expected[kind][query.name]
    floor_expected = description.expected["no_deletes"][query.name]
    paths = [local_path(uri) for uri in description.data_files]
    result = QueryResult(table=kind, query=query.name)
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
    if kind == "equality_deletes":
        keys_floor = Contender("floor_with_key", lambda: run_floor(paths, query, ("id",)), floor_expected)
        contenders.append(keys_floor)
    result.methods.update(measure_interleaved(contenders, args.warmup, args.runs))
    result.methods["floor"].bytes_read = floor_bytes(paths, query)
    result.methods["ours"].bytes_read = warm_counters.get("bytes_read")
    result.methods["ours_cold"].bytes_read = cold_counters.get("bytes_read")
    result.counters = {name: warm_counters.get(name, 0) for name in PRUNING_COUNTERS}
    if query.filter_column is not None:
        unfiltered = Query("unfiltered", None, None)
        result.full_scan_bytes = run_ours(table, unfiltered, columns=query.columns)[1]["bytes_read"]
        result.bloom_filter_bytes = bloom_filter_bytes(paths, query.filter_column)
    if args.skip_pyiceberg:
        result.methods["pyiceberg"] = Measurement(status="skipped")
    else:
        result.methods["pyiceberg"] = measure(
            lambda: run_pyiceberg(table, query), expected, args.warmup, args.slow_runs, unsupported=ValueError
        )
    if spark is None:
        result.methods["spark"] = Measurement(status="skipped")
    else:
        identifier = TABLES[kind]
        jvm_pid = spark.sparkContext._gateway.proc.pid
        result.methods["spark"] = measure(
            lambda: run_spark(spark, identifier, query),
            expected,
            args.spark_warmup,
            args.slow_runs,
            cpu_clock=lambda: time.process_time() + process_tree_cpu_seconds(jvm_pid),
        )
    result.ratios = ratios(result)
    return result


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


def profile(spec: str, queries: list[Query], *, cold: bool) -> None:
    """cProfile our in-process read of ``kind:query`` (3 runs after a warm-up) and print what dominates.

    With ``cold``, the engine's process caches are emptied before every run (first read in a process).
    """
    from pyiceberg.catalog import load_catalog

    kind, query_name = spec.split(":")
    query = next(q for q in queries if q.name == query_name)
    table = load_catalog(CATALOG_NAME).load_table(TABLES[kind])
    run_ours(table, query)
    profiler = cProfile.Profile()
    for _ in range(3):
        if cold:
            clear_engine_caches()
        profiler.enable()
        run_ours(table, query)
        profiler.disable()
    stats = pstats.Stats(profiler).strip_dirs()
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(30)


def executor_work_seconds(session: Any) -> list[float]:
    """Seconds each scan task's Python work takes (``read_task`` + ``conform_batch``, what a Spark task runs)."""
    from spark_jobs.engine.metrics import ScanMetrics
    from spark_jobs.engine.scan import read_task
    from spark_jobs.engine.spark_source import conform_batch, spark_arrow_schema_of

    schema = spark_arrow_schema_of(session.output_schema)
    seconds = []
    for task in session.tasks:
        started = time.perf_counter()
        for batch in read_task(task, session.context, ScanMetrics()):
            conform_batch(batch, schema)
        seconds.append(time.perf_counter() - started)
    return seconds


def constant_arrow_source() -> type:
    """A Python data source yielding ``rows`` rows of one double column as Arrow batches from memory, no I/O.

    Timing it isolates what Spark's Python data source path costs per row (workers, Arrow to JVM, aggregation)
    from what our engine costs.
    """
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class ConstantArrowReader(DataSourceReader):
        def __init__(self, rows: int, partitions: int) -> None:
            self.rows, self.partition_count = rows, partitions

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(self.partition_count)]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            import numpy as np

            batch_rows = 65_536
            rows = self.rows // self.partition_count
            batch = pa.record_batch([pa.array(np.ones(batch_rows))], names=["price"])
            for start in range(0, rows, batch_rows):
                yield batch.slice(0, min(batch_rows, rows - start))

    class ConstantArrowSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "bench_constant_arrow"

        def schema(self) -> str:
            return "price double"

        def reader(self, schema: Any) -> DataSourceReader:
            return ConstantArrowReader(int(self.options["rows"]), int(self.options["partitions"]))

    return ConstantArrowSource


def constant_map_in_arrow(spark: Any, rows: int, partitions: int) -> Any:
    """The same constant rows as ``constant_arrow_source``, produced by ``mapInArrow`` (the read job's route)."""

    def produce(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        batch_rows = 65_536
        for _ in batches:
            pass
        share = rows // partitions
        batch = pa.record_batch([pa.array(np.ones(batch_rows))], names=["price"])
        for start in range(0, share, batch_rows):
            yield batch.slice(0, min(batch_rows, share - start))

    seeds = spark.range(partitions, numPartitions=partitions)
    return seeds.mapInArrow(produce, "price double")


def spark_breakdown(spec: str, description: TablesDescription, queries: list[Query], runs: int) -> None:
    """Where a Spark read's time goes: ``load``, ``collect``, Spark's own job overhead, and our in-process read.

    Medians of ``runs`` runs after two warm-ups, on one ``kind:query``; Spark's part is the JVM and Python-worker
    side we cannot cProfile from the driver, so it is isolated by difference against a trivial job.
    """
    from pyiceberg.catalog import load_catalog
    from pyspark.sql import functions as F  # noqa: N812

    from spark_jobs.engine.read_session import open_read_session
    from spark_jobs.read import load

    kind, query_name = spec.split(":")
    query = next(q for q in queries if q.name == query_name)
    identifier = TABLES[kind]
    table = load_catalog(CATALOG_NAME).load_table(identifier)
    spark = spark_session()
    spark.dataSource.register(constant_arrow_source())
    phases: dict[str, list[float]] = {}

    def timed(name: str, action: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        value = action()
        phases.setdefault(name, []).append(time.perf_counter() - started)
        return value

    def aggregate(frame: Any) -> Any:
        return frame.agg(F.count(F.lit(1)), F.sum("price")).collect()

    for attempt in range(runs + 2):
        frame = timed(
            "load (driver plan + source schema)",
            lambda: load(spark, CATALOG_NAME, identifier, columns=["price"], row_filter=query.row_filter),
        )
        timed("agg().collect() (source partitions + tasks)", partial(aggregate, frame))
        timed(
            "spark.range(5M) agg().collect() (Spark job overhead)",
            lambda: aggregate(spark.range(5_000_000).withColumnRenamed("id", "price")),
        )
        session = timed(
            "open_read_session (planning, in-process)",
            lambda: open_read_session(CATALOG_NAME, table, columns=["price"], row_filter=query.row_filter),
        )
        timed("to_arrow (read, in-process)", session.to_arrow)
        constant = (
            spark.read.format("bench_constant_arrow")
            .option("rows", str(session.metrics.rows_out or description.rows))
            .option("partitions", str(len(session.tasks)))
            .load()
        )
        timed(
            "same rows from a Python data source yielding Arrow from memory, agg().collect()",
            partial(aggregate, constant),
        )
        timed(
            "same rows through mapInArrow from memory, agg().collect()",
            partial(
                aggregate,
                constant_map_in_arrow(spark, session.metrics.rows_out or description.rows, len(session.tasks)),
            ),
        )
        task_seconds = executor_work_seconds(session)
        phases.setdefault("the executor tasks' Python work, in-process: slowest task", []).append(max(task_seconds))
        phases.setdefault("the executor tasks' Python work, in-process: all tasks", []).append(sum(task_seconds))
        if attempt < 2:
            phases = {}
    print(f"Spark breakdown of {kind}:{query_name}; scan tasks: {len(session.tasks)}; medians of {runs} runs")
    for name, values in phases.items():
        print(f"  {statistics.median(values):7.3f}s  {name}")
    spark.stop()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--results-dir", type=Path, default=BENCH_DIR / "results")
    parser.add_argument("--runs", type=int, default=9, help="timed in-process rounds (floor, ours, ours cold)")
    parser.add_argument("--slow-runs", type=int, default=5, help="timed runs of pyiceberg and of Spark")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs before the timed ones")
    parser.add_argument("--spark-warmup", type=int, default=2, help="untimed Spark runs (JIT, Python workers)")
    parser.add_argument("--tables", default=",".join(TABLES), help="comma-separated table kinds")
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--skip-pyiceberg", action="store_true")
    parser.add_argument("--profile", metavar="KIND:QUERY", help="only profile our in-process read of one query")
    parser.add_argument("--cold", action="store_true", help="with --profile: empty the engine's caches each run")
    parser.add_argument("--spark-breakdown", metavar="KIND:QUERY", help="only split one Spark read into phases")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run every method on every query of every table, print and write the results."""
    args = parse_args(argv)
    data_dir: Path = args.data_dir.resolve()
    configure_catalog(data_dir)  # before any SparkSession: Spark's Python workers inherit the environment
    description = TablesDescription.load(data_dir)
    queries = benchmark_queries(description)
    if args.profile:
        profile(args.profile, queries, cold=args.cold)
        return
    if args.spark_breakdown:
        spark_breakdown(args.spark_breakdown, description, queries, args.runs)
        return
    from pyiceberg.catalog import load_catalog

    args.machine_at_start = machine()  # the machine is shared: the load average tells how noisy the run was
    catalog = load_catalog(CATALOG_NAME)
    spark = None if args.skip_spark else spark_session()
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
