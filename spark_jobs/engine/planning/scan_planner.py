"""Plan a merge-on-read scan of one snapshot: which slices of which data files, with which deletes, in which task.

1. Parse the row filter (pyiceberg's row-filter syntax with variant-path and geo box forms, ``filter_parsing``; or
   an expression) and bind it to the read schema; a syntax error, a malformed call, an unknown column or a column
   of the wrong type is an ``InvalidFilterError`` naming the table.
2. Select the data files and their deletes from the manifests, as columns (``file_selection``): partition
   summaries, partition values and column metrics prune; the delete index attaches to each data file exactly the
   deletes that apply; each file gets the identity-partition constants of its own spec. Manifests are read in
   this process or, by the planning mode, on the executors of ``remote``.
3. Split data files on row-group boundaries and pack the slices into tasks (``planned_files``, ``splitting``), with
   the table's read.split.* properties unless overridden; tasks make their slice objects when first read.
4. Count tasks and applied delete files into the scan's ``ScanMetrics``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import bind
from pyiceberg.manifest import ManifestEntry
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot
from pyparsing import ParseException

from spark_jobs.engine.planning.delete_index import AppliedDeletes
from spark_jobs.engine.planning.file_selection import RemoteManifestReader, select_files
from spark_jobs.engine.planning.filter_parsing import parse_row_filter
from spark_jobs.engine.planning.planned_files import identity_partition_constants
from spark_jobs.engine.planning.planning_mode import PlanningMode
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, ScanTask
from spark_jobs.engine.planning.splitting import (
    SplitSettings,
    adaptive_split_size_enabled,
    adaptive_split_size_for,
)
from spark_jobs.engine.shared.errors import InvalidFilterError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_entries import first_row_id, partition_values
from spark_jobs.engine.table.snapshots import schema_for_snapshot


@dataclass(frozen=True)
class ScanPlan:
    """The tasks of a scan and what executors need besides them: schema, filters, snapshot, and planning counters."""

    tasks: list[ScanTask]
    schema: Schema
    snapshot: Snapshot | None
    row_filter: BooleanExpression  # unbound, as parsed
    bound_filter: BooleanExpression  # bound to ``schema`` (field ids)
    case_sensitive: bool
    metrics: ScanMetrics
    # Every field id an attached equality delete compares on (the read schema must hold them).
    equality_field_ids: frozenset[int] = frozenset()


def plan_scan(
    table: Table,
    snapshot: Snapshot | None,
    *,
    schema: Schema | None = None,
    row_filter: BooleanExpression | str | None = None,
    case_sensitive: bool = True,
    split_size: int | None = None,
    open_file_cost: int | None = None,
    lookback: int | None = None,
    parallelism: int | None = None,
    metrics: ScanMetrics | None = None,
    remote: RemoteManifestReader | None = None,
    planning_mode: PlanningMode | None = None,
    key_sets: Mapping[int, np.ndarray] | None = None,
) -> ScanPlan:
    """Plan the scan of ``snapshot`` (None: an empty table) read with ``schema``.

    ``schema`` defaults to ``schema_for_snapshot(table, snapshot)``; pass ``snapshots.resolve_read_target(...)``'s
    schema to read as Iceberg Java does for current-state and branch reads. ``split_size``, ``open_file_cost`` and
    ``lookback`` override the table's read.split.* properties. With ``parallelism`` (the reader's slots) and no
    ``split_size``, the split size adapts to it as Iceberg Java's Spark scans do (``splitting`` module doc).
    ``remote`` reads manifests elsewhere (Spark executors) when ``planning_mode`` (else the table's
    read.*-planning-mode properties) says so; without it every manifest is read here. ``key_sets`` (field id ->
    sorted key values) keeps only files whose bounds may hold a key of each (an upsert's key scan).
    """
    read_schema = schema if schema is not None else schema_for_snapshot(table, snapshot)
    unbound_filter, bound_filter = bind_row_filter(table, read_schema, row_filter, case_sensitive)
    scan_metrics = metrics if metrics is not None else ScanMetrics()
    settings = SplitSettings.from_table_properties(
        table.properties, split_size=split_size, open_file_cost=open_file_cost, lookback=lookback
    )
    tasks: list[ScanTask] = []
    equality_field_ids: frozenset[int] = frozenset()
    if snapshot is not None:
        files = select_files(
            table,
            snapshot,
            schema=read_schema,
            row_filter=unbound_filter,
            case_sensitive=case_sensitive,
            metrics=scan_metrics,
            remote=remote,
            planning_mode=planning_mode,
            key_sets=key_sets,
        )
        if parallelism is not None and split_size is None and adaptive_split_size_enabled(table.properties):
            chosen = adaptive_split_size_for(
                files.scan_weight(settings.open_file_cost),
                lambda size: files.task_count(replace(settings, split_size=size)),
                settings,
                parallelism,
            )
            settings = replace(settings, split_size=chosen)
        tasks = files.tasks(settings)
        equality_field_ids = files.equality_field_ids
    scan_metrics.tasks += len(tasks)
    return ScanPlan(
        tasks, read_schema, snapshot, unbound_filter, bound_filter, case_sensitive, scan_metrics, equality_field_ids
    )


@functools.lru_cache(maxsize=256)
def _parsed(row_filter: str) -> BooleanExpression:
    """A row filter's text parsed once per process (the parser costs milliseconds; warm plans ask again)."""
    return parse_row_filter(row_filter)


def bind_row_filter(
    table: Table, schema: Schema, row_filter: BooleanExpression | str | None, case_sensitive: bool
) -> tuple[BooleanExpression, BooleanExpression]:
    """The row filter parsed (unbound) and bound to ``schema``; errors name the table and what is wrong."""
    if row_filter is None or (isinstance(row_filter, str) and not row_filter.strip()):
        return AlwaysTrue(), AlwaysTrue()
    table_name = ".".join(table.name())
    if isinstance(row_filter, str):
        try:
            unbound = _parsed(row_filter)
        except ParseException as error:
            rest = row_filter[error.loc :].strip()
            where = f"near {rest[:40]!r}" if rest else "at its end"
            raise InvalidFilterError(
                f"row filter {row_filter!r} for table {table_name} does not parse at column {error.col}, {where}; "
                "expected pyiceberg's row-filter syntax, e.g. \"category = 'a' AND id < 100\""
            ) from None
        except ValueError as error:
            raise InvalidFilterError(
                f"row filter {row_filter!r} for table {table_name} is not valid: {error}", argument="row_filter"
            ) from None
    else:
        unbound = row_filter
    try:
        return unbound, bind(schema, unbound, case_sensitive)
    except (ValueError, TypeError) as error:
        columns = ", ".join(field.name for field in schema.fields)
        raise InvalidFilterError(
            f"row filter {str(row_filter)!r} for table {table_name} cannot be applied: {error}; columns: {columns}"
        ) from None


def whole_file_slice(entry: ManifestEntry, spec: PartitionSpec, deletes: AppliedDeletes) -> DataFileSlice:
    """The whole data file of ``entry`` as a slice, with its deletes, partition, constants and split offsets."""
    data_file = entry.data_file
    return DataFileSlice(
        path=data_file.file_path,
        file_size_in_bytes=data_file.file_size_in_bytes,
        record_count=data_file.record_count,
        spec_id=data_file.spec_id,
        partition_constants=identity_partition_constants(spec, data_file.partition),
        start=0,
        length=data_file.file_size_in_bytes,
        position_deletes=deletes.position_deletes,
        deletion_vector=deletes.deletion_vector,
        equality_deletes=deletes.equality_deletes,
        data_sequence_number=entry.sequence_number or 0,
        first_row_id=first_row_id(data_file),
        split_offsets=tuple(data_file.split_offsets) if data_file.split_offsets else None,
        partition=partition_values(data_file),
    )
