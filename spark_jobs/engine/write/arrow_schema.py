"""Conform Arrow data to an Iceberg schema: columns by name, in schema order, cast, with field ids for Parquet.

Files store every field but those of type ``unknown`` (always null: the spec keeps them out of data files, as
Iceberg Java does); ``stored_schema`` is the schema files are written with.

A null struct may have required fields (an optional struct ``s`` with a required ``s.x``). Arrow keeps child values
under a null parent, and Parquet's writer refuses a required child with nulls even where its parent is null. So:

1. Take each column by name, brought to the file's Arrow type (``column_forms``: Spark's forms of format v3's
   types, casts); a column the data lacks takes its ``write-default``, else nulls.
2. In every struct (also inside lists), a required child's nulls that lie under a null parent get a placeholder
   value of the child's type (zero, empty, or a struct of placeholders). Readers never see it: the parent is null.
3. A required child null under a present parent is left as it is: the ingest refuses it before writing, and the
   Parquet writer would name the column.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, StructType

from spark_jobs.engine.shared.arrow_types import schema_to_arrow
from spark_jobs.engine.write.column_forms import conformed_column, default_column

UNKNOWN_TYPE = "unknown"


def stored_schema(schema: Schema) -> Schema:
    """``schema`` without its ``unknown`` fields, at any depth of structs: the fields data files hold."""
    if not any(_holds_unknown(f) for f in schema.fields):
        return schema
    return Schema(
        *(_stored_field(f) for f in schema.fields if not _is_unknown(f)),
        schema_id=schema.schema_id,
        identifier_field_ids=schema.identifier_field_ids,
    )


def _is_unknown(field: NestedField) -> bool:
    return str(field.field_type) == UNKNOWN_TYPE


def _holds_unknown(field: NestedField) -> bool:
    if _is_unknown(field):
        return True
    return isinstance(field.field_type, StructType) and any(_holds_unknown(f) for f in field.field_type.fields)


def _stored_field(field: NestedField) -> NestedField:
    if not isinstance(field.field_type, StructType) or not _holds_unknown(field):
        return field
    kept = StructType(*(_stored_field(f) for f in field.field_type.fields if not _is_unknown(f)))
    return field.model_copy(update={"field_type": kept})


def file_arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema Parquet files are written with: Iceberg types, field ids in the field metadata, no
    ``unknown`` field."""
    return schema_to_arrow(stored_schema(schema), include_field_ids=True)


def conform_to_schema(data: pa.Table, schema: Schema, target: pa.Schema | None = None) -> pa.Table:
    """``data``'s columns in ``schema``'s order and types (by name); a column ``data`` lacks takes its write default
    (else nulls); ``unknown`` columns are left out (module doc).

    ``target`` is ``file_arrow_schema(schema)`` when the caller keeps it (a writer conforms every batch it gets).
    The caller has checked compatibility (see ``ingest`` schema check); a cast that fails here is a bug upstream.
    """
    if target is None:
        target = file_arrow_schema(schema)
    columns = []
    for table_field, target_field in zip(stored_schema(schema).fields, target, strict=True):
        if target_field.name in data.column_names:
            column = conformed_column(
                data.column(target_field.name), table_field.field_type, target_field.type, target_field.name
            )
        else:
            column = default_column(table_field, data.num_rows, target_field.type)
        if _has_required_field_in_struct(target_field.type):
            column = pa.chunked_array(
                [_fill_under_null_parents(chunk) for chunk in _chunks(column)], type=target_field.type
            )
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=target)


def _chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """The arrays of a column, chunked or not."""
    return list(column.chunks) if isinstance(column, pa.ChunkedArray) else [column]


def _has_required_field_in_struct(data_type: pa.DataType) -> bool:
    """Whether ``data_type`` holds, at any depth, a struct with a non-nullable field (module doc, step 2)."""
    if pa.types.is_struct(data_type):
        return any(not field.nullable or _has_required_field_in_struct(field.type) for field in data_type)
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return _has_required_field_in_struct(data_type.value_type)
    return False


def _fill_under_null_parents(array: pa.Array, ancestor_null: pa.BooleanArray | None = None) -> pa.Array:
    """``array`` with placeholders for required struct children's nulls under null parents (module doc, step 2).

    ``ancestor_null`` marks the rows where a struct above ``array`` is null: a null there is hidden too.
    """
    data_type = array.type
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        values = _fill_under_null_parents(array.values)
        list_class = pa.ListArray if pa.types.is_list(data_type) else pa.LargeListArray
        mask = array.is_null() if array.null_count else None
        return list_class.from_arrays(array.offsets, values, type=data_type, mask=mask)
    if not pa.types.is_struct(data_type):
        return array
    parent_null = array.is_null()
    hidden_rows = parent_null if ancestor_null is None else pc.or_(parent_null, ancestor_null)
    children = []
    for index, field in enumerate(data_type):
        child = _fill_under_null_parents(array.field(index), hidden_rows)
        if not field.nullable and child.null_count:
            hidden = pc.and_(child.is_null(), hidden_rows)
            if pc.sum(hidden.cast(pa.int64())).as_py() == child.null_count:  # every null lies under a null struct
                child = _fill_nulls(child)
        children.append(child)
    mask = parent_null if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(data_type), mask=mask)


def _fill_nulls(array: pa.Array) -> pa.Array:
    """``array`` with every null replaced by the placeholder of its type (an extension array through its storage)."""
    if isinstance(array, pa.ExtensionArray):
        return pa.ExtensionArray.from_storage(array.type, _fill_nulls(array.storage))
    return pc.fill_null(array, pa.scalar(_placeholder(array.type), array.type))


def _placeholder(data_type: pa.DataType) -> Any:
    """A non-null Python value of ``data_type``: zero, false, empty, or a struct of placeholders."""
    if isinstance(data_type, pa.BaseExtensionType):
        return _placeholder(data_type.storage_type)
    if pa.types.is_decimal(data_type):
        return decimal.Decimal(0)
    if pa.types.is_date(data_type):
        return datetime.date(1970, 1, 1)
    if pa.types.is_struct(data_type):
        return {field.name: _placeholder(field.type) for field in data_type}
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type) or pa.types.is_map(data_type):
        return []
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        return ""
    if pa.types.is_fixed_size_binary(data_type):
        return b"\0" * data_type.byte_width
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return b""
    if pa.types.is_boolean(data_type):
        return False
    return pa.scalar(0, pa.int64()).cast(data_type).as_py()
