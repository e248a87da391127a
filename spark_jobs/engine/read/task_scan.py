"""Run scan tasks end to end on an executor: deletes loaded, data files read with pruning, Arrow batches out.

1. ``ScanContext`` (picklable, built once on the driver) carries the read schema as JSON, the output field ids, the
   unbound row filter and the FileIO properties; each executor process rebuilds the schema, the bound filter and
   the FileIO once and caches them.
2. Per data file slice: files without deletes take the plain path; otherwise the deleted positions (deletion
   vector, or position delete files) and the equality delete sets are loaded (cached per process).
3. ``parquet.opener.read_data_file`` prunes and reads the slice, applying the filter and the deletes.
4. Batches keep the output Arrow schema even when a slice yields nothing, so consumers see one schema.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import bind
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.schema import Schema

from spark_jobs.engine.deletes import load_deleted_positions, load_equality_deletes
from spark_jobs.engine.parquet.opener import read_data_file
from spark_jobs.engine.parquet.schema_projection import output_arrow_schema
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, ScanTask
from spark_jobs.engine.shared.metrics import ScanMetrics

IN_PROCESS_SLICE_THREADS = 2  # data file slices read at once by read_tasks_to_table

DEFAULT_BATCH_SIZE = 131_072


@dataclass(frozen=True)
class ScanContext:
    """Everything an executor needs to run any task of one scan, besides the task itself."""

    read_schema_json: str
    output_field_ids: tuple[int, ...]
    row_filter: BooleanExpression = field(default_factory=AlwaysTrue)
    case_sensitive: bool = True
    io_properties: dict[str, str] = field(default_factory=dict)
    table_location: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    name_mapping_json: str | None = None  # the table's schema.name-mapping.default, for files without field ids

    @cached_property
    def read_schema(self) -> Schema:
        """Output fields first, then the fields only the filter or equality deletes need."""
        return Schema.model_validate_json(self.read_schema_json)

    @cached_property
    def bound_filter(self) -> BooleanExpression:
        """The row filter bound to the read schema (by field id)."""
        if isinstance(self.row_filter, AlwaysTrue):
            return AlwaysTrue()
        return bind(self.read_schema, self.row_filter, self.case_sensitive)

    @cached_property
    def io(self) -> FileIO:
        """The table's FileIO, rebuilt from its properties in this process."""
        return load_file_io(self.io_properties, self.table_location)

    @cached_property
    def output_schema(self) -> pa.Schema:
        """The Arrow schema of every batch this scan yields."""
        return output_arrow_schema(self.read_schema, self.output_field_ids)

    @cached_property
    def field_types(self) -> dict[int, Any]:
        """Field id -> Iceberg type of every field of the read schema (equality deletes compare in these types)."""
        return {field_id: nested.field_type for field_id, nested in self.read_schema._lazy_id_to_field.items()}

    def __getstate__(self) -> dict[str, Any]:
        """Ship only the declared fields; cached derivatives are rebuilt on the other side."""
        cached = {"read_schema", "bound_filter", "io", "output_schema", "field_types"}
        return {key: value for key, value in self.__dict__.items() if key not in cached}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def read_task(task: ScanTask, context: ScanContext, metrics: ScanMetrics) -> Iterator[pa.RecordBatch]:
    """Yield the surviving rows of every slice of ``task`` as batches of ``context.output_schema``."""
    for data_file in task.slices:
        yield from read_slice(data_file, context, metrics)


def read_slice(data_file: DataFileSlice, context: ScanContext, metrics: ScanMetrics) -> Iterator[pa.RecordBatch]:
    """Yield the surviving rows of one data file slice, deletes applied."""
    deleted_positions = None
    deleted_positions_kind = "position_deletes"
    equality_delete_sets: Sequence[Any] = ()
    if data_file.deletion_vector is not None or data_file.position_deletes:
        deleted = load_deleted_positions(data_file, io=context.io, metrics=metrics)
        if deleted.count and deleted.kind is not None:
            deleted_positions, deleted_positions_kind = deleted.positions, deleted.kind
    if data_file.equality_deletes:
        equality_delete_sets = load_equality_deletes(
            data_file, io=context.io, field_types=context.field_types, metrics=metrics
        )
    yield from read_data_file(
        data_file,
        io=context.io,
        read_schema=context.read_schema,
        output_field_ids=context.output_field_ids,
        row_filter=context.bound_filter,
        deleted_positions=deleted_positions,
        deleted_positions_kind=deleted_positions_kind,
        row_predicates=equality_delete_sets,
        metrics=metrics,
        batch_size=context.batch_size,
        name_mapping_json=context.name_mapping_json,
        output_schema=context.output_schema,
    )


def read_tasks_to_table(tasks: Sequence[ScanTask], context: ScanContext, metrics: ScanMetrics) -> pa.Table:
    """Run tasks in this process and collect the result, in task order (in-process reads, tests, benchmarks).

    Slices are read ``IN_PROCESS_SLICE_THREADS`` at a time, each with its own counters (merged at the end): one file
    at a time leaves the cores idle while a file is opened and its last row groups decode.
    """
    slices = [data_file for task in tasks for data_file in task.slices]

    def read_one(data_file: DataFileSlice) -> tuple[list[pa.RecordBatch], ScanMetrics]:
        slice_metrics = ScanMetrics()
        return list(read_slice(data_file, context, slice_metrics)), slice_metrics

    if len(slices) > 1:
        with ThreadPoolExecutor(IN_PROCESS_SLICE_THREADS, thread_name_prefix="in-process-slices") as pool:
            results = list(pool.map(read_one, slices))
    else:
        results = [read_one(data_file) for data_file in slices]
    for _, slice_metrics in results:
        metrics.merge(slice_metrics)
    batches = [batch for slice_batches, _ in results for batch in slice_batches]
    return pa.Table.from_batches(batches, schema=context.output_schema)
