"""Open a merge-on-read read on the driver: table, snapshot, read schema, plan, and the context executors need.

1. Load the table through pyiceberg's configuration and resolve the snapshot (current, id, ref or as-of time).
2. Choose the output columns (all, or the named ones in the given order) from the snapshot's read schema; a name
   no column has may be one of Iceberg's metadata columns (``planning.metadata_columns``: ``_file``, ``_pos``,
   ``_spec_id``, ``_partition``, and on v3 ``_row_id``, ``_last_updated_sequence_number``).
3. Plan the scan (pruning, delete attachment, splitting and packing).
4. Build the read schema: output fields, then fields only the filter needs, then fields only equality deletes
   need; an equality field id of a dropped column is taken from the newest schema that still has it.
5. Return a ``ReadSession``: tasks + a picklable ``ScanContext``; ``to_arrow`` runs it in-process.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import bind, extract_field_ids
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import NestedField

from spark_jobs.engine.planning.file_selection import RemoteManifestReader
from spark_jobs.engine.planning.metadata_columns import FILE_CONSTANT_IDS, metadata_field, with_file_constants
from spark_jobs.engine.planning.planning_mode import PlanningMode
from spark_jobs.engine.planning.scan_context import DEFAULT_BATCH_SIZE, ScanContext
from spark_jobs.engine.planning.scan_planner import ScanPlan, plan_scan
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, ScanTask
from spark_jobs.engine.read.task_scan import read_tasks_to_table
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.shared.storage import file_io_properties
from spark_jobs.engine.table.catalog import load_catalog, load_table
from spark_jobs.engine.table.properties import NAME_MAPPING_PROPERTY
from spark_jobs.engine.table.snapshots import resolve_read_target

log = logging.getLogger(__name__)
ALWAYS_TRUE = AlwaysTrue()

# Equality-delete columns that are not in the read schema get internal names, so they can never clash with a
# column of the same name (a dropped column re-added under a new field id).
EQUALITY_FIELD_PREFIX = "_equality_delete_field_"


@dataclass
class ReadSession:
    """A planned read: the tasks, the context to run them, and what was chosen on the way."""

    table_name: str
    snapshot_id: int | None
    plan: ScanPlan
    context: ScanContext
    planning_seconds: float
    metrics: ScanMetrics = field(default_factory=ScanMetrics)
    # Every schema of the table: which files a plain Parquet reader may read depends on them (``plain_files``).
    table_schemas: tuple[Schema, ...] = ()

    @property
    def tasks(self) -> list[ScanTask]:
        """The packed scan tasks."""
        return self.plan.tasks

    @property
    def output_schema(self) -> pa.Schema:
        """The Arrow schema of the result."""
        return self.context.output_schema

    def to_arrow(self) -> pa.Table:
        """Run every task in this process and return the result as one Arrow table."""
        return read_tasks_to_table(self.tasks, self.context, self.metrics)

    def keep_only_files(self, paths: frozenset[str]) -> None:
        """Drop every slice of a data file not in ``paths`` (and the tasks left empty): a count that the manifests
        answer for the other files scans only these."""
        tasks = [ScanTask(tuple(s for s in task.slices if s.path in paths)) for task in self.tasks]
        self.plan = dataclasses.replace(self.plan, tasks=[task for task in tasks if task.slices])


def narrowest_column(schema: Schema) -> NestedField:
    """The column cheapest to read when only rows are counted: the first primitive top-level field."""
    return min(schema.fields, key=lambda f: (not f.field_type.is_primitive, f.field_id))


def open_read_session(
    catalog: str | Any,
    table: str | Table,
    *,
    columns: list[str] | tuple[str, ...] | None = None,
    row_filter: str | BooleanExpression | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
    case_sensitive: bool = True,
    split_size: int | None = None,
    parallelism: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    remote: RemoteManifestReader | None = None,
    planning_mode: PlanningMode | None = None,
    key_sets: Mapping[int, np.ndarray] | None = None,
) -> ReadSession:
    """Plan a read of ``table`` (``ns.table``, or a loaded Table) through ``catalog`` (a name or a Catalog).

    ``parallelism`` is the number of slots that will run the tasks (Spark's); the split size adapts to it unless
    ``split_size`` is given (``planning.splitting``). ``remote`` (the Spark executors) reads the manifests when
    ``planning_mode`` (else the table's read.*-planning-mode properties) says so (``planning.planning_mode``).
    """
    started = time.perf_counter()
    if isinstance(table, Table):
        iceberg_table = table
    else:
        catalog_object = load_catalog(catalog) if isinstance(catalog, str) else catalog
        iceberg_table = load_table(catalog_object, table)
    table_name = ".".join(iceberg_table.name())
    target = resolve_read_target(iceberg_table, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    output_fields = select_output_fields(
        table_name, target.schema, columns, metadata=lambda name: metadata_field(iceberg_table, name)
    )
    metrics = ScanMetrics()
    plan = plan_scan(
        iceberg_table,
        target.snapshot,
        schema=target.schema,
        row_filter=row_filter,
        case_sensitive=case_sensitive,
        split_size=split_size,
        parallelism=parallelism,
        metrics=metrics,
        remote=remote,
        planning_mode=planning_mode,
        key_sets=key_sets,
    )
    if any(f.field_id in FILE_CONSTANT_IDS for f in output_fields):
        output_ids = [f.field_id for f in output_fields]
        tasks = [ScanTask(tuple(with_file_constants(iceberg_table, task.slices, output_ids))) for task in plan.tasks]
        plan = dataclasses.replace(plan, tasks=tasks)
    context = build_scan_context(
        iceberg_table,
        target.schema,
        output_fields,
        (),
        equality_field_ids=plan.equality_field_ids,
        row_filter=plan.row_filter,
        case_sensitive=case_sensitive,
        batch_size=batch_size,
    )
    elapsed = time.perf_counter() - started
    session = ReadSession(
        table_name=table_name,
        snapshot_id=target.snapshot.snapshot_id if target.snapshot else None,
        plan=plan,
        context=context,
        planning_seconds=elapsed,
        metrics=metrics,
        table_schemas=tuple(iceberg_table.metadata.schemas),
    )
    log.info(
        "planned %s at snapshot %s: %d tasks, %d data files (%d pruned), %d manifests (%d pruned) in %.2fs",
        table_name,
        session.snapshot_id,
        len(plan.tasks),
        metrics.data_files_total - metrics.data_files_pruned,
        metrics.data_files_pruned,
        metrics.manifests_total,
        metrics.manifests_pruned,
        elapsed,
    )
    return session


def select_output_fields(
    table_name: str,
    schema: Schema,
    columns: list[str] | tuple[str, ...] | None,
    metadata: Callable[[str], NestedField | None] = lambda _: None,
) -> list[NestedField]:
    """The top-level fields to return: all of them, or the named ones in the order given; a name no column has is
    looked up among the metadata columns (``metadata``)."""
    if not columns:
        return list(schema.fields)
    by_name = {f.name: f for f in schema.fields}
    for name in columns:
        if name not in by_name:
            found = metadata(name)
            if found is not None:
                by_name[name] = found
    unknown = [name for name in columns if name not in by_name]
    if unknown:
        raise UserInputError(
            f"table {table_name} has no column {', '.join(map(repr, unknown))}; columns: "
            f"{', '.join(f.name for f in schema.fields)}"
        )
    if len(set(columns)) != len(columns):
        raise UserInputError(f"columns for table {table_name} name a column twice: {list(columns)}")
    return [by_name[name] for name in columns]


def build_scan_context(
    table: Table,
    schema: Schema,
    output_fields: Sequence[NestedField],
    slices: Sequence[DataFileSlice],
    *,
    equality_field_ids: Iterable[int] = (),
    row_filter: BooleanExpression = ALWAYS_TRUE,
    case_sensitive: bool = True,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> ScanContext:
    """The context of a scan of ``table`` at ``schema`` returning ``output_fields`` from the planned ``slices``
    (or, for a plan's many slices, the ``equality_field_ids`` their equality deletes compare on).

    The read schema is built as the module doc says (step 4); FileIO and name mapping are the table's.
    """
    bound_filter = row_filter if isinstance(row_filter, AlwaysTrue) else bind(schema, row_filter, case_sensitive)
    equality_ids = set(equality_field_ids) | {
        field_id for s in slices for d in s.equality_deletes for field_id in d.equality_ids
    }
    read_schema = build_read_schema(table, schema, output_fields, bound_filter, equality_ids)
    return ScanContext(
        read_schema_json=read_schema.model_dump_json(),
        output_field_ids=tuple(f.field_id for f in output_fields),
        row_filter=row_filter,
        case_sensitive=case_sensitive,
        io_properties=file_io_properties(table.io.properties),
        table_location=table.metadata.location,
        name_mapping_json=table.metadata.properties.get(NAME_MAPPING_PROPERTY),
        batch_size=batch_size,
    )


def build_read_schema(
    table: Table,
    schema: Schema,
    output_fields: Sequence[NestedField],
    bound_filter: BooleanExpression,
    equality_ids: set[int],
) -> Schema:
    """Output fields, then top-level fields the filter needs, then equality-delete fields (see module doc)."""
    fields: list[NestedField] = list(output_fields)
    chosen = {f.field_id for f in fields}

    def top_level_field_of(field_id: int) -> NestedField | None:
        for top in schema.fields:
            if top.field_id == field_id or field_id in _nested_ids(top):
                return top
        return None

    filter_ids = extract_field_ids(bound_filter)
    for field_id in sorted(filter_ids) + sorted(equality_ids - filter_ids):
        top = top_level_field_of(field_id)
        if top is not None:
            if top.field_id not in chosen:
                fields.append(top)
                chosen.add(top.field_id)
            continue
        if field_id in chosen:
            continue
        historical = _newest_historical_field(table, field_id)
        fields.append(
            NestedField(field_id, f"{EQUALITY_FIELD_PREFIX}{field_id}", historical.field_type, required=False)
        )
        chosen.add(field_id)
    return Schema(*fields, schema_id=schema.schema_id)


def _nested_ids(top: NestedField) -> set[int]:
    return set(Schema(top).field_ids) - {top.field_id}


def _newest_historical_field(table: Table, field_id: int) -> NestedField:
    for old_schema in sorted(table.metadata.schemas, key=lambda s: s.schema_id, reverse=True):
        try:
            return old_schema.find_field(field_id)
        except ValueError:
            continue
    raise UserInputError(
        f"table {'.'.join(table.name())}: an equality delete file names field id {field_id}, "
        "which no schema of the table has"
    )
