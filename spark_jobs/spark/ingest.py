"""Ingest a Spark DataFrame into an Iceberg table: append, overwrite, or upsert/delete by key (merge-on-read).

1. Load the table (or create it, format v2, with ``create_if_missing``); refuse formats other than v2. With an
   idempotency key already committed, stop and report that snapshot.
2. Check the source schema against the table (``write.schema_check``); with schema evolution the new schema is
   committed together with the data. Check the keys (no nulls; for upsert no duplicates).
3. Write on the executors, by mode:
   - append: data files.
   - overwrite with a filter: data files that may hold matching rows are removed and their other rows (deletes
     applied) rewritten, plus the new data; without a filter (dynamic): the new data's partitions are replaced.
   - upsert / delete: the rows of the table whose key is in the batch are deleted, with position delete files
     (the table's key columns read with positions and joined with the batch's keys) or equality delete files (the
     keys; by the batch's partitions when the spec's source columns are keys, else where the scan found them);
     upsert also writes the batch as data files.
4. Commit one snapshot (``commit.committer``): append, overwrite or delete. Files of retried Spark tasks (named
   with the job's write id, in no commit) are deleted whatever happens. On a failure that certainly committed
   nothing, every file this job wrote is deleted; when the commit's outcome is unknown, none of the files the
   commit names is (the committer recorded them beside the table).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    GreaterThanOrEqual,
    LessThanOrEqual,
    Not,
)
from pyiceberg.manifest import ManifestContent
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.sorting import NullOrder
from pyiceberg.table.update import AddSchemaUpdate, AssertCurrentSchemaId, SetCurrentSchemaUpdate
from pyiceberg.types import IntegerType, LongType, StringType
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

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
from spark_jobs.engine.shared.errors import TableNotFoundError, UserInputError
from spark_jobs.engine.table.catalog import load_catalog, load_table
from spark_jobs.engine.table.manifest_entries import partition_values, read_live_entries
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.job_files import delete_leftovers
from spark_jobs.engine.write.schema_check import SchemaCheck, check_schema
from spark_jobs.engine.write.table_layout import parse_partition_by, parse_sort_by
from spark_jobs.engine.write.write_context import WriteContext
from spark_jobs.spark.types import arrow_schema_of, spark_types_of
from spark_jobs.spark.write import (
    ORDINAL_COLUMN,
    LiveDataFile,
    conform_dataframe,
    key_positions,
    write_dataframe,
    write_equality_deletes,
    write_position_deletes,
)

MODES = ("append", "overwrite", "upsert", "delete")
DELETE_MODES = ("position", "equality")
MODE_PROPERTY = "airflow-iceberg-provider.ingest-mode"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestOptions:
    """What to do with the source rows (the ingest job's options)."""

    mode: str = "append"
    key: tuple[str, ...] = ()
    overwrite_filter: str | None = None
    delete_mode: str = "position"
    idempotency_key: str | None = None
    create_if_missing: bool = False
    partition_by: str | None = None
    sort_by: str | None = None
    allow_schema_evolution: bool = False


@dataclass
class _Outcome:
    """Counters gathered while writing, for the result."""

    phases: dict[str, float] = field(default_factory=dict)
    rows_written: int = 0
    rows_deleted: int | None = None


@dataclass
class _Job:
    """One ingest's working set, passed between the mode functions."""

    spark: SparkSession
    table: Table
    rows: DataFrame
    options: IngestOptions
    context: WriteContext
    written: list[dict]
    outcome: _Outcome


def ingest(
    spark: SparkSession, catalog_name: str, identifier: str, source: DataFrame, options: IngestOptions
) -> dict[str, Any]:
    """Run one ingest (module doc) and return the job's result."""
    check_options(options)
    outcome = _Outcome()
    started = time.perf_counter()
    catalog = load_catalog(catalog_name)
    table = _load_or_create(catalog, identifier, source, options)
    require_writable_format(table)
    table_name = ".".join(table.name())
    if options.idempotency_key is not None:
        earlier = committed_snapshot_for_key(table, options.idempotency_key)
        if earlier is not None:
            log.info(
                "idempotency key %r already committed in snapshot %s", options.idempotency_key, earlier.snapshot_id
            )
            settled_quietly(table)  # a record an earlier, undecided try of this key left is decided now
            return _result(table_name, options, already_committed_result(earlier), outcome)
    start_snapshot = table.current_snapshot()
    start_id = start_snapshot.snapshot_id if start_snapshot else None
    checked = _check_source(table, source, options)
    outcome.phases["plan"] = time.perf_counter() - started
    context = WriteContext.for_table(table, schema=checked.schema)
    rows = (
        conform_dataframe(source, checked.schema, spark_types_of(checked.schema))
        if options.mode != "delete"
        else source
    )
    written: list[dict] = []
    try:
        started = time.perf_counter()
        change = _write(_Job(spark, table, rows, options, context, written, outcome))
        outcome.phases["write"] = time.perf_counter() - started
        started = time.perf_counter()
        if change is None:
            result = None
        else:
            change.idempotency_key = options.idempotency_key
            change.summary_properties[MODE_PROPERTY] = options.mode
            if checked.evolves:
                change.extra_updates = (AddSchemaUpdate(schema_=checked.schema), SetCurrentSchemaUpdate(schema_id=-1))
                change.extra_requirements = (AssertCurrentSchemaId(current_schema_id=table.metadata.current_schema_id),)
            result = commit_change(table, change, starting_snapshot_id=start_id, job="ingest")
        outcome.phases["commit"] = time.perf_counter() - started
    except CommitOutcomeUnknownError:
        delete_leftovers(context.table_location, context.write_id, {item["file_path"] for item in written}, table.io)
        raise
    except BaseException:
        # Nothing was committed: every file of the write goes (a file that cannot be deleted is logged by name).
        delete_quietly(table, [item["file_path"] for item in written])
        delete_leftovers(context.table_location, context.write_id, set(), table.io)
        raise
    committed = set() if result is None or result.already_committed else {item["file_path"] for item in written}
    delete_leftovers(context.table_location, context.write_id, committed, table.io)
    return _result(table_name, options, result, outcome, start_id=start_id)


def check_options(options: IngestOptions) -> None:
    """Refuse option combinations that cannot work, before any Spark work."""
    if options.mode not in MODES:
        raise UserInputError(f"--mode must be one of {', '.join(MODES)}, got {options.mode!r}")
    if options.delete_mode not in DELETE_MODES:
        raise UserInputError(f"--delete-mode must be one of {', '.join(DELETE_MODES)}, got {options.delete_mode!r}")
    if options.mode in ("upsert", "delete") and not options.key:
        raise UserInputError(f"--mode {options.mode} needs --key naming the key column(s)")
    if options.overwrite_filter is not None and options.mode != "overwrite":
        raise UserInputError("--overwrite-filter applies to --mode overwrite only")
    if (options.partition_by or options.sort_by) and not options.create_if_missing:
        raise UserInputError("--partition-by and --sort-by apply to a table made by --create-if-missing only")


def _load_or_create(catalog: Any, identifier: str, source: DataFrame, options: IngestOptions) -> Table:
    """The table; created from the source's schema (format v2, with the given layout) when missing and allowed."""
    try:
        return load_table(catalog, identifier)
    except TableNotFoundError:
        if not options.create_if_missing:
            raise
    partition_fields = parse_partition_by(options.partition_by) if options.partition_by else []
    sort_fields = parse_sort_by(options.sort_by) if options.sort_by else []
    arrow_schema = arrow_schema_of(source.schema)
    for column, _ in [*partition_fields, *[(c, None) for c, _ in sort_fields]]:
        if column not in arrow_schema.names:
            raise UserInputError(f"layout column {column!r} is not a source column; columns: {arrow_schema.names}")
    namespace = ".".join(catalog.identifier_to_tuple(identifier)[:-1])
    catalog.create_namespace_if_not_exists(namespace)
    table = catalog.create_table(identifier, schema=arrow_schema, properties={"format-version": "2"})
    if partition_fields:
        with table.update_spec() as update:
            for column, transform in partition_fields:
                update.add_field(column, transform)
    if sort_fields:
        with table.update_sort_order() as update:
            for column, ascending in sort_fields:
                from pyiceberg.transforms import IdentityTransform

                if ascending:
                    update.asc(column, IdentityTransform(), NullOrder.NULLS_FIRST)
                else:
                    update.desc(column, IdentityTransform(), NullOrder.NULLS_LAST)
    log.info("created table %s (format v2)", identifier)
    return table


def _check_source(table: Table, source: DataFrame, options: IngestOptions) -> SchemaCheck:
    """The schema check (delete mode: key columns only) and the key checks."""
    table_name = ".".join(table.name())
    arrow_schema = arrow_schema_of(source.schema)
    schema_names = {f.name for f in table.schema().fields}
    unknown_keys = [k for k in options.key if k not in schema_names]
    if unknown_keys:
        raise UserInputError(f"--key column(s) {unknown_keys} are not columns of table {table_name}")
    missing_keys = [k for k in options.key if k not in arrow_schema.names]
    if missing_keys:
        raise UserInputError(f"--key column(s) {missing_keys} are missing from the source of table {table_name}")
    if options.mode == "delete":
        import pyarrow as pa

        keys_only = pa.schema([arrow_schema.field(k) for k in options.key])
        check_schema(table_name, table.schema().select(*options.key), keys_only, allow_evolution=False)
        checked = SchemaCheck(table.schema())
    else:
        checked = check_schema(table_name, table.schema(), arrow_schema, allow_evolution=options.allow_schema_evolution)
        _check_required_columns(table_name, source, [f.name for f in table.schema().fields if f.required])
    if options.key:
        _check_keys(table_name, source, list(options.key), unique=options.mode == "upsert")
    return checked


def _check_required_columns(table_name: str, source: DataFrame, required: list[str]) -> None:
    """A column the table requires may hold no null in the source."""
    present = [name for name in required if name in source.columns]
    if not present:
        return
    counts = source.agg(*[F.count(F.when(F.col(f"`{name}`").isNull(), 1)).alias(name) for name in present]).first()
    with_nulls = {name: counts[name] for name in present if counts is not None and counts[name]}
    if with_nulls:
        detail = ", ".join(f"{name!r} in {count} row(s)" for name, count in with_nulls.items())
        raise UserInputError(f"source has nulls in column(s) table {table_name} requires: {detail}")


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
    rows, options, context, written, outcome = job.rows, job.options, job.context, job.written, job.outcome
    if options.mode == "append":
        written += write_dataframe(rows, context)
        outcome.rows_written = sum(item["record_count"] for item in written)
        if not written:
            return None  # an empty source commits nothing
        return SnapshotChange(Operation.APPEND, added_data_files=[to_data_file(item) for item in written])
    if options.mode == "overwrite":
        return _overwrite(job)
    return _row_level(job)


def _overwrite(job: _Job) -> SnapshotChange | None:
    """Overwrite by filter (matching rows replaced) or dynamically (the new data's partitions replaced)."""
    spark, table, rows, options, context = job.spark, job.table, job.rows, job.options, job.context
    written, outcome = job.written, job.outcome
    live = _live_data_files(table)
    if options.overwrite_filter is not None:
        from spark_jobs.engine.read.session import open_read_session
        from spark_jobs.spark.scan import dataframe_from_session

        matching = open_read_session(table.catalog, table, row_filter=options.overwrite_filter)
        candidates = {s.path for task in matching.tasks for s in task.slices}
        removed = [f for f in live if f.path in candidates]
        keep = open_read_session(table.catalog, table, row_filter=Not(matching.plan.row_filter))
        keep.plan = dataclasses.replace(
            keep.plan,
            tasks=[
                type(task)(slices=tuple(s for s in task.slices if s.path in candidates))
                for task in keep.plan.tasks
                if any(s.path in candidates for s in task.slices)
            ],
        )
        kept_rows, _ = dataframe_from_session(spark, keep)
        kept_rows = conform_dataframe(kept_rows, context.schema, spark_types_of(context.schema))
        written += write_dataframe(rows.unionByName(kept_rows), context)
        conflict_scope = None
    else:
        written += write_dataframe(rows, context)
        partitions = {(item["spec_id"], tuple(item["partition_values"])) for item in written}
        removed = [f for f in live if (f.spec_id, _partition_of(f)) in partitions]
        conflict_scope = partitions
    outcome.rows_written = sum(item["record_count"] for item in written)
    if not written and not removed:
        return None
    return SnapshotChange(
        Operation.OVERWRITE,
        added_data_files=[to_data_file(item) for item in written],
        removed_data_file_paths={f.path for f in removed},
        no_new_data_in_partitions=conflict_scope,
    )


def _row_level(job: _Job) -> SnapshotChange | None:
    """Upsert or delete by key with position or equality delete files (module doc)."""
    spark, table, rows, options, context = job.spark, job.table, job.rows, job.options, job.context
    written, outcome = job.written, job.outcome
    key = list(options.key)
    batch_keys = rows.select(*[F.col(f"`{k}`").cast(rows.schema[k].dataType) for k in key]).distinct()
    key_schema = table.schema().select(*key)
    table_key_types = spark_types_of(key_schema)
    batch_keys = batch_keys.select(*[F.col(f"`{k}`").cast(table_key_types[k]).alias(k) for k in key])
    all_live = _live_data_files(table)
    planned = _files_that_may_hold_keys(table, key, _key_range_filter(batch_keys, key_schema))
    live = [f for f in all_live if f.path in planned]
    partitions = list(dict.fromkeys((f.spec_id, _partition_of(f)) for f in live))
    ordinal = {partition: index for index, partition in enumerate(partitions)}
    deletes_attached = planned if options.delete_mode == "position" else {}
    live_files = [
        LiveDataFile(
            f.path,
            f.size,
            f.record_count,
            f.spec_id,
            ordinal[(f.spec_id, _partition_of(f))],
            with_deletes=deletes_attached.get(f.path),
        )
        for f in live
    ]
    required: set[str] = set()
    spec = context.spec()
    spec_sources = {context.schema.find_column_name(f.source_id) for f in spec.fields}
    keys_decide_partition = spec_sources <= set(key) and all(f.spec_id == spec.spec_id for f in all_live)
    if options.delete_mode == "equality" and keys_decide_partition:
        written += write_equality_deletes(batch_keys, context, key, None)
        outcome.rows_deleted = None
    else:
        positions = key_positions(spark, live_files, context, key_schema)
        matched = positions.join(batch_keys, on=key, how="left_semi").cache()
        outcome.rows_deleted = matched.count()
        if options.delete_mode == "position":
            written += write_position_deletes(matched, context, partitions)
            required = {row[0] for row in matched.select("file_path").distinct().collect()}
        else:
            written += write_equality_deletes(matched.select(*key, ORDINAL_COLUMN), context, key, partitions)
        matched.unpersist()
    if options.mode == "upsert":
        written += write_dataframe(rows, context)
    outcome.rows_written = sum(item["record_count"] for item in written if item["content"] == 0)
    data = [to_data_file(item) for item in written if item["content"] == 0]
    deletes = [to_data_file(item) for item in written if item["content"] != 0]
    if not data and not deletes:
        return None
    return SnapshotChange(
        Operation.OVERWRITE if data and deletes else (Operation.APPEND if data else Operation.DELETE),
        added_data_files=data,
        added_delete_files=deletes,
        # Position deletes name their rows exactly: a pure delete stays valid when data was appended meanwhile.
        no_new_data_in_partitions=set() if options.mode == "delete" and options.delete_mode == "position" else None,
        required_data_file_paths=required,
    )


def _key_range_filter(batch_keys: DataFrame, key_schema: Schema) -> BooleanExpression:
    """Bounds of the batch's integer and string keys, so planning skips files that cannot hold them."""
    bounded = [f.name for f in key_schema.fields if isinstance(f.field_type, (IntegerType, LongType, StringType))]
    if not bounded:
        return AlwaysTrue()
    aggregates = [F.min(F.col(f"`{name}`")) for name in bounded] + [F.max(F.col(f"`{name}`")) for name in bounded]
    bounds = batch_keys.agg(*aggregates).first()
    if bounds is None or bounds[0] is None:
        return AlwaysFalse()  # an empty batch deletes nothing
    condition: BooleanExpression = AlwaysTrue()
    for index, name in enumerate(bounded):
        low, high = bounds[index], bounds[len(bounded) + index]
        # pyiceberg's predicates take (term, literal) positionally; the pydantic signature mypy sees does not.
        at_least, at_most = GreaterThanOrEqual(name, low), LessThanOrEqual(name, high)  # type: ignore[call-arg]
        condition = And(condition, And(at_least, at_most))
    return condition


def _files_that_may_hold_keys(table: Table, key: list[str], key_range: BooleanExpression) -> dict[str, Any]:
    """Whole data files the read planner keeps under ``key_range``, by path, with their position deletes attached."""
    from spark_jobs.engine.read.session import open_read_session

    session = open_read_session(table.catalog, table, columns=key, row_filter=key_range)
    return {
        s.path: dataclasses.replace(s, start=0, length=s.file_size_in_bytes, equality_deletes=())
        for task in session.tasks
        for s in task.slices
    }


@dataclass(frozen=True)
class _LiveFile:
    path: str
    size: int
    record_count: int
    spec_id: int
    partition: tuple
    data_file: Any


def _live_data_files(table: Table) -> list[_LiveFile]:
    """The data files of the table's current snapshot."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    files = []
    for manifest in snapshot.manifests(table.io):
        if manifest.content != ManifestContent.DATA:
            continue
        for entry in read_live_entries(manifest, table.io):
            data_file = entry.data_file
            files.append(
                _LiveFile(
                    data_file.file_path,
                    data_file.file_size_in_bytes,
                    data_file.record_count,
                    data_file.spec_id,
                    partition_values(data_file),
                    data_file,
                )
            )
    return files


def _partition_of(live: _LiveFile) -> tuple:
    return live.partition


def _result(
    table_name: str,
    options: IngestOptions,
    result: CommitResult | None,
    outcome: _Outcome,
    *,
    start_id: int | None = None,
) -> dict[str, Any]:
    """The job's final JSON object; without a commit (nothing to write), the snapshot the job started from."""
    summary = result.summary if result else {}
    return {
        "status": "ok",
        "job": "ingest",
        "table": table_name,
        "mode": options.mode,
        "snapshot_id": result.snapshot_id if result else start_id,
        "operation": result.operation if result else None,
        "already_committed": bool(result and result.already_committed),
        "commit_attempts": result.attempts if result else 0,
        "data_files_added": int(summary.get("added-data-files", 0)) if result else 0,
        "bytes_added": int(summary.get("added-files-size", 0)) if result else 0,
        "data_files_removed": int(summary.get("deleted-data-files", 0)) if result else 0,
        "bytes_removed": int(summary.get("removed-files-size", 0)) if result else 0,
        "delete_files_written": int(summary.get("added-delete-files", 0)) if result else 0,
        "rows_added": int(summary.get("added-records", 0)) if result else 0,
        "rows_removed_with_files": int(summary.get("deleted-records", 0)) if result else 0,
        "rows_deleted_by_key": outcome.rows_deleted,
        "position_deletes_added": int(summary.get("added-position-deletes", 0)) if result else 0,
        "equality_deletes_added": int(summary.get("added-equality-deletes", 0)) if result else 0,
        "seconds": {name: round(value, 3) for name, value in outcome.phases.items()},
    }
