"""The ingest job: append, overwrite, or upsert/delete by key (merge-on-read), orchestrated on the driver.

What to commit is decided here and in ``engine.ingest``; the rows themselves stay where the executor holds them,
behind ``IngestRows`` (Spark's: ``spark/ingest.py``, a DataFrame, or for an append or a dynamic overwrite of plain
Parquet files a ``ParquetSource`` whose files the writing tasks read with pyarrow). The options stay here: the
rows get only the values each step needs (the key, whether keys must be unique, a write context).

1. Load the table (or create it from the source's schema, ``engine.ingest.table_setup``); refuse tables we
   cannot write (``commit.format_v3``). With an idempotency key already committed, stop and report that snapshot.
2. Check the source schema against the table (``check_source_schema``); with schema evolution the new schema is
   committed together with the data. Then the rows' checks (``IngestRows.check``): no null in a key or in a
   required field inside a struct; for upsert no duplicate key; with a key and few enough distinct keys, the
   batch's distinct keys come back to the driver for the key scan (``engine.ingest.batch_keys``).
3. Write on the executors, by mode (the writers count nulls in required columns and write nothing more once they
   find one: the job then fails as bad input, with the rows counted over every task, and its files are deleted):
   - append: data files (``IngestRows.write``).
   - overwrite with a filter: the files the filter may match are removed (``engine.ingest.live_files``) and their
     other rows (deletes applied, read by the engine on the executors) rewritten with the new data
     (``IngestRows.write_with_kept``); without a filter (dynamic): the new data's partitions are replaced.
   - upsert / delete: the live files that may hold the batch's keys are planned here (under the keys' range, and
     their values when collected); ``IngestRows.write_row_level`` writes the deletes by the strategy the table
     picks (``spark/row_level.py``: position deletes, deletion vectors on v3, equality deletes) and, for an
     upsert, the batch's rows (keeping a replaced row's ``_row_id`` on v3 by position, as Iceberg Java's MERGE).
4. Commit one snapshot (``commit.committer``): append, overwrite or delete. Files of retried tasks (named with the
   job's write id, in no commit) are deleted whatever happens. On a failure that certainly committed nothing,
   every file this job wrote is deleted; when the commit's outcome is unknown, none of the files the commit names
   is (the committer recorded them beside the table).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema
from pyiceberg.table import Table

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
from spark_jobs.engine.ingest.batch_keys import key_bounds
from spark_jobs.engine.ingest.changes import (
    append_change,
    for_commit,
    overwrite_change,
    row_level_change,
    written_partitions,
)
from spark_jobs.engine.ingest.live_files import (
    RowsToKeep,
    files_in_partitions,
    files_that_may_hold_keys,
    key_range_filter,
    range_key_columns,
    rows_to_keep,
)
from spark_jobs.engine.ingest.options import IngestOptions, check_options
from spark_jobs.engine.ingest.result import IngestOutcome, IngestResult
from spark_jobs.engine.ingest.table_setup import check_source_schema, load_or_create_table
from spark_jobs.engine.planning.scan_context import row_lineage_fields
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.errors import RequiredColumnNullsError
from spark_jobs.engine.table.catalog import load_catalog
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.job_files import delete_leftovers
from spark_jobs.engine.write.write_context import WriteContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeyedWrite:
    """What an upsert or delete asks of the rows (step 3): the key, the live files that may hold the batch's keys
    (their deletes attached), the keys collected on the driver (or None), and how to delete and write."""

    table: Table
    context: WriteContext
    key: tuple[str, ...]
    files: list[DataFileSlice]
    shipped_keys: pa.Table | None
    delete_mode: str  # position or equality
    upsert: bool  # also write the batch's rows
    keeps_row_ids: bool  # v3, position mode, upsert: the written row keeps the replaced row's _row_id


@dataclass(frozen=True)
class KeyedWriteResult:
    """What an upsert's or delete's deletes did: the rows deleted (``None``: unknown, equality deletes by key), the
    data files the commit requires live, and the deletion vectors and position delete files the new ones replace."""

    rows_deleted: int | None
    required: set[str] = field(default_factory=set)
    replaced_vectors: set[tuple[str, int]] = field(default_factory=set)
    replaced_position_deletes: set[str] = field(default_factory=set)


class IngestRows(Protocol):
    """The source's rows where the executor holds them: the executor's half of an ingest (module doc)."""

    @property
    def arrow_schema(self) -> pa.Schema:
        """The rows' columns as an Arrow schema."""
        ...

    @property
    def reads_files_directly(self) -> bool:
        """True when the writing tasks read the source files themselves (append and dynamic overwrite only)."""
        ...

    def check(self, table: Table, key: Sequence[str], *, unique: bool, required: bool) -> pa.Table | None:
        """Check the rows (no null in ``key`` or, when ``required``, in a column the table requires; each key once
        when ``unique``); the batch's distinct keys in the table's key types when they were collected, else None."""
        ...

    def conformed(self, schema: Schema) -> IngestRows:
        """These rows cast and ordered as ``schema`` (the checked table schema) says."""
        ...

    def write(self, context: WriteContext) -> list[WrittenFile]:
        """The rows written as data files."""
        ...

    def write_with_kept(self, keep: RowsToKeep, context: WriteContext, written: list[WrittenFile]) -> None:
        """The rows and the table's rows ``keep`` reads, written as data files (``context`` stores lineage on v3)
        and appended to ``written`` as each write ends (a later failure still deletes them)."""
        ...

    def key_range(self, key_schema: Schema, key_columns: Sequence[str]) -> BooleanExpression:
        """The planner's filter for the batch's keys (``key_schema``): within their (min, max) on each of
        ``key_columns``."""
        ...

    def write_keyed(self, request: KeyedWrite, written: list[WrittenFile]) -> KeyedWriteResult:
        """The deletes of an upsert or delete, and an upsert's rows (step 3), appended to ``written`` as each
        write ends."""
        ...


