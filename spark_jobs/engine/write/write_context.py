"""What executors need to write files for one job (picklable), and the per-task entry points they call.

The driver builds one ``WriteContext`` from the loaded table; each executor task calls ``write_data`` (rows to data
files, split by partition and sorted) or ``write_data_stream`` (the same from batches as they are read: streamed
through one rolling writer per partition when the table is unsorted, gathered first when a sort order needs every
row), ``write_position_delete_rows`` or ``write_equality_delete_rows`` (one
partition's delete rows) and returns the plain dicts describing the files it wrote. File names carry the job's
write id and the task's tag, so every file a job wrote can be found (and deleted) by name.
"""

from __future__ import annotations

import dataclasses
import itertools
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.locations import LocationProvider, load_location_provider
from pyiceberg.table.sorting import SortOrder
from pyiceberg.typedef import Record

from spark_jobs.engine.planning.scan_context import with_row_lineage
from spark_jobs.engine.shared.errors import RequiredColumnNullsError
from spark_jobs.engine.shared.storage import file_io_properties
from spark_jobs.engine.write.arrow_schema import conform_to_schema, file_arrow_schema, stored_schema
from spark_jobs.engine.write.delete_files import write_equality_deletes, write_position_deletes
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.parquet_files import FileTarget, RollingParquetWriter, write_files
from spark_jobs.engine.write.partitioning import split_by_partition
from spark_jobs.engine.write.sorting import sort_by_order


