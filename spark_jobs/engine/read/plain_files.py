"""Which planned data files a plain Parquet reader, matching columns by field id, reads exactly as the engine does.

Seed 002's split: a data file no delete applies to needs none of the engine's merge-on-read work, so the query
engine's own vectorized Parquet reader (Spark's) may read it, matching columns by Iceberg field id, while the files
with deletes go through the engine. The rows must be the same either way, so a read qualifies only where such a
reader cannot differ from the engine (``plain_read_refusal`` says why not, else None):

1. Every field read (output and filter fields, and every field inside them) has a type the plain reader decodes
   as the engine does (``PLAIN_TYPES``: no uuid, time, nanosecond timestamp or format v3 type), carries no initial
   default (a plain reader reads a column a file lacks as NULLs only), is no metadata column, and below the top
   level is optional (Spark's file reader makes every nested field nullable; the engine keeps required ones).
2. The table has no name mapping: its files may lack field ids (imported, migrated), which only the engine
   resolves. (Identity-partition columns are the partition's values, as the engine reads them: the split gives
   each file its constants, ``PlainFile.constants``.)
3. The table's schema ids run without a gap from 0 (no schema was removed whose types or names old files may still
   carry), and no field read changed type in any of them (a plain reader may not promote int to long, float to
   double, or widen a decimal).
4. With a row filter, its columns are also looked up by name (Spark's Parquet filters prune row groups by the
   file's column names; a name a file lacks prunes nothing): no other field ever had a filter column's name in any
   schema (compared case-insensitively), and the name is one Parquet writers keep as it is (Iceberg Java rewrites
   names that are not valid Avro names).

Per file (``split_plain_files``): no delete applies to any of its slices, its slices cover it whole (the planner
kept every row group; Spark's reader prunes row groups by the same filter and statistics), its path holds no
character a Hadoop path would take for a glob nor a colon after its scheme (which a Hadoop path refuses), and its
name starts with neither ``_`` nor ``.`` (names Spark's file listing skips). The other slices stay in their tasks
for the engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pyiceberg.expressions.visitors import extract_field_ids
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

from spark_jobs.engine.planning.scan_context import ScanContext
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, ScanTask

PLAIN_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    StringType,
    BinaryType,
    FixedType,
    TimestampType,
    TimestamptzType,
)
# Iceberg reserves the highest field ids for metadata columns (_file, _pos, _row_id, ...).
FIRST_RESERVED_FIELD_ID = 2147483000
# A name Parquet writers keep as it is (Iceberg Java makes other names valid Avro names first).
_KEPT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Characters a Hadoop path expands as a glob pattern.
_GLOB_CHARACTERS = frozenset("*?[]{}\\")


@dataclass(frozen=True)
class PlainFile:
    """A data file a plain reader reads whole, and the identity-partition values (source field id, value) the
    engine reads in place of the file's columns."""

    path: str
    file_size_in_bytes: int
    record_count: int
    constants: tuple[tuple[int, Any], ...] = ()


def read_field_ids(context: ScanContext) -> tuple[int, ...]:
    """The top-level fields a plain read needs: the output fields, then those only the row filter needs."""
    filter_ids = extract_field_ids(context.bound_filter)
    chosen = list(context.output_field_ids)
    for top in context.read_schema.fields:
        if top.field_id not in chosen and (filter_ids & _ids_within(top)):
            chosen.append(top.field_id)
    return tuple(chosen)


def plain_read_refusal(context: ScanContext, schemas: Sequence[Schema], name_mapping: str | None = None) -> str | None:
    """Why no file of this read may go to a plain reader (module doc, rules 1-4), or None when files may."""
    if name_mapping:
        return "the table has a name mapping (files may lack field ids)"
    schema_ids = sorted(schema.schema_id for schema in schemas)
    if schema_ids != list(range(len(schema_ids))):
        return f"the table's schema ids {schema_ids} have gaps (a schema was removed)"
    read_schema = context.read_schema
    fields = [read_schema.find_field(field_id) for field_id in read_field_ids(context)]
    for top in fields:
        refusal = _type_refusal(top, top_level=True)
        if refusal is not None:
            return refusal
    ids = set().union(*(_ids_within(top) for top in fields)) if fields else set()
    for field_id in sorted(ids):
        types = {
            _type_kind(schema.find_field(field_id).field_type)
            for schema in schemas
            if field_id in schema._lazy_id_to_field
        }
        if len(types) > 1:
            return f"field id {field_id} changed type ({', '.join(sorted(types))})"
    filter_ids = extract_field_ids(context.bound_filter)
    for field_id in sorted(filter_ids):
        refusal = _filter_name_refusal(field_id, schemas)
        if refusal is not None:
            return refusal
    return None