def reads_source_files_directly(options: IngestOptions) -> bool:
    """True for the modes whose source rows only get written (a Parquet source may then skip Spark's reader)."""
    return options.mode == "append" or (options.mode == "overwrite" and options.overwrite_filter is None)


def ingest_table(catalog_name: str, identifier: str, rows: IngestRows, options: IngestOptions) -> IngestResult:
    """Run one ingest (module doc) and return its result."""
    check_options(options)
    if rows.reads_files_directly and not reads_source_files_directly(options):
        raise ValueError(f"a ParquetSource serves append and dynamic overwrite only, not --mode {options.mode}")
    outcome = IngestOutcome()
    started = time.perf_counter()
    log.info("plan: %s into %s ...", options.mode, identifier)
    catalog: Catalog = load_catalog(catalog_name)
    table = load_or_create_table(catalog, identifier, rows.arrow_schema, options)
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
    checked = check_source_schema(table, rows.arrow_schema, options)
    shipped_keys = rows.check(table, options.key, unique=options.mode == "upsert", required=options.mode != "delete")
    outcome.phases["plan"] = time.perf_counter() - started
    log.info("plan done in %.1f s (snapshot %s); write ...", outcome.phases["plan"], start_id)
    context = WriteContext.for_table(table, schema=checked.schema)
    if not rows.reads_files_directly and options.mode != "delete":  # a ParquetSource's writer conforms batches
        rows = rows.conformed(checked.schema)
    written: list[WrittenFile] = []
    result: CommitResult | None = None
    try:
        started = time.perf_counter()
        try:
            change = _write(
                table, rows, options, context=context, written=written, outcome=outcome, shipped_keys=shipped_keys
            )
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


def _write(
    table: Table,
    rows: IngestRows,
    options: IngestOptions,
    *,
    context: WriteContext,
    written: list[WrittenFile],
    outcome: IngestOutcome,
    shipped_keys: pa.Table | None,
) -> SnapshotChange | None:
    """Write the files of the chosen mode (appending them to ``written`` as they come); the change to commit."""
    if options.mode == "append":
        written += rows.write(context)
        return append_change(written)  # an empty source commits nothing
    if options.mode == "overwrite" and options.overwrite_filter is not None:
        keep = rows_to_keep(table, options.overwrite_filter)
        # On v3 the kept rows keep their lineage; the new rows' is null (assigned on commit).
        rows.write_with_kept(keep, context.storing_row_lineage() if row_lineage_fields(table) else context, written)
        return overwrite_change(written, set(keep.removed_paths), kept_free=None)
    if options.mode == "overwrite":
        written += rows.write(context)
        partitions = written_partitions(written)
        return overwrite_change(written, files_in_partitions(table, partitions), kept_free=partitions)
    key_schema = table.schema().select(*options.key)
    columns = range_key_columns(key_schema)
    if shipped_keys is None:
        key_range = rows.key_range(key_schema, columns)
    else:
        key_range = key_range_filter(columns, key_bounds(shipped_keys, columns) if columns else None)
    position_mode = options.delete_mode == "position"
    files = files_that_may_hold_keys(
        table, list(options.key), key_range, with_position_deletes=position_mode, batch_keys=shipped_keys
    )
    # On v3 an upsert by position keeps each replaced row's _row_id in the row written in its place (as Iceberg
    # Java's MERGE does); equality deletes read no row, so there the new rows get new ids (as the spec says).
    upsert = options.mode == "upsert"
    keeps_row_ids = upsert and position_mode and bool(row_lineage_fields(table))
    request = KeyedWrite(table, context, options.key, files, shipped_keys, options.delete_mode, upsert, keeps_row_ids)
    keyed = rows.write_keyed(request, written)
    outcome.rows_deleted = keyed.rows_deleted
    return row_level_change(
        written,
        options,
        keyed.required,
        replaced_vectors=keyed.replaced_vectors,
        replaced_position_deletes=keyed.replaced_position_deletes,
        deletion_vectors=table.metadata.format_version >= 3,
    )


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
