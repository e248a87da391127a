"""Spark's half of an ingest (``engine/jobs/ingest_job.py`` orchestrates it): the source's rows checked, written
and matched by key on Spark.

The rows are a DataFrame, or for an append or a dynamic overwrite of plain Parquet files a ``ParquetSource``
(``parquet_source_of``), whose files the writing tasks read with pyarrow through the executor seam (nulls in
required columns counted from the footers' statistics, or by the writers where the footers do not count them).
``SparkIngestRows`` is the engine's ``IngestRows`` on Spark:

1. ``check``: no null in a key or in a required field inside a struct; for upsert no duplicate key. With a key and
   at most ``SHIPPED_KEYS_MAX`` distinct keys, one job groups the batch by key and the driver checks the groups
   (nulls in required columns too) and keeps the distinct keys for the key scan (``engine.ingest.batch_keys``).
2. ``write``: data files, from the DataFrame (Spark's tasks, ``spark/write.py``) or straight from the Parquet
   source files; ``write_with_kept``: an overwrite by filter's new rows and the table's rows it keeps (read by the
   engine on the executors), in one union when their columns agree.
3. ``write_keyed``: an upsert's or delete's deletes, by the strategy the table picks (``spark/row_level.py``:
   position delete files, deletion vectors on v3, equality deletes by partition or where the keys were found),
   then an upsert's rows. On v3 with deletion vectors, a batch row that replaces a table row keeps that row's
   ``_row_id`` (read with the keys' positions) and leaves its ``_last_updated_sequence_number`` null, as Iceberg
   Java's MERGE does; a new key's row gets a new id.

``ingest`` and ``ingest_table`` run the engine's job on a Spark session's DataFrame (or ``ParquetSource``);
``open_source`` is the job's source: a ``ParquetSource`` where the mode and files allow it, else Spark's read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import DoubleType, FloatType, StructType
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import StructType as SparkStructType

from spark_jobs.engine.ingest.batch_keys import NULLS_PREFIX, ROWS_COLUMN, checked_batch_keys
from spark_jobs.engine.ingest.live_files import RowsToKeep, key_range_filter
from spark_jobs.engine.ingest.options import IngestOptions
from spark_jobs.engine.ingest.result import IngestResult
from spark_jobs.engine.jobs import ingest_job
from spark_jobs.engine.jobs.ingest_job import KeyedWrite, KeyedWriteResult
from spark_jobs.engine.planning.scan_context import ROW_ID, ROW_LINEAGE, with_row_lineage
from spark_jobs.engine.shared.errors import RequiredColumnNullsError, UserInputError
from spark_jobs.engine.shared.storage import file_io_properties
from spark_jobs.engine.table.catalog import load_catalog
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.parquet_source import ParquetSource, plan_parquet_source, source_summary
from spark_jobs.engine.write.write_context import WriteContext
from spark_jobs.spark.ingest_source import SourceRead, SourceRequest, read_source
from spark_jobs.spark.row_level import KeyMatch, choose_strategy
from spark_jobs.spark.scan import dataframe_from_tasks
from spark_jobs.spark.text_sources import table_types_of
from spark_jobs.spark.types import arrow_schema_of, spark_types_of
from spark_jobs.spark.write import (
    conform_dataframe,
    write_dataframe,
    write_parquet_source,
)

__all__ = ["IngestOptions", "IngestResult", "SparkIngestRows", "ingest", "ingest_table"]
log = logging.getLogger(__name__)
SHIPPED_KEYS_MAX = 1_000_000  # distinct batch keys collected to the driver and shipped to the key scan, at most


def ingest(
    spark: SparkSession,
    catalog_name: str,
    identifier: str,
    source: DataFrame | ParquetSource,
    options: IngestOptions,
) -> dict[str, Any]:
    """Run one ingest on ``spark`` and return the job's result line (``ingest_table``'s, as JSON)."""
    return ingest_table(spark, catalog_name, identifier, source, options).as_json()


def ingest_table(
    spark: SparkSession,
    catalog_name: str,
    identifier: str,
    source: DataFrame | ParquetSource,
    options: IngestOptions,
) -> IngestResult:
    """Run one ingest on ``spark`` (``engine/jobs/ingest_job.py``) and return its result."""
    return ingest_job.ingest_table(catalog_name, identifier, SparkIngestRows(spark, source), options)


class SparkIngestRows:
    """The engine's ``IngestRows`` on Spark (module doc): a DataFrame, or a ``ParquetSource`` its tasks read."""

    def __init__(self, spark: SparkSession, source: DataFrame | ParquetSource) -> None:
        self.spark = spark
        self.source = source

    @property
    def arrow_schema(self) -> pa.Schema:
        """The source's columns as an Arrow schema."""
        if isinstance(self.source, ParquetSource):
            return self.source.arrow_schema
        return arrow_schema_of(self.source.schema)

    @property
    def reads_files_directly(self) -> bool:
        """True for a ``ParquetSource``: the writing tasks read its files."""
        return isinstance(self.source, ParquetSource)

    def check(self, table: Table, key: Sequence[str], *, unique: bool, required: bool) -> pa.Table | None:
        """The row checks (module doc, step 1): on Spark, or from the footers of a Parquet source; the batch's
        distinct keys when one Spark job checked and collected them (``_grouped_batch_keys``)."""
        table_name = ".".join(table.name())
        required_names = [f.name for f in table.schema().fields if f.required]
        if isinstance(self.source, ParquetSource):
            counts = self.source.null_counts
            with_nulls = {name: counts.get(name) or 0 for name in required_names if counts.get(name)}
            if with_nulls:
                raise RequiredColumnNullsError(with_nulls, table=table_name)
            return None
        frame = self.source
        struct_fields = _has_required_struct_fields(table.schema())
        if key and not struct_fields:
            keys = _grouped_batch_keys(table, frame, list(key), unique, required_names if required else [])
            if keys is not None:
                return keys
        if required and struct_fields:
            # Top-level required columns are checked by the writers; with a required field inside a struct, one job
            # here checks them all (a writer cannot tell a missing struct from one whose required field is null).
            _check_required_columns(table_name, frame, table.schema())
        if key:
            _check_keys(table_name, frame, list(key), unique=unique)
        return None

    def conformed(self, schema: Schema) -> SparkIngestRows:
        """The DataFrame cast and ordered as ``schema``; a ``ParquetSource`` as it is (its writer conforms batches)."""
        if isinstance(self.source, ParquetSource):
            return self
        return SparkIngestRows(self.spark, conform_dataframe(self.source, schema, spark_types_of(schema)))

    def write(self, context: WriteContext) -> list[WrittenFile]:
        """The rows as data files, from the DataFrame or straight from the Parquet source files."""
        if isinstance(self.source, ParquetSource):
            return write_parquet_source(self.spark, self.source, context)
        return write_dataframe(self.source, context)

    def write_with_kept(self, keep: RowsToKeep, context: WriteContext, written: list[WrittenFile]) -> None:
        """The new rows and the kept ones as data files, appended to ``written`` as each write ends."""
        kept_rows = dataframe_from_tasks(self.spark, keep.tasks, keep.context)
        kept_rows = conform_dataframe(kept_rows, context.schema, spark_types_of(context.schema))
        new_rows = self._frame()
        if _same_columns(new_rows, kept_rows):
            written += write_dataframe(new_rows.unionByName(kept_rows, allowMissingColumns=True), context)
        else:  # the new rows lack columns the writers fill with defaults, or hold WKB for geo columns: apart
            written += write_dataframe(new_rows, context)
            written += write_dataframe(kept_rows, context)

    def key_range(self, key_schema: Schema, key_columns: Sequence[str]) -> BooleanExpression:
        """The planner's filter for the batch's keys: within the (min, max) of each of ``key_columns``."""
        return _batch_key_range(self._batch_keys(key_schema), list(key_columns))

    def write_keyed(self, request: KeyedWrite, written: list[WrittenFile]) -> KeyedWriteResult:
        """The deletes by the strategy the table picks, then an upsert's rows (keeping the replaced rows'
        ``_row_id`` on v3 by position), appended to ``written`` as each write ends."""
        rows = self._frame()
        key = list(request.key)
        batch_keys = self._batch_keys(request.table.schema().select(*key))
        match = KeyMatch(
            self.spark,
            request.table,
            request.context,
            key,
            batch_keys,
            request.files,
            request.shipped_keys,
            request.keeps_row_ids,
        )
        deletes = choose_strategy(request.table, request.delete_mode, key, request.files).write_deletes(match)
        written += deletes.written
        if request.upsert:
            if request.keeps_row_ids and deletes.matched_rows is not None:
                matched = deletes.rows_deleted or 0
                kept = _keeping_row_ids(rows, deletes.matched_rows, key, matched, request.context.schema)
                written += write_dataframe(kept, request.context.storing_row_lineage())
            else:
                written += write_dataframe(rows, request.context)
        if deletes.matched_rows is not None:
            deletes.matched_rows.unpersist()
        return KeyedWriteResult(
            rows_deleted=deletes.rows_deleted,
            required=deletes.required,
            replaced_vectors=deletes.replaced_vectors,
            replaced_position_deletes=deletes.replaced_position_deletes,
        )

    def _frame(self) -> DataFrame:
        """The source as a DataFrame (modes that query the source never get a ParquetSource: ``ingest_job``)."""
        if isinstance(self.source, ParquetSource):
            raise TypeError("this mode needs the source as a DataFrame")
        return self.source

    def _batch_keys(self, key_schema: Schema) -> DataFrame:
        """The batch's distinct keys, cast to the table's key types (as the join with the key scan needs them)."""
        rows = self._frame()
        key = [field.name for field in key_schema.fields]
        table_key_types = spark_types_of(key_schema)
        return (
            rows.select(*[F.col(f"`{k}`").cast(rows.schema[k].dataType) for k in key])
            .distinct()
            .select(*[F.col(f"`{k}`").cast(table_key_types[k]).alias(k) for k in key])
        )


