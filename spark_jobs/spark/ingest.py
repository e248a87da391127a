"""Ingest a Spark DataFrame into an Iceberg table: append, overwrite, or upsert/delete by key (merge-on-read).

What to commit is decided in ``engine.ingest``; this module runs the Spark work around those decisions. The source
is a DataFrame, or for an append or a dynamic overwrite of plain Parquet files a ``ParquetSource``
(``parquet_source_of``), whose files the writing tasks read with pyarrow (nulls in required columns counted from
the footers' statistics, or by the writers where the footers do not count them).

1. Load the table (or create it from the source's schema, ``engine.ingest.table_setup``); refuse tables we
   cannot write (``commit.format_v3``). With an idempotency key already committed, stop and report that snapshot.
2. Check the source schema against the table; with schema evolution the new schema is committed together with the
   data. Check the source's rows on Spark: no null in a key or in a required field inside a struct; for upsert no
   duplicate key. With a key and at most
   ``SHIPPED_KEYS_MAX`` distinct keys, one job groups the batch by key and the driver checks the groups (nulls in
   required columns too) and keeps the distinct keys for the key scan (``engine.ingest.batch_keys``).
3. Write on the executors, by mode (the writers count nulls in required columns and write nothing more once they
   find one: the job then fails as bad input, with the rows counted over every task, and its files are deleted):
   - append: data files.
   - overwrite with a filter: the files the filter may match are removed and their other rows (deletes applied,
     read by the engine on the executors) rewritten with the new data; without a filter (dynamic): the new
     data's partitions are replaced.
   - upsert / delete: the rows of the table whose key is in the batch are deleted, with position delete files
     (the key columns of the files that may hold the keys read with their positions, kept where the key is one
     of the batch's collected keys, else joined with the batch's keys in Spark; the delete files say which data
     files they name and how many positions they hold; on v3, deletion vectors instead, merged with each data
     file's current one, which the commit removes)
     or equality delete files (the keys; by the batch's partitions when the spec's source columns are keys, else
     where the read found them); upsert also writes the batch as data files. On v3 with deletion vectors, a batch
     row that replaces a table row keeps that row's ``_row_id`` (read with the keys' positions) and leaves its
     ``_last_updated_sequence_number`` null, as Iceberg Java's MERGE does; a new key's row gets a new id.
4. Commit one snapshot (``commit.committer``): append, overwrite or delete. Files of retried Spark tasks (named
   with the job's write id, in no commit) are deleted whatever happens. On a failure that certainly committed
   nothing, every file this job wrote is deleted; when the commit's outcome is unknown, none of the files the
   commit names is (the committer recorded them beside the table).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import DoubleType, FloatType, StructType
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import StructType as SparkStructType

from spark_jobs.engine.commit.changed_partitions import changed_partitions
from spark_jobs.engine.commit.committer import (
    CommitOutcomeUnknownError,
    CommitResult,
    already_committed_result,
    commit_change,
    require_writable_format,
)
from spark_jobs.engine.commit.idempotency import committed_snapshot_for_key
from spark_jobs.engine.commit.pending_commits import settled_quietly
from spark_jobs.engine.commit.producer import delete_quietly
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.ingest.batch_keys import NULLS_PREFIX, ROWS_COLUMN, checked_batch_keys, key_bounds
from spark_jobs.engine.ingest.changes import (
    append_change,
    for_commit,
    overwrite_change,
    row_level_change,
    written_partitions,
)
from spark_jobs.engine.ingest.live_files import (
    files_in_partitions,
    files_that_may_hold_keys,
    key_range_filter,
    range_key_columns,
    rows_to_keep,
)
from spark_jobs.engine.ingest.options import IngestOptions, check_options
from spark_jobs.engine.ingest.result import IngestOutcome, IngestResult
from spark_jobs.engine.ingest.table_setup import check_source_schema, load_or_create_table
from spark_jobs.engine.planning.scan_context import ROW_ID, ROW_LINEAGE, row_lineage_fields, with_row_lineage
from spark_jobs.engine.shared.errors import RequiredColumnNullsError, UserInputError
from spark_jobs.engine.shared.storage import file_io_properties
from spark_jobs.engine.table.catalog import load_catalog
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.job_files import delete_leftovers
from spark_jobs.engine.write.parquet_source import ParquetSource, plan_parquet_source, source_summary
from spark_jobs.engine.write.schema_check import SchemaCheck
from spark_jobs.engine.write.write_context import WriteContext
from spark_jobs.spark.row_level import KeyMatch, choose_strategy
from spark_jobs.spark.scan import dataframe_from_tasks
from spark_jobs.spark.types import arrow_schema_of, spark_types_of
from spark_jobs.spark.write import (
    conform_dataframe,
    write_dataframe,
    write_parquet_source,
)

__all__ = ["IngestOptions", "IngestResult", "ingest", "ingest_table"]
log = logging.getLogger(__name__)
SHIPPED_KEYS_MAX = 1_000_000  # distinct batch keys collected to the driver and shipped to the key scan, at most


@dataclass
class _Job:
    """One ingest's working set, passed between the mode functions."""

    spark: SparkSession
    table: Table
    rows: DataFrame | ParquetSource  # a ParquetSource in append and dynamic overwrite only
    options: IngestOptions
    context: WriteContext
    written: list[WrittenFile]
    outcome: IngestOutcome
    batch_keys: pa.Table | None = None  # the batch's distinct keys, collected by the checks (upsert and delete)


