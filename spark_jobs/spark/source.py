"""The PySpark Python data source that runs the engine: planning on the driver, Arrow batches from executors.

1. ``IcebergMergeOnReadSource.schema`` opens a read session on the driver (table, snapshot, projection) and turns
   the output Arrow schema into Spark's; options are strings (``catalog``, ``table``, ``snapshot_id``, ``ref``,
   ``as_of``, ``columns``, ``filter``, ``split_size``).
2. ``reader`` picks the reader class by the ``filter_pushdown`` option: Spark raises when a reader defines
   ``pushFilters`` while ``spark.sql.python.filterPushdown.enabled`` is false, so ``load`` passes that flag in.
3. ``pushFilters`` accepts the Spark filters it can evaluate exactly with Iceberg semantics (see
   ``spark.filters``) and hands the rest back to Spark; accepted ones join the row filter and drive pruning.
4. ``partitions`` plans the scan (pushed filters included); each ``ScanTask`` becomes one input partition.
5. ``read`` runs a task with ``read.task_scan.read_task`` and yields Arrow record batches, no row-by-row conversion.

Spark 4 passes no column pruning to Python sources, so the projection is the ``columns`` option.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from spark_jobs.engine.planning.scan_context import ScanContext
from spark_jobs.engine.planning.scan_tasks import ScanTask
from spark_jobs.engine.read.session import ReadSession, open_read_session
from spark_jobs.engine.read.task_scan import read_task
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.spark.filters import spark_filter_to_iceberg
from spark_jobs.spark.types import conform_batch, spark_arrow_schema_of, spark_schema_of

SOURCE_NAME = "iceberg_mor"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReadOptions:
    """The data source options, parsed from Spark's string map."""

    catalog: str
    table: str
    snapshot_id: int | None = None
    ref: str | None = None
    as_of: str | None = None
    columns: tuple[str, ...] | None = None
    row_filter: str | None = None
    split_size: int | None = None
    parallelism: int | None = None
    filter_pushdown: bool = False
    geo_types: bool | None = None  # Spark's geo types or WKB binary, as the driver's session has them (types.py)

    @classmethod
    def from_spark(cls, options: dict[str, str]) -> ReadOptions:
        """Parse and check the options; a missing or malformed one is a ValueError naming it."""
        missing = [name for name in ("catalog", "table") if not options.get(name)]
        if missing:
            raise ValueError(f"{SOURCE_NAME} data source needs option(s) {', '.join(missing)}")

        def optional_int(name: str) -> int | None:
            raw = options.get(name)
            if raw in (None, ""):
                return None
            try:
                return int(raw)
            except ValueError:
                raise ValueError(f"{SOURCE_NAME} option {name} must be an integer, got {raw!r}") from None

        columns = options.get("columns")
        return cls(
            catalog=options["catalog"],
            table=options["table"],
            snapshot_id=optional_int("snapshot_id"),
            ref=options.get("ref") or None,
            as_of=options.get("as_of") or None,
            columns=tuple(c.strip() for c in columns.split(",") if c.strip()) if columns else None,
            row_filter=options.get("filter") or None,
            split_size=optional_int("split_size"),
            parallelism=optional_int("parallelism"),
            filter_pushdown=str(options.get("filter_pushdown", "false")).lower() == "true",
            geo_types=str(options["geo_types"]).lower() == "true" if options.get("geo_types") else None,
        )

    def open_session(self, extra_filter: BooleanExpression | None = None) -> ReadSession:
        """Plan the read these options describe, with ``extra_filter`` (pushed Spark filters) ANDed in."""
        row_filter: str | BooleanExpression | None = self.row_filter
        if extra_filter is not None and not isinstance(extra_filter, AlwaysTrue):
            if self.row_filter:
                from spark_jobs.engine.planning.filter_parsing import parse_row_filter

                row_filter = And(parse_row_filter(self.row_filter), extra_filter)
            else:
                row_filter = extra_filter
        return open_read_session(
            self.catalog,
            self.table,
            columns=list(self.columns) if self.columns else None,
            row_filter=row_filter,
            snapshot_id=self.snapshot_id,
            ref=self.ref,
            as_of=self.as_of,
            split_size=self.split_size,
            parallelism=self.parallelism,
        )


class ScanTaskPartition(InputPartition):
    """One scan task and the scan's context, as a Spark input partition (pickled to the executor).

    The context travels with each partition because Spark pickles the reader's read function before it calls
    ``partitions()``: state set there never reaches the executors.
    """

    def __init__(self, index: int, task: ScanTask, context: ScanContext) -> None:
        super().__init__(index)
        self.task = task
        self.context = context


class IcebergMergeOnReadSource(DataSource):
    """``spark.read.format("iceberg_mor")``: an Iceberg table read by the engine, deletes applied."""

    @classmethod
    def name(cls) -> str:
        """The format name to use with ``spark.read.format``."""
        return SOURCE_NAME

    def schema(self) -> StructType:
        """The Spark schema of the projected columns at the chosen snapshot."""
        options = ReadOptions.from_spark(dict(self.options))
        return spark_schema_of(options.open_session().output_schema, options.geo_types)

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader with ``pushFilters`` only when Spark's Python filter pushdown is enabled."""
        options = ReadOptions.from_spark(dict(self.options))
        reader_class = FilterPushdownReader if options.filter_pushdown else MergeOnReadReader
        return reader_class(options)


class MergeOnReadReader(DataSourceReader):
    """Plans on the driver and reads tasks on executors; filters come only from the ``filter`` option."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.pushed_filter: BooleanExpression = AlwaysTrue()

    def partitions(self) -> list[InputPartition]:
        """Plan the scan; one input partition per scan task."""
        session = self.options.open_session(self.pushed_filter)
        log.info("%s: %d partitions for %s", SOURCE_NAME, len(session.tasks), session.table_name)
        return [ScanTaskPartition(i, task, session.context) for i, task in enumerate(session.tasks)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Yield the Arrow batches of one task."""
        if not isinstance(partition, ScanTaskPartition):  # an empty scan: Spark adds InputPartition(None)
            return
        metrics = ScanMetrics()
        spark_arrow_schema = spark_arrow_schema_of(partition.context.output_schema, self.options.geo_types)
        for batch in read_task(partition.task, partition.context, metrics):
            yield conform_batch(batch, spark_arrow_schema)
        log.info("%s task %d: %s", SOURCE_NAME, partition.value, json.dumps(metrics.as_dict()))


class FilterPushdownReader(MergeOnReadReader):
    """The reader with ``pushFilters``: exact Iceberg filters are pushed, the rest stay with Spark."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:  # noqa: N802 - Spark's method name
        """Keep the filters the engine evaluates exactly; yield the others back to Spark.

        Deterministic and stateless across calls (Spark may replay it): each call starts from no pushed filter.
        """
        self.pushed_filter = AlwaysTrue()
        accepted: list[BooleanExpression] = []
        for spark_filter in filters:
            expression = spark_filter_to_iceberg(spark_filter)
            if expression is None:
                yield spark_filter
            else:
                accepted.append(expression)
        for expression in accepted:
            self.pushed_filter = (
                expression if isinstance(self.pushed_filter, AlwaysTrue) else And(self.pushed_filter, expression)
            )


def register(spark: SparkSession) -> None:
    """Register the data source with a SparkSession (idempotent)."""
    spark.dataSource.register(IcebergMergeOnReadSource)
