"""The readers the read benchmark compares, and what it measures about them besides time.

- ``run_floor``: a plain pyarrow read of the data files (deletes ignored): the floor;
- ``run_ours``: our engine in-process (``open_read_session(...).to_arrow()``);
- ``run_spark``: our engine through Spark (``load`` + one aggregate);
- ``run_pyiceberg``: pyiceberg's own scan.

Each returns the query's answer (count and sum(price)) so every run can be checked against the generator's oracle.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from bench_env import CATALOG_NAME, Query, QueryExpectation


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


def answer_of(table: pa.Table) -> Answer:
    """count(*) and sum(price) of an Arrow result."""
    return Answer(count=table.num_rows, sum_price=pc.sum(table.column("price")).as_py() or 0.0)


def run_ours(table: Any, query: Query, columns: list[str] | None = None) -> tuple[Answer, dict[str, int]]:
    """Our engine in this process: plan, read to Arrow, then count and sum; also returns the scan counters."""
    from spark_jobs.engine.read.session import open_read_session

    session = open_read_session(CATALOG_NAME, table, columns=columns or ["price"], row_filter=query.row_filter)
    result = session.to_arrow()
    return answer_of(result), session.metrics.as_dict()


def clear_engine_caches() -> None:
    """Empty the engine's process caches (manifests, delete files, footers, remembered rejections): a first read."""
    from spark_jobs.engine.deletes.cache import delete_file_cache
    from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE
    from spark_jobs.engine.parquet.rejected_rows_cache import rejected_rows_cache
    from spark_jobs.engine.table.manifest_cache import manifest_cache

    manifest_cache().clear()
    delete_file_cache().clear()
    FOOTER_CACHE.clear()
    rejected_rows_cache().clear()


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


def run_spark_parquet_floor(spark: Any, paths: list[str], query: Query) -> Answer:
    """Spark's own JVM vectorized Parquet reader over the same data files, deletes ignored: the Spark route's floor.

    Measured in the same session and run as ours through Spark, it scales the Java reader's reference figures to
    the machine of the day (no reader of these tables through Spark can be faster than this plain read).
    """
    from pyspark.sql import functions as F  # noqa: N812

    frame = spark.read.parquet(*paths)
    if query.filter_column is not None:
        column = F.col(query.filter_column)
        condition = column == query.low if query.high is None else (column >= query.low) & (column < query.high)
        frame = frame.where(condition)
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
