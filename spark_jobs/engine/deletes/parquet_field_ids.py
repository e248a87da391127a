"""Find a delete file's columns by Iceberg field id, since their names may differ from the table's after a rename.

Parquet files written by Iceberg carry each field's id in the Arrow field metadata (``PARQUET:field_id``). A field
id resolves to a path of names through structs (equality ids may name a field nested in structs, never inside a
list or a map); reading the top-level column of that path and walking its struct children yields the values.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

PARQUET_FIELD_ID_KEY = b"PARQUET:field_id"


def field_id_paths(schema: pa.Schema) -> dict[int, tuple[str, ...]]:
    """Every field id reachable through structs, mapped to its path of field names from the top level."""
    paths: dict[int, tuple[str, ...]] = {}
    for field in schema:
        _collect_field_id_paths(field, (), paths)
    return paths


def _collect_field_id_paths(field: pa.Field, parent: tuple[str, ...], paths: dict[int, tuple[str, ...]]) -> None:
    """Add ``field`` and, for a struct, its children to ``paths``."""
    path = (*parent, field.name)
    field_id = _field_id(field)
    if field_id is not None:
        paths.setdefault(field_id, path)
    if pa.types.is_struct(field.type):
        for child in field.type.fields:
            _collect_field_id_paths(child, path, paths)


def _field_id(field: pa.Field) -> int | None:
    """The Iceberg field id stored in a field's metadata, if any."""
    if not field.metadata or PARQUET_FIELD_ID_KEY not in field.metadata:
        return None
    return int(field.metadata[PARQUET_FIELD_ID_KEY])


def column_at_path(table: pa.Table, path: tuple[str, ...]) -> pa.ChunkedArray:
    """The values at a path of names: the top-level column, then its struct children (a null parent gives null)."""
    column = table.column(path[0])
    for child_name in path[1:]:
        column = pc.struct_field(column, child_name)
    return column