def ingest(
    spark: SparkSession,
    catalog_name: str,
    identifier: str,
    source: DataFrame | ParquetSource,
    options: IngestOptions,
) -> dict[str, Any]:
    """Run one ingest (module doc) and return the job's result line (``ingest_table``'s, as JSON)."""
    return ingest_table(spark, catalog_name, identifier, source, options).as_json()


def ingest_table(
    spark: SparkSession,
    catalog_name: str,
    identifier: str,
    source: DataFrame | ParquetSource,
    options: IngestOptions,
) -> IngestResult:
    """Run one ingest (module doc) and return its result."""
    check_options(options)
    if isinstance(source, ParquetSource) and not reads_source_files_directly(options):
        raise ValueError(f"a ParquetSource serves append and dynamic overwrite only, not --mode {options.mode}")
    outcome = IngestOutcome()
    started = time.perf_counter()
    log.info("plan: %s into %s ...", options.mode, identifier)
    catalog: Catalog = load_catalog(catalog_name)
    table = load_or_create_table(catalog, identifier, _source_arrow_schema(source), options)
    require_writable_format(table)
    table_name = ".".join(table.name())
    if options.idempotency_key is not None:
        earlier = committed_snapshot_for_key(table, options.idempotency_key)
        if earlier is not None:
            log.info(
                "idempotency key %r already committed in snapshot %s", options.idempotency_key, earlier.snapshot_id
            )
            settled_quietly(table)  # a record an earlier, undecided try of this key left is decided now
            reported = already_committed_result(earlier)
            return IngestResult.of(
                table_name, options, reported, outcome, partitions=_partitions_changed(table, reported)
            )
    start_snapshot = table.current_snapshot()
    start_id = start_snapshot.snapshot_id if start_snapshot else None
    checked, collected_keys = _check_source(table, source, options)
    outcome.phases["plan"] = time.perf_counter() - started
    log.info("plan done in %.1f s (snapshot %s); write ...", outcome.phases["plan"], start_id)
    context = WriteContext.for_table(table, schema=checked.schema)
    rows: DataFrame | ParquetSource
    if isinstance(source, ParquetSource) or options.mode == "delete":
        rows = source  # the writer conforms Arrow batches itself
    else:
        rows = conform_dataframe(source, checked.schema, spark_types_of(checked.schema))
    written: list[WrittenFile] = []
    result: CommitResult | None = None
    try:
        started = time.perf_counter()
        try:
            change = _write(_Job(spark, table, rows, options, context, written, outcome, collected_keys))
        except RequiredColumnNullsError as error:  # found by the writers (module doc, step 3)
            raise RequiredColumnNullsError(error.null_counts, table=table_name) from error
        outcome.phases["write"] = time.perf_counter() - started
        log.info("write done in %.1f s (%d files); commit ...", outcome.phases["write"], len(written))
        started = time.perf_counter()
        if change is not None:
            change = for_commit(change, table, options, checked)
            result = commit_change(table, change, starting_snapshot_id=start_id, job="ingest")
        outcome.phases["commit"] = time.perf_counter() - started
        log.info("commit done in %.1f s", outcome.phases["commit"])
    except CommitOutcomeUnknownError:
        delete_leftovers(context.table_location, context.write_id, {item.file_path for item in written}, table.io)
        raise
    except BaseException:
        # Nothing was committed: every file of the write goes (a file that cannot be deleted is logged by name).
        delete_quietly(table, [item.file_path for item in written])
        delete_leftovers(context.table_location, context.write_id, set(), table.io)
        raise
    committed = set() if result is None or result.already_committed else {item.file_path for item in written}
    delete_leftovers(context.table_location, context.write_id, committed, table.io)
    partitions = _partitions_changed(table, result)
    return IngestResult.of(table_name, options, result, outcome, start_id=start_id, partitions=partitions)