@dataclass(frozen=True)
class WriteContext:
    """The table's write-relevant metadata, shipped to executors as JSON and plain values."""

    schema_json: str
    specs_json: dict[int, str]
    default_spec_id: int
    sort_order_json: str | None
    sort_order_id: int | None
    properties: dict[str, str]
    table_location: str
    io_properties: dict[str, str] = field(repr=False)  # storage credentials: shipped, never printed
    write_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @classmethod
    def for_table(cls, table: Table, schema: Schema | None = None) -> WriteContext:
        """The context for writing to ``table`` with its current (or the given, evolved) schema."""
        sort_order = table.sort_order()
        return cls(
            schema_json=(schema or table.schema()).model_dump_json(),
            specs_json={spec_id: spec.model_dump_json() for spec_id, spec in table.specs().items()},
            default_spec_id=table.spec().spec_id,
            sort_order_json=None if sort_order.is_unsorted else sort_order.model_dump_json(),
            sort_order_id=sort_order.order_id,
            properties=dict(table.properties),
            table_location=table.metadata.location,
            io_properties=file_io_properties(table.io.properties),
        )

    @cached_property
    def schema(self) -> Schema:
        """The schema data files are written with."""
        return Schema.model_validate_json(self.schema_json)

    def storing_row_lineage(self) -> WriteContext:
        """This context writing data files that also store each row's ``_row_id`` and
        ``_last_updated_sequence_number`` (null where the commit assigns them: a new row's id, the new sequence
        number); the same write id."""
        return dataclasses.replace(self, schema_json=with_row_lineage(self.schema).model_dump_json())

    @cached_property
    def file_schema(self) -> pa.Schema:
        """The Arrow schema data files are written with (field ids in the metadata), derived once per process."""
        return file_arrow_schema(self.schema)

    @cached_property
    def required_columns(self) -> tuple[str, ...]:
        """Top-level columns the schema requires: no row written may hold a null in them."""
        return tuple(f.name for f in self.schema.fields if f.required)

    def spec(self, spec_id: int | None = None) -> PartitionSpec:
        """A partition spec of the table (the default one without an id)."""
        return PartitionSpec.model_validate_json(self.specs_json[self.default_spec_id if spec_id is None else spec_id])

    @cached_property
    def sort_order(self) -> SortOrder | None:
        """The table's default sort order, or None when unsorted."""
        return SortOrder.model_validate_json(self.sort_order_json) if self.sort_order_json else None

    @cached_property
    def io(self) -> FileIO:
        """The table's FileIO, rebuilt in this process."""
        return load_file_io(self.io_properties, self.table_location)

    @cached_property
    def locations(self) -> LocationProvider:
        """The table's location provider (data file paths)."""
        return load_location_provider(self.table_location, self.properties)

    def target(self, spec_id: int, partition_values: tuple[Any, ...], task_tag: str, kind: str) -> FileTarget:
        """Where one task writes files of one partition (names: ``<write id>-<task>-<n>-<kind>.parquet``)."""
        spec = self.spec(spec_id)
        prefix = "" if spec.is_unpartitioned() else spec.partition_to_path(Record(*partition_values), self.schema) + "/"
        counter = itertools.count()

        def new_path() -> str:
            name = f"{prefix}{self.write_id}-{task_tag}-{next(counter):05d}-{kind}.parquet"
            return self.locations.new_data_location(name)

        return FileTarget(
            io=self.io,
            new_path=new_path,
            schema=stored_schema(self.schema),
            properties=self.properties,
            spec_id=spec_id,
            partition_values=partition_values,
            sort_order_id=self.sort_order_id if kind == "data" else None,
        )

    def __getstate__(self) -> dict[str, Any]:
        """Ship the declared fields only; cached objects are rebuilt on the other side."""
        return {key: value for key, value in self.__dict__.items() if key in self.__dataclass_fields__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def write_data(rows: pa.Table, context: WriteContext, task_tag: str) -> list[WrittenFile]:
    """Write ``rows`` as data files of the default spec: conformed, split by partition, sorted, rolled.

    Nulls in a column the table requires raise ``RequiredColumnNullsError`` before anything is written.
    """
    conformed = conform_to_schema(rows, context.schema, context.file_schema)
    nulls = required_null_counts(conformed, context.required_columns)
    if nulls:
        raise RequiredColumnNullsError(nulls)
    spec = context.spec()
    written = []
    for index, (partition_values, partition_rows) in enumerate(split_by_partition(conformed, context.schema, spec)):
        ordered = sort_by_order(partition_rows, context.schema, context.sort_order)
        target = context.target(spec.spec_id, partition_values, f"{task_tag}-p{index}", "data")
        written.extend(write_files(ordered, target))
    return written


def write_data_stream(
    batches: Iterable[pa.RecordBatch], context: WriteContext, task_tag: str, schema: pa.Schema
) -> list[WrittenFile]:
    """Write ``batches`` (of Arrow ``schema``) as ``write_data`` does, holding at most a row group per partition.

    A sorted table needs all of a task's rows before the first is written, so its batches are gathered and handed
    to ``write_data``; an unsorted table's batches are split by partition and streamed to one rolling writer per
    partition (files named by the order partitions first appear). Nulls in a column the table requires stop the
    writing; the remaining batches are still counted, and ``RequiredColumnNullsError`` says how many rows hold them
    (the files already written carry the job's write id, for the driver to delete).
    """
    if context.sort_order is not None:
        return write_data(pa.Table.from_batches(list(batches), schema=schema), context, task_tag)
    spec = context.spec()
    writers: dict[tuple[Any, ...], RollingParquetWriter] = {}
    nulls: dict[str, int] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        conformed = conform_to_schema(pa.Table.from_batches([batch]), context.schema, context.file_schema)
        found = required_null_counts(conformed, context.required_columns)
        if found or nulls:
            for name, count in found.items():
                nulls[name] = nulls.get(name, 0) + count
            continue
        for partition_values, partition_rows in split_by_partition(conformed, context.schema, spec):
            writer = writers.get(partition_values)
            if writer is None:
                tag = f"{task_tag}-p{len(writers)}"
                target = context.target(spec.spec_id, partition_values, tag, "data")
                writer = writers[partition_values] = RollingParquetWriter(target, conformed.schema)
            writer.write(partition_rows)
    written = [item for writer in writers.values() for item in writer.close()]
    if nulls:
        raise RequiredColumnNullsError(nulls)
    return written


def required_null_counts(rows: pa.Table, required: tuple[str, ...]) -> dict[str, int]:
    """Rows holding a null, per required column that has any (Arrow keeps null counts: no scan of the values)."""
    return {name: rows.column(name).null_count for name in required if rows.column(name).null_count}


def write_position_delete_rows(
    positions: pa.Table, context: WriteContext, spec_id: int, partition_values: tuple[Any, ...], task_tag: str
) -> list[WrittenFile]:
    """Write one partition's deleted positions (file_path, pos) as position delete files."""
    return write_position_deletes(positions, context.target(spec_id, partition_values, task_tag, "deletes"))


def write_equality_delete_rows(
    keys: pa.Table,
    context: WriteContext,
    *,
    key_names: list[str],
    spec_id: int,
    partition_values: tuple[Any, ...],
    task_tag: str,
) -> list[WrittenFile]:
    """Write one partition's deleted keys as equality delete files on the key columns."""
    target = context.target(spec_id, partition_values, task_tag, "eq-deletes")
    return write_equality_deletes(keys, context.schema, key_names, target)