def open_source(
    spark: SparkSession, catalog_name: str, identifier: str, read: SourceRequest, *, files_directly: bool
) -> tuple[DataFrame | ParquetSource, SourceRead | None]:
    """The job's source: plain Parquet files as a ``ParquetSource`` when ``files_directly`` (the mode only writes
    the rows: ``ingest_job.reads_source_files_directly``) and no ``--sql`` queries them; else Spark's read
    (``ingest_source.read_source``), returned beside the rows."""
    if read.source_format == "parquet" and not read.sql and files_directly:
        source = parquet_source_of(spark, catalog_name, read.uri)
        if source is not None:
            return source, None
    done = read_source(
        spark,
        read.uri,
        read.source_format,
        read.sql,
        read.storage_properties,
        mode=read.mode,
        table_types=None if read.sql else table_types_of(catalog_name, identifier),
        table=identifier,
    )
    return done.frame, done


def parquet_source_of(spark: SparkSession, catalog_name: str, uri: str) -> ParquetSource | None:
    """The Parquet files at ``uri`` planned for pyarrow reads in the writing tasks, or None (read them with Spark).

    Files are opened with the catalog's FileIO (its credentials); tasks are sized as Spark sizes file splits.
    """
    from pyiceberg.io.pyarrow import PyArrowFileIO

    io = PyArrowFileIO(file_io_properties(load_catalog(catalog_name).properties))
    max_bytes = _byte_size(spark.conf.get("spark.sql.files.maxPartitionBytes", "128m") or "128m")
    try:
        source = plan_parquet_source(
            uri,
            io,
            parallelism=spark.sparkContext.defaultParallelism,
            max_task_bytes=max_bytes,
            int96_as_timestamp=_int96_read_as_utc_timestamps(spark),
        )
    except OSError as error:  # e.g. a listing refused: Spark's route reports it with the storage details
        log.info("source %s is read by Spark (listing it failed: %s)", uri, error)
        return None
    if source is None:
        log.info("source %s is read by Spark (not plain Parquet files of flat columns)", uri)
    else:
        log.info("source read with pyarrow in the writing tasks: %s", source_summary(source))
    return source


