"""Iceberg's metadata columns by name, with the values Iceberg Java serves for them.

A read may name, beside the table's columns, the metadata columns Iceberg Java's Spark tables expose (a table column
of the same name wins, as in Spark):

- ``_file`` (the data file's location), ``_pos`` (the row's position in it, counted before any delete),
  ``_spec_id`` (the file's partition spec) and ``_partition`` (its partition values), on every table;
- ``_row_id`` and ``_last_updated_sequence_number`` (row lineage), on format v3 tables.

``_partition`` is Java's unified partition type (``Partitioning.partitionType``): one optional field per partition
field of any of the table's specs whose source column is in the current schema, ordered by partition field id, named
as the newest spec names it, typed by its transform's result; a file's row holds its spec's values and nulls for the
other fields. An unpartitioned table's is an empty struct.

1. ``metadata_field`` gives the read schema's field for a name (reserved field ids from the spec; ``_partition``'s
   nested fields get ids of their own above every column id, so they never meet a table column).
2. ``with_file_constants`` puts each planned data file's ``_file``, ``_spec_id`` and ``_partition`` values among the
   slice's per-file constants, which the per-file reader repeats for every row it returns (``_pos`` and the lineage
   columns are computed per row there).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from pyiceberg.table import Table
from pyiceberg.types import IntegerType, NestedField, StringType, StructType

from spark_jobs.engine.planning.scan_context import ROW_LINEAGE, ROW_LINEAGE_FORMAT_VERSION, ROW_POSITION
from spark_jobs.engine.planning.scan_tasks import DataFileSlice

FILE_PATH = NestedField(
    2147483646, "_file", StringType(), required=True, doc="Path of the file in which a row is stored"
)
SPEC_ID = NestedField(
    2147483643, "_spec_id", IntegerType(), required=True, doc="Spec ID used to track the file containing a row"
)
PARTITION_ID = 2147483642
PARTITION_NAME = "_partition"
# _partition's nested fields: this plus the partition field id (partition field ids start at 1000).
_PARTITION_FIELD_ID_BASE = 2_000_000_000
FILE_CONSTANT_IDS = frozenset({FILE_PATH.field_id, SPEC_ID.field_id, PARTITION_ID})


def metadata_column_names(table: Table) -> tuple[str, ...]:
    """The metadata columns a read of ``table`` may name."""
    names: tuple[str, ...] = (FILE_PATH.name, ROW_POSITION.name, SPEC_ID.name, PARTITION_NAME)
    if table.format_version >= ROW_LINEAGE_FORMAT_VERSION:
        names += tuple(field.name for field in ROW_LINEAGE)
    return names


def metadata_field(table: Table, name: str) -> NestedField | None:
    """The read schema's field of metadata column ``name`` of ``table``, None when it names none (module doc)."""
    if name not in metadata_column_names(table):
        return None
    if name == PARTITION_NAME:
        return NestedField(PARTITION_ID, PARTITION_NAME, partition_type(table), required=False, doc="Partition")
    fixed = {field.name: field for field in (FILE_PATH, ROW_POSITION, SPEC_ID, *ROW_LINEAGE)}
    return fixed[name]


def partition_type(table: Table) -> StructType:
    """Java's unified partition type of ``table`` (module doc), nested ids renumbered (step 1)."""
    schema = table.schema()
    names: dict[int, str] = {}
    types: dict[int, Any] = {}
    for spec in sorted(table.specs().values(), key=lambda s: s.spec_id, reverse=True):
        for spec_field in spec.fields:
            if spec_field.field_id in names or schema._lazy_id_to_field.get(spec_field.source_id) is None:
                continue
            names[spec_field.field_id] = spec_field.name
            types[spec_field.field_id] = spec_field.transform.result_type(schema.find_type(spec_field.source_id))
    return StructType(
        *(
            NestedField(_PARTITION_FIELD_ID_BASE + field_id, names[field_id], types[field_id], required=False)
            for field_id in sorted(names)
        )
    )


def with_file_constants(table: Table, slices: Sequence[DataFileSlice], field_ids: Iterable[int]) -> list[DataFileSlice]:
    """``slices`` with the values of the file-level metadata columns among ``field_ids`` (module doc, step 2)."""
    wanted = set(field_ids) & FILE_CONSTANT_IDS
    if not wanted:
        return list(slices)
    unified = partition_type(table) if PARTITION_ID in wanted else StructType()
    names_by_partition_field = {f.field_id - _PARTITION_FIELD_ID_BASE: f.name for f in unified.fields}
    specs = table.specs()
    changed = []
    for data_file in slices:
        constants = dict(data_file.partition_constants)
        if FILE_PATH.field_id in wanted:
            constants[FILE_PATH.field_id] = data_file.path
        if SPEC_ID.field_id in wanted:
            constants[SPEC_ID.field_id] = data_file.spec_id
        if PARTITION_ID in wanted:
            values = dict.fromkeys(names_by_partition_field.values())
            for spec_field, value in zip(specs[data_file.spec_id].fields, data_file.partition, strict=False):
                name = names_by_partition_field.get(spec_field.field_id)
                if name is not None:
                    values[name] = value
            constants[PARTITION_ID] = values
        changed.append(dataclasses.replace(data_file, partition_constants=constants))
    return changed
