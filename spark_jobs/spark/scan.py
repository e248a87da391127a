"""Run a planned read on Spark as a DataFrame, with executor counters gathered back on the driver.

Two routes share ``read.task_scan.read_task``:
- ``dataframe_from_session`` / ``dataframe_from_tasks``: a DataFrame over planned scan tasks and their context: one
  Spark partition per scan task, read with ``mapInArrow``. ``read.load``, ``count`` and an overwrite's kept rows
  use it; a query through it costs Spark about a third less than through a Python data source (BENCHMARKS.md).
  ``counted_dataframe_from_session`` adds the executors' counters, summed by an accumulator (the read job reports
  them); only a caller that reads them asks for one, since every task's accumulator update is a round trip from
  the JVM to the driver's Python process before the job ends (~20 ms a query on a warm local session).
- ``dataframe_from_source``: the ``iceberg_mor`` Python data source (``spark.source``); ``read.load`` uses it when
  Spark's Python filter pushdown is on, so that Spark filters on the result are pushed into the engine. Spark 3.5
  has no Python data sources: there the flag is taken as off.

``read_parallelism`` is the number of slots the scan should fill: Spark's default parallelism (its task slots).
Iceberg Java also counts shuffle partitions (200 by default), which would cut a scan into 16 MiB tasks; each Python
task has a fixed cost of a tenth of a second or more, so one task per slot is what suits these routes.
"""

from __future__ import annotations

import importlib.util
import logging
import pickle
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.accumulators import Accumulator, AccumulatorParam
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import BinaryType, StructField, StructType

from spark_jobs.engine.planning.scan_context import ScanContext
from spark_jobs.engine.planning.scan_tasks import ScanTask
from spark_jobs.engine.read.task_scan import read_task
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.spark.types import conform_batch, geo_types_enabled, spark_arrow_schema_of, spark_schema_of

if TYPE_CHECKING:  # the driver's session module: executors unpickling a read function need not import it
    from spark_jobs.engine.read.session import ReadSession

log = logging.getLogger("spark_jobs.read")
TASK_ROWS_SCHEMA = StructType([StructField("task binary", BinaryType(), nullable=False)])  # a pickled task per row
# Work up to this size in all is closed over by a mapInArrow function rather than carried in its rows (task_rows).
CLOSED_OVER_PAYLOAD_BYTES = 1024 * 1024

FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
# Python data sources (``pyspark.sql.datasource``) came with Spark 4; on Spark 3.5 every read takes mapInArrow.
PYTHON_DATA_SOURCES = importlib.util.find_spec("pyspark.sql.datasource") is not None


def read_parallelism(spark: SparkSession) -> int:
    """The task slots a scan should fill: Spark's default parallelism (module doc)."""
    return max(1, int(spark.sparkContext.defaultParallelism))


def python_filter_pushdown_enabled(spark: SparkSession) -> bool:
    """Whether Spark pushes filters into Python data sources in this session (never on Spark 3.5, which has none)."""
    if not PYTHON_DATA_SOURCES:
        return False
    return str(spark.conf.get(FILTER_PUSHDOWN_CONF, "false")).lower() == "true"


class ScanMetricsParam(AccumulatorParam[dict[str, int]]):
    """Sums ScanMetrics counters across executor tasks (as plain dicts, cheap to ship)."""

    def zero(self, value: dict[str, int]) -> dict[str, int]:
        """An all-zero counter dict."""
        return dict.fromkeys(value, 0)

    def addInPlace(self, value1: dict[str, int], value2: dict[str, int]) -> dict[str, int]:  # noqa: N802
        """Add ``value2``'s counters into ``value1``."""
        for key, count in value2.items():
            value1[key] = value1.get(key, 0) + count
        return value1


def task_rows(spark: SparkSession, payloads: Sequence[bytes]) -> tuple[DataFrame, Sequence[bytes]]:
    """One row per Spark partition naming each task's pickled work, and what the ``mapInArrow`` function closes over.

    Up to ``CLOSED_OVER_PAYLOAD_BYTES`` of work in all, the rows are ``id`` 0 .. n - 1 made by the JVM
    (``spark.range``) and each task finds its work by that index in ``payloads``, which the function closes over:
    rows built from a Python collection cost a Python evaluation per task before the real one. Beyond that bound
    every task would unpickle all of the work with its function, so each row carries its own payload instead (built
    with an explicit schema: ``toDF`` with names only would run a Spark job to infer the type) and nothing is
    closed over. ``task_payloads`` reads either kind of row.
    """
    if sum(len(payload) for payload in payloads) <= CLOSED_OVER_PAYLOAD_BYTES:
        return spark.range(0, len(payloads), 1, numPartitions=len(payloads)), payloads
    rows = spark.sparkContext.parallelize([(payload,) for payload in payloads], numSlices=len(payloads))
    return spark.createDataFrame(rows, TASK_ROWS_SCHEMA, verifySchema=False), ()


def task_payloads(batches: Iterator[pa.RecordBatch], closed_over: Sequence[bytes]) -> Iterator[bytes]:
    """The pickled work of the ``task_rows`` a ``mapInArrow`` function receives (indexes into ``closed_over``)."""
    for batch in batches:
        column = batch.column(0)
        if pa.types.is_integer(column.type):
            yield from (closed_over[index] for index in column.to_pylist())
        else:
            yield from column.to_pylist()


