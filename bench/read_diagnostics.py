"""Diagnostics for the read benchmark's misses: cProfile of our in-process read, and where a Spark read's time goes.

    .venv/bin/python bench/read_diagnostics.py --profile equality_deletes:full [--cold]
    .venv/bin/python bench/read_diagnostics.py --spark-breakdown position_deletes:full [--runs 3]

The Spark breakdown times, on one query: ``load``, ``agg().collect()``, Spark's own job overhead, our in-process
read, the executor tasks' Python work run in-process, and the same number of rows produced without our engine by a
trivial Python data source and by ``mapInArrow`` (what the Spark route costs per row by itself).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_env import (
    CATALOG_NAME,
    DEFAULT_DATA_DIR,
    TABLES,
    Query,
    TablesDescription,
    benchmark_queries,
    configure_catalog,
)
from readers import clear_engine_caches, run_ours, spark_session


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
    from spark_jobs.engine.read.task_scan import read_task
    from spark_jobs.engine.shared.metrics import ScanMetrics
    from spark_jobs.spark.types import conform_batch, spark_arrow_schema_of

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

    from spark_jobs.engine.read.session import open_read_session
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
    """Command-line options: one of --profile and --spark-breakdown."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--profile", metavar="KIND:QUERY", help="cProfile our in-process read of one query")
    action.add_argument("--spark-breakdown", metavar="KIND:QUERY", help="split one Spark read into phases")
    parser.add_argument("--cold", action="store_true", help="with --profile: empty the engine's caches each run")
    parser.add_argument("--runs", type=int, default=3, help="with --spark-breakdown: timed runs (medians)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run the requested diagnostic on the generated tables."""
    args = parse_args(argv)
    data_dir: Path = args.data_dir.resolve()
    configure_catalog(data_dir)  # before any SparkSession: Spark's Python workers inherit the environment
    description = TablesDescription.load(data_dir)
    queries = benchmark_queries(description)
    if args.profile:
        profile(args.profile, queries, cold=args.cold)
    else:
        spark_breakdown(args.spark_breakdown, description, queries, args.runs)


if __name__ == "__main__":
    main()