def _partitions_changed(table: Table, result: CommitResult | None) -> list[dict[str, Any]] | None:
    """The partitions the committed snapshot changed, read back from it; ``None`` (and a warning) when they cannot
    be: the commit stands either way, and a snapshot an earlier try committed may have been expired since."""
    if result is None:
        return []
    snapshot = table.metadata.snapshot_by_id(result.snapshot_id)
    if snapshot is None:
        log.warning("snapshot %s is no longer in the table: the partitions it changed are unknown", result.snapshot_id)
        return None
    try:
        return changed_partitions(table, snapshot)
    except Exception as error:  # reporting, not the commit: never fail a job that committed
        log.warning(
            "cannot read the partitions snapshot %s changed: %s: %s", result.snapshot_id, type(error).__name__, error
        )
        return None


def reads_source_files_directly(options: IngestOptions) -> bool:
    """True for the modes whose source rows only get written (a Parquet source may then skip Spark's reader)."""
    return options.mode == "append" or (options.mode == "overwrite" and options.overwrite_filter is None)


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


def _source_arrow_schema(source: DataFrame | ParquetSource) -> pa.Schema:
    """The source's columns as an Arrow schema."""
    return source.arrow_schema if isinstance(source, ParquetSource) else arrow_schema_of(source.schema)


def _dataframe(rows: DataFrame | ParquetSource) -> DataFrame:
    """The source as a DataFrame (modes that query the source never get a ParquetSource: see ``ingest``)."""
    if isinstance(rows, ParquetSource):
        raise TypeError("this mode needs the source as a DataFrame")
    return rows


def _write_rows(spark: SparkSession, rows: DataFrame | ParquetSource, context: WriteContext) -> list[WrittenFile]:
    """Write the source rows as data files, from a DataFrame or straight from Parquet source files."""
    if isinstance(rows, ParquetSource):
        return write_parquet_source(spark, rows, context)
    return write_dataframe(rows, context)


def _check_source(
    table: Table, source: DataFrame | ParquetSource, options: IngestOptions
) -> tuple[SchemaCheck, pa.Table | None]:
    """The schema check (in the engine), then the row checks: required columns and keys (on Spark, or from the
    footers of a Parquet source). With a key, also the batch's distinct keys when they were collected (one Spark
    job checks and collects them when there are at most ``SHIPPED_KEYS_MAX``: ``_grouped_batch_keys``)."""
    table_name = ".".join(table.name())
    checked = check_source_schema(table, _source_arrow_schema(source), options)
    if isinstance(source, ParquetSource):
        required = [f.name for f in table.schema().fields if f.required]
        with_nulls = {name: source.null_counts.get(name) or 0 for name in required if source.null_counts.get(name)}
        if with_nulls:
            raise RequiredColumnNullsError(with_nulls, table=table_name)
        return checked, None
    required = [f.name for f in table.schema().fields if f.required] if options.mode != "delete" else []
    struct_fields = _has_required_struct_fields(table.schema())
    if options.key and not struct_fields:
        keys = _grouped_batch_keys(table, source, options, required)
        if keys is not None:
            return checked, keys
    if options.mode != "delete" and struct_fields:
        # Top-level required columns are checked by the writers; with a required field inside a struct, one job
        # here checks them all (a writer cannot tell a missing struct from one whose required field is null).
        _check_required_columns(table_name, source, table.schema())
    if options.key:
        _check_keys(table_name, source, list(options.key), unique=options.mode == "upsert")
    return checked, None


def _grouped_batch_keys(
    table: Table, source: DataFrame, options: IngestOptions, required: list[str]
) -> pa.Table | None:
    """Check the batch's rows and collect its distinct keys in one Spark job, or None (then Spark checks them).

    The source is grouped by its key columns (as the separate checks group them), with each group's rows and the
    nulls of each required column, and the keys are cast to the table's key types (as the join would). At most
    ``SHIPPED_KEYS_MAX + 1`` groups are collected as Arrow; past that, or with a floating-point key column (Spark's
    join, which the key scan then keeps, equates NaN with NaN and -0.0 with 0.0), None.
    """
    key = list(options.key)
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
    return checked_batch_keys(
        groups, key, unique=options.mode == "upsert", required=present, table_name=".".join(table.name())
    )


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


def _write(job: _Job) -> SnapshotChange | None:
    """Write the files of the chosen mode (appending their descriptions to ``written``); the change to commit."""
    if job.options.mode == "append":
        job.written += _write_rows(job.spark, job.rows, job.context)
        return append_change(job.written)  # an empty source commits nothing
    if job.options.mode == "overwrite":
        return _overwrite(job)
    return _row_level(job)