def dataframe_from_session(spark: SparkSession, session: ReadSession) -> DataFrame:
    """A DataFrame reading ``session``'s tasks (no executor counters: see ``counted_dataframe_from_session``)."""
    return _session_frame(spark, session, counted=False)[0]


def counted_dataframe_from_session(spark: SparkSession, session: ReadSession) -> tuple[DataFrame, ReadCounters]:
    """A DataFrame reading ``session``'s tasks, and the counters of the reads that run on the executors."""
    return _session_frame(spark, session, counted=True)


class ReadCounters:
    """The executors' counters of a read, once its action ran: the engine tasks' (an accumulator) and, for the
    files Spark's own reader took, how many and the rows they gave."""

    def __init__(
        self,
        accumulator: Accumulator[dict[str, int]] | None,
        plain_files: int = 0,
        plain_rows: Observation | None = None,
    ) -> None:
        self.accumulator = accumulator
        self.plain_files = plain_files
        self.plain_rows = plain_rows

    @property
    def value(self) -> dict[str, int]:
        """Every counter, summed."""
        counters = dict(self.accumulator.value) if self.accumulator is not None else {}
        if self.plain_rows is not None:
            counters["data_files_read_by_spark"] = counters.get("data_files_read_by_spark", 0) + self.plain_files
            counters["rows_out"] = counters.get("rows_out", 0) + int(self.plain_rows.get.get("rows") or 0)
        return counters


def _session_frame(spark: SparkSession, session: ReadSession, *, counted: bool) -> tuple[DataFrame, ReadCounters]:
    """``session``'s rows: delete-free files through Spark's own Parquet reader where ``plain_parquet`` lets them,
    the rest through the engine (``mapInArrow``), as one DataFrame."""
    from spark_jobs.spark.plain_parquet import plain_frame, plain_route

    accumulator = spark.sparkContext.accumulator(ScanMetrics().as_dict(), ScanMetricsParam()) if counted else None
    route = plain_route(spark, session.tasks, session.context, session.table_schemas)
    if route is None:
        return _read_tasks(spark, session.tasks, session.context, accumulator), ReadCounters(accumulator)
    engine_files = len({data_file_slice.path for task in route.engine_tasks for data_file_slice in task.slices})
    log.info(
        "%d data files read by Spark's Parquet reader (no delete applies), %d by the engine's reader (%d tasks)",
        len(route.files),
        engine_files,
        len(route.engine_tasks),
    )
    plain = plain_frame(spark, route, session.context)
    observation = Observation() if counted else None
    if observation is not None:
        plain = plain.observe(observation, F.count(F.lit(1)).alias("rows"))
    counters = ReadCounters(accumulator, len(route.files), observation)
    if not route.engine_tasks:
        return plain, counters
    engine = _read_tasks(spark, route.engine_tasks, session.context, accumulator)
    return engine.union(plain), counters


def dataframe_from_tasks(spark: SparkSession, tasks: Sequence[ScanTask], context: ScanContext) -> DataFrame:
    """A DataFrame reading ``tasks`` with ``context`` (one Spark task each), without executor counters."""
    return _read_tasks(spark, tasks, context, None)


def _read_tasks(
    spark: SparkSession,
    tasks: Sequence[ScanTask],
    context: ScanContext,
    accumulator: Accumulator[dict[str, int]] | None,
) -> DataFrame:
    """``tasks`` read by ``mapInArrow``, one Spark task each; each adds its counters to ``accumulator`` if given."""
    spark_schema = spark_schema_of(context.output_schema)
    arrow_schema = spark_arrow_schema_of(context.output_schema)
    payloads = [pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL) for task in tasks]
    if not payloads:
        return spark.createDataFrame([], spark_schema)
    rows, closed_over = task_rows(spark, payloads)

    def read_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        metrics = ScanMetrics()
        for payload in task_payloads(batches, closed_over):
            for out in read_task(pickle.loads(payload), context, metrics):
                yield conform_batch(out, arrow_schema)
        if accumulator is not None:
            accumulator.add(metrics.as_dict())

    return rows.mapInArrow(read_partition, spark_schema)


def dataframe_from_source(spark: SparkSession, options: dict[str, Any], schema: StructType | None = None) -> DataFrame:
    """A DataFrame over the ``iceberg_mor`` data source; pushdown follows the session's Python pushdown flag.

    With ``schema`` (already known from planning on the driver) Spark skips asking the data source for it.
    """
    from spark_jobs.spark.source import SOURCE_NAME, register

    register(spark)
    pushdown = python_filter_pushdown_enabled(spark)
    reader = spark.read.format(SOURCE_NAME)
    if schema is not None:
        reader = reader.schema(schema)
    decided = {"filter_pushdown": str(pushdown).lower(), "geo_types": str(geo_types_enabled()).lower()}
    for key, value in {**options, **decided}.items():
        if value is not None:
            reader = reader.option(key, str(value))
    return reader.load()