def _int96_read_as_utc_timestamps(spark: SparkSession) -> bool:
    """True when the session reads INT96 columns as timestamps without converting them to its time zone."""
    as_timestamp = spark.conf.get("spark.sql.parquet.int96AsTimestamp", "true") or "true"
    converted = spark.conf.get("spark.sql.parquet.int96TimestampConversion", "false") or "false"
    return as_timestamp.strip().lower() == "true" and converted.strip().lower() == "false"


def _byte_size(text: str) -> int:
    """A Spark byte-size setting (``134217728``, ``128m``, ``128MB``, ``1g``) in bytes."""
    value = text.strip().lower().removesuffix("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    if value and value[-1] in units:
        return int(float(value[:-1]) * units[value[-1]])
    return int(value)


def _grouped_batch_keys(
    table: Table, source: DataFrame, key: list[str], unique: bool, required: list[str]
) -> pa.Table | None:
    """Check the batch's rows and collect its distinct keys in one Spark job, or None (then Spark checks them).

    The source is grouped by its key columns (as the separate checks group them), with each group's rows and the
    nulls of each required column, and the keys are cast to the table's key types (as the join would). At most
    ``SHIPPED_KEYS_MAX + 1`` groups are collected as Arrow; past that, or with a floating-point key column (Spark's
    join, which the key scan then keeps, equates NaN with NaN and -0.0 with 0.0), None.
    """
    key_schema = table.schema().select(*key)
    if not _keys_compare_alike(key_schema):
        return None
    present = [name for name in required if name in source.columns]
    counted = [ROWS_COLUMN, *(NULLS_PREFIX + name for name in present)]
    if set(counted) & set(key):
        return None  # a key column named like a count column: the separate checks
    key_types = spark_types_of(key_schema)
    grouped = (
        source.groupBy(*[F.col(f"`{k}`") for k in key])
        .agg(
            F.count(F.lit(1)).alias(ROWS_COLUMN),
            *[F.count(F.when(F.col(f"`{name}`").isNull(), 1)).alias(NULLS_PREFIX + name) for name in present],
        )
        .select(*[F.col(f"`{k}`").cast(key_types[k]).alias(k) for k in key], *[F.col(f"`{c}`") for c in counted])
    )
    batches = grouped.limit(SHIPPED_KEYS_MAX + 1)._collect_as_arrow()  # type: ignore[operator]  # private API
    groups = pa.Table.from_batches(batches) if batches else arrow_schema_of(grouped.schema).empty_table()
    if groups.num_rows > SHIPPED_KEYS_MAX:
        log.info("more than %d distinct keys: Spark checks the batch and joins it with the key scan", SHIPPED_KEYS_MAX)
        return None
    return checked_batch_keys(groups, key, unique=unique, required=present, table_name=".".join(table.name()))


def _check_required_columns(table_name: str, source: DataFrame, schema: Schema) -> None:
    """A column the table requires may hold no null in the source, nor a required field of a struct that is there."""
    conditions = {
        ".".join(path): condition for path, condition in _nulls_in_required(schema.as_struct(), source.schema)
    }
    if not conditions:
        return
    counts = source.agg(*[F.count(F.when(c, 1)).alias(f"n{i}") for i, c in enumerate(conditions.values())]).first()
    with_nulls = {name: counts[i] for i, name in enumerate(conditions) if counts is not None and counts[i]}
    if with_nulls:
        raise RequiredColumnNullsError(with_nulls, table=table_name)


def _has_required_struct_fields(schema: Schema) -> bool:
    """True when the table has a required field inside a struct (checked by ``_check_required_columns`` only)."""

    def inside(struct: StructType) -> bool:
        for field in struct.fields:
            if isinstance(field.field_type, StructType) and (
                any(inner.required for inner in field.field_type.fields) or inside(field.field_type)
            ):
                return True
        return False

    return inside(schema.as_struct())


def _nulls_in_required(
    table_struct: StructType, source: SparkStructType, parent: Column | None = None, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Column]]:
    """(path, condition true for a row with a null there) of each required field the source holds, through structs
    (a field of a struct that is null itself is not missing)."""
    source_fields = {f.name: f.dataType for f in source.fields}
    for table_field in table_struct.fields:
        if table_field.name not in source_fields:
            continue
        column = F.col(f"`{table_field.name}`") if parent is None else parent.getField(table_field.name)
        if table_field.required:
            yield (*path, table_field.name), column.isNull()
        source_type = source_fields[table_field.name]
        if isinstance(table_field.field_type, StructType) and isinstance(source_type, SparkStructType):
            for nested_path, condition in _nulls_in_required(
                table_field.field_type, source_type, column, (*path, table_field.name)
            ):
                yield nested_path, column.isNotNull() & condition


