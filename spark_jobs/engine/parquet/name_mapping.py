"""Field ids for data files written without them, from the table's name mapping (``schema.name-mapping.default``).

Files imported into a table (Hive migrations, ``add_files``) often carry no ``PARQUET:field_id``; the Iceberg spec
resolves their columns by name through the table's name mapping instead:

1. A field takes the id of the mapped field one of whose names equals the field's name; a struct's children are
   looked up among that mapped field's children, a list's element and a map's key and value among its children in
   order (their Parquet names vary between writers).
2. A top-level column the mapping does not name gets no id: it is not part of the table and reads as absent.
   A nested field the mapping does not name cannot be projected by id and is an error naming the column.
3. Fields that already carry an id keep it (the mapping applies only to files without ids).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyiceberg.table.name_mapping import MappedField, NameMapping, parse_mapping_from_json

from spark_jobs.engine.parquet.file_columns import FIELD_ID_KEY
from spark_jobs.engine.shared.errors import UnsupportedFeatureError


def has_field_ids(arrow_schema: pa.Schema) -> bool:
    """Whether the file's top-level fields carry Iceberg field ids."""
    return any(field.metadata and FIELD_ID_KEY in field.metadata for field in arrow_schema)


def parse_name_mapping(mapping_json: str | None) -> NameMapping | None:
    """The table's name mapping from its JSON property, or None."""
    return parse_mapping_from_json(mapping_json) if mapping_json else None


def apply_name_mapping(arrow_schema: pa.Schema, mapping: NameMapping, path: str) -> pa.Schema:
    """``arrow_schema`` with field ids from ``mapping`` (module doc); unmapped top-level fields keep no id."""
    fields = []
    for field in arrow_schema:
        mapped = _by_name(mapping.root, field.name)
        fields.append(field if mapped is None else _with_ids(field, mapped, path, field.name))
    return pa.schema(fields, metadata=arrow_schema.metadata)


def mapped_fields_only(arrow_schema: pa.Schema) -> pa.Schema:
    """The top-level fields that carry an id (the ones that belong to the table)."""
    return pa.schema([field for field in arrow_schema if field.metadata and FIELD_ID_KEY in field.metadata])


def _by_name(candidates: Sequence[MappedField], name: str) -> MappedField | None:
    return next((candidate for candidate in candidates if name in candidate.names), None)


def _with_ids(field: pa.Field, mapped: MappedField, path: str, column: str) -> pa.Field:
    """The field with its mapped id, and its children's, recursively."""
    if mapped.field_id is None:
        raise UnsupportedFeatureError(f"{path}: the name mapping gives column {column!r} no field id")
    arrow_type = field.type
    if pa.types.is_struct(arrow_type):
        children = []
        for index in range(arrow_type.num_fields):
            child = arrow_type.field(index)
            mapped_child = _by_name(mapped.fields, child.name)
            if mapped_child is None:
                raise UnsupportedFeatureError(
                    f"{path}: the name mapping has no field for {column}.{child.name}; "
                    f"mapped names there: {[name for f in mapped.fields for name in f.names]}"
                )
            children.append(_with_ids(child, mapped_child, path, f"{column}.{child.name}"))
        arrow_type = pa.struct(children)
    elif pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        element = _with_ids(arrow_type.value_field, _child(mapped, 0, path, column), path, f"{column}.element")
        arrow_type = pa.large_list(element) if pa.types.is_large_list(arrow_type) else pa.list_(element)
    elif pa.types.is_map(arrow_type):
        key = _with_ids(arrow_type.key_field, _child(mapped, 0, path, column), path, f"{column}.key")
        item = _with_ids(arrow_type.item_field, _child(mapped, 1, path, column), path, f"{column}.value")
        arrow_type = pa.map_(key, item)
    metadata = {**(field.metadata or {}), FIELD_ID_KEY: str(mapped.field_id).encode()}
    return pa.field(field.name, arrow_type, field.nullable, metadata)


def _child(mapped: MappedField, position: int, path: str, column: str) -> MappedField:
    if len(mapped.fields) <= position:
        raise UnsupportedFeatureError(f"{path}: the name mapping of column {column!r} lacks its nested fields")
    return mapped.fields[position]