def split_plain_files(
    tasks: Sequence[ScanTask], constant_field_ids: Iterable[int] = ()
) -> tuple[list[PlainFile], list[ScanTask]]:
    """The files a plain reader may take (module doc, per file) and the tasks left for the engine; each file keeps
    its identity-partition values of ``constant_field_ids`` (the top-level fields read)."""
    wanted = tuple(constant_field_ids)
    slices_of: dict[str, list[DataFileSlice]] = {}
    for task in tasks:
        for data_file_slice in task.slices:
            slices_of.setdefault(data_file_slice.path, []).append(data_file_slice)
    plain_paths = {path for path, slices in slices_of.items() if _is_plain(path, slices)}
    plain = []
    for path in slices_of:
        if path in plain_paths:
            first = slices_of[path][0]
            constants = tuple((i, first.partition_constants[i]) for i in wanted if i in first.partition_constants)
            plain.append(PlainFile(path, first.file_size_in_bytes, first.record_count, constants))
    if not plain:
        return [], list(tasks)
    left = [ScanTask(tuple(s for s in task.slices if s.path not in plain_paths)) for task in tasks]
    return plain, [task for task in left if task.slices]


def _is_plain(path: str, slices: Sequence[DataFileSlice]) -> bool:
    """No delete applies, the slices cover the file whole, the path has no glob character and the name is not one
    Spark's listing skips."""
    if any(data_file_slice.has_deletes for data_file_slice in slices) or _GLOB_CHARACTERS & set(path):
        return False
    if path.rstrip("/").rsplit("/", 1)[-1].startswith(("_", ".")) or ":" in _path_part(path):
        return False
    size = slices[0].file_size_in_bytes
    covered = sorted((s.start, s.start + s.length) for s in slices)
    end = 0
    for start, stop in covered:
        if start > end:
            return False
        end = max(end, stop)
    return covered[0][0] == 0 and end >= size


def _path_part(path: str) -> str:
    """The path after a URI's scheme and authority (a Hadoop path refuses a colon there)."""
    scheme, separator, rest = path.partition("://")
    if separator and "/" not in scheme:
        return "/" + rest.partition("/")[2]
    return path.split(":", 1)[1] if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:/", path) else path


def _type_refusal(field: NestedField, *, top_level: bool = False) -> str | None:
    """Why ``field`` (or a field inside it) cannot be read plainly (rule 1), or None."""
    if field.field_id >= FIRST_RESERVED_FIELD_ID:
        return f"metadata column {field.name} is read"
    if field.initial_default is not None:
        return f"column {field.name} has an initial default"
    field_type = field.field_type
    if isinstance(field_type, StructType):
        return next((r for child in field_type.fields if (r := _nested_refusal(child)) is not None), None)
    if isinstance(field_type, ListType):
        return _nested_refusal(field_type.element_field)
    if isinstance(field_type, MapType):
        return _type_refusal(field_type.key_field) or _nested_refusal(field_type.value_field)
    if not isinstance(field_type, PLAIN_TYPES):
        return f"column {field.name} is of type {field_type}"
    return None


def _nested_refusal(field: NestedField) -> str | None:
    """Why a field below the top level cannot be read plainly: rule 1, or it is required (a map key is checked by
    ``_type_refusal`` alone: Spark's map keys are never null)."""
    if field.required:
        return f"nested field {field.name} (id {field.field_id}) is required"
    return _type_refusal(field)


def _type_kind(field_type: IcebergType) -> str:
    """A primitive type as it is; a nested type by its kind alone (its children are checked by their own ids)."""
    if isinstance(field_type, StructType):
        return "struct"
    if isinstance(field_type, ListType):
        return "list"
    if isinstance(field_type, MapType):
        return "map"
    return str(field_type)


def _filter_name_refusal(field_id: int, schemas: Sequence[Schema]) -> str | None:
    """Why a filter on ``field_id`` may be pushed to the wrong Parquet column by name (rule 4), or None.

    A file written under an older name lacks the current one: Spark's Parquet filter then prunes nothing there and
    the filter is still applied to the rows (read by id). Only a name another field had can prune wrongly."""
    names = {schema.find_column_name(field_id) for schema in schemas if field_id in schema._lazy_id_to_field}
    for name in sorted(n or "" for n in names):
        if not name or not all(_KEPT_NAME.fullmatch(part) for part in name.split(".")):
            return f"filter column {name!r} has a name Parquet writers may rewrite"
    folded = {name.lower() for name in names if name}
    for schema in schemas:
        for other_id, other_name in schema._lazy_id_to_name.items():
            if other_id != field_id and other_name.lower() in folded:
                return f"filter column {other_name!r} (field id {field_id}) shares a name with field id {other_id}"
    return None


def _ids_within(field: NestedField) -> set[int]:
    """``field``'s id and the ids of every field inside it."""
    return set(Schema(field).field_ids)