def _overwrite(job: _Job) -> SnapshotChange | None:
    """Overwrite by filter (matching rows replaced) or dynamically (the new data's partitions replaced)."""
    if job.options.overwrite_filter is not None:
        keep = rows_to_keep(job.table, job.options.overwrite_filter)
        context = job.context  # on v3 the kept rows keep their lineage; the new rows' is null (assigned on commit)
        if row_lineage_fields(job.table):
            context = _storing_row_lineage(context)
        kept_rows = dataframe_from_tasks(job.spark, keep.tasks, keep.context)
        kept_rows = conform_dataframe(kept_rows, context.schema, spark_types_of(context.schema))
        new_rows = _dataframe(job.rows)
        if _same_columns(new_rows, kept_rows):
            job.written += write_dataframe(new_rows.unionByName(kept_rows, allowMissingColumns=True), context)
        else:  # the new rows lack columns the writers fill with defaults, or hold WKB for geo columns: apart
            job.written += write_dataframe(new_rows, context)
            job.written += write_dataframe(kept_rows, context)
        return overwrite_change(job.written, set(keep.removed_paths), kept_free=None)
    job.written += _write_rows(job.spark, job.rows, job.context)
    partitions = written_partitions(job.written)
    return overwrite_change(job.written, files_in_partitions(job.table, partitions), kept_free=partitions)


def _same_columns(new_rows: DataFrame, kept_rows: DataFrame) -> bool:
    """True when the new rows hold every column the kept rows do, of the same Spark type (nullability and the
    lineage columns aside): one union writes both."""
    new_types = {f.name: f.dataType.simpleString() for f in new_rows.schema.fields}
    lineage = {f.name for f in ROW_LINEAGE}
    return all(f.name in lineage or new_types.get(f.name) == f.dataType.simpleString() for f in kept_rows.schema)


def _row_level(job: _Job) -> SnapshotChange | None:
    """Upsert or delete by key: the deletes by the strategy the table picks (``spark/row_level.py``), then for an
    upsert the batch's rows (keeping the replaced rows' ``_row_id`` on v3 by position)."""
    table, options, context = job.table, job.options, job.context
    rows = _dataframe(job.rows)
    key = list(options.key)
    key_schema = table.schema().select(*key)
    table_key_types = spark_types_of(key_schema)
    batch_keys = (
        rows.select(*[F.col(f"`{k}`").cast(rows.schema[k].dataType) for k in key])
        .distinct()
        .select(*[F.col(f"`{k}`").cast(table_key_types[k]).alias(k) for k in key])
    )
    position_mode = options.delete_mode == "position"
    columns = range_key_columns(key_schema)
    key_range = (
        _batch_key_range(batch_keys, columns)
        if job.batch_keys is None
        else key_range_filter(columns, key_bounds(job.batch_keys, columns) if columns else None)
    )
    files = files_that_may_hold_keys(
        table, key, key_range, with_position_deletes=position_mode, batch_keys=job.batch_keys
    )
    # On v3 an upsert by position keeps each replaced row's _row_id in the row written in its place (as Iceberg
    # Java's MERGE does); equality deletes read no row, so there the new rows get new ids (as the spec says).
    keeps_row_ids = options.mode == "upsert" and position_mode and bool(row_lineage_fields(table))
    match = KeyMatch(job.spark, table, context, key, batch_keys, files, job.batch_keys, keeps_row_ids)
    deletes = choose_strategy(table, options.delete_mode, key, files).write_deletes(match)
    job.written += deletes.written
    job.outcome.rows_deleted = deletes.rows_deleted
    if options.mode == "upsert":
        if keeps_row_ids and deletes.matched_rows is not None:
            kept = _keeping_row_ids(rows, deletes.matched_rows, key, deletes.rows_deleted or 0, context.schema)
            job.written += write_dataframe(kept, _storing_row_lineage(context))
        else:
            job.written += write_dataframe(rows, context)
    if deletes.matched_rows is not None:
        deletes.matched_rows.unpersist()
    return row_level_change(
        job.written,
        options,
        deletes.required,
        replaced_vectors=deletes.replaced_vectors,
        replaced_position_deletes=deletes.replaced_position_deletes,
        deletion_vectors=table.metadata.format_version >= 3,
    )


def _storing_row_lineage(context: WriteContext) -> WriteContext:
    """``context`` writing data files that store each row's ``_row_id`` and ``_last_updated_sequence_number``
    (null where the commit assigns them: a new row's id, the new sequence number)."""
    return dataclasses.replace(context, schema_json=with_row_lineage(context.schema).model_dump_json())


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