def _check_keys(table_name: str, source: DataFrame, key: list[str], *, unique: bool) -> None:
    """No key column may be null; in an upsert no key may occur twice."""
    null_condition = F.col(f"`{key[0]}`").isNull()
    for column in key[1:]:
        null_condition = null_condition | F.col(f"`{column}`").isNull()
    nulls = source.filter(null_condition).count()
    if nulls:
        raise UserInputError(f"{nulls} source row(s) have a null in key column(s) {key} (table {table_name})")
    if unique:
        duplicated = source.groupBy(*[F.col(f"`{c}`") for c in key]).count().filter(F.col("count") > 1).count()
        if duplicated:
            raise UserInputError(
                f"{duplicated} key value(s) of {key} occur more than once in the upsert batch (table {table_name})"
            )


def _same_columns(new_rows: DataFrame, kept_rows: DataFrame) -> bool:
    """True when the new rows hold every column the kept rows do, of the same Spark type (nullability and the
    lineage columns aside): one union writes both."""
    new_types = {f.name: f.dataType.simpleString() for f in new_rows.schema.fields}
    lineage = {f.name for f in ROW_LINEAGE}
    return all(f.name in lineage or new_types.get(f.name) == f.dataType.simpleString() for f in kept_rows.schema)


def _keeping_row_ids(
    rows: DataFrame, matched: DataFrame, key: list[str], matched_count: int, schema: Schema
) -> DataFrame:
    """An upsert batch's rows with ``_row_id``: the id of the table row its key replaces, null for a new key (the
    commit assigns it); ``_last_updated_sequence_number`` null (the row inherits the commit's sequence number).

    ``matched`` is the table's rows the batch's keys matched (keys, ``_row_id``). When the table held a key in
    several live rows, the one batch row replacing them keeps the smallest of their ids. Up to
    ``SHIPPED_KEYS_MAX`` matched rows, the ids are broadcast, so the batch's rows are written where they are.
    """
    ids = matched.groupBy(*[F.col(f"`{k}`") for k in key]).agg(F.min(F.col(ROW_ID.name)).alias(ROW_ID.name))
    if matched_count <= SHIPPED_KEYS_MAX:
        ids = F.broadcast(ids)
    lineage_schema = with_row_lineage(schema)
    return conform_dataframe(rows.join(ids, on=key, how="left"), lineage_schema, spark_types_of(lineage_schema))


def _keys_compare_alike(key_schema: Schema) -> bool:
    """True when pyarrow matches keys as Spark's join does: no floating point key (NaN and -0.0 are Spark's own)."""
    return not any(isinstance(field.field_type, FloatType | DoubleType) for field in key_schema.fields)


def _batch_key_range(batch_keys: DataFrame, columns: list[str]) -> BooleanExpression:
    """The planner's filter for the batch's keys: within the (min, max) of each integer or string key column."""
    if not columns:
        return AlwaysTrue()
    aggregates = [F.min(F.col(f"`{name}`")) for name in columns] + [F.max(F.col(f"`{name}`")) for name in columns]
    found = batch_keys.agg(*aggregates).first()
    if found is None or found[0] is None:
        return key_range_filter(columns, None)
    return key_range_filter(columns, [(found[i], found[len(columns) + i]) for i in range(len(columns))])
