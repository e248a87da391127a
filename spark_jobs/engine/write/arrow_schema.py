"""Conform Arrow data to an Iceberg schema: columns by name, in schema order, cast, with field ids for Parquet."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.schema import Schema


def file_arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema Parquet files are written with: Iceberg types, field ids in the field metadata."""
    return schema_to_pyarrow(schema, include_field_ids=True)


def conform_to_schema(data: pa.Table, schema: Schema, target: pa.Schema | None = None) -> pa.Table:
    """``data``'s columns in ``schema``'s order and types (by name); a column ``data`` lacks becomes nulls.

    ``target`` is ``file_arrow_schema(schema)`` when the caller keeps it (a writer conforms every batch it gets).
    The caller has checked compatibility (see ``ingest`` schema check); a cast that fails here is a bug upstream.
    """
    if target is None:
        target = file_arrow_schema(schema)
    columns = []
    for target_field in target:
        if target_field.name in data.column_names:
            column = data.column(target_field.name)
            if column.type != target_field.type:
                column = column.cast(target_field.type)
        else:
            column = pa.nulls(data.num_rows, type=target_field.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=target)
