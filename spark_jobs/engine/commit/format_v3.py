"""Format v3 tables: which ones we write, and writing their metadata through pyiceberg's catalogs.

pyiceberg 0.12 models v3 metadata (``TableMetadataV3``: ``next-row-id``, snapshots' ``first-row-id`` and
``added-rows``) and applies v3 updates (a snapshot must carry its first row id; ``next-row-id`` advances by its
added rows), but ``TableMetadataV3.model_dump_json`` raises, so no catalog that writes metadata files itself (SQL,
Glue, Hive) can commit to a v3 table. Our engine writes what v3 asks of a commit (v3 manifests and manifest lists
with row lineage, deletion vectors: ``manifest_writers``, ``row_lineage``, ``write.deletion_vector_files``), so:

1. ``check_writable`` refuses a table we cannot write correctly, with one line naming the feature: a format other
   than 2 or 3; in v3, an ``unknown`` list element, map key or value (files store no ``unknown`` field; the
   engine leaves them out of structs only), or a non-null default on a variant, geometry, geography or
   ``unknown`` column (the spec allows none). Every other type and default is written (``write.column_forms``,
   ``write.column_metrics``).
2. ``allow_v3_metadata_writes`` lets pyiceberg serialize v3 metadata with pydantic's own dump (the same model, by
   alias, nulls left out; ``next-row-id`` written even when pyiceberg left it unset, as a new table does), once
   per process, before a commit to (or the creation of) a v3 table. Every schema whose text was read
   (``shared.iceberg_model.schema_text``) and still says the same is written as that text, so the fields Java
   wrote (types such as ``geometry(OGC:CRS84)``, default values) stay byte for byte as they were.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadataV3
from pyiceberg.typedef import IcebergBaseModel
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType

from spark_jobs.engine.shared import iceberg_model
from spark_jobs.engine.shared.errors import UnsupportedFeatureError, UserInputError

WRITABLE_FORMAT_VERSIONS = (2, 3)
# Types (as pyiceberg spells them, without parameters) whose columns the spec lets default to null only.
_NULL_DEFAULT_ONLY = ("variant", "geometry", "geography", "unknown")
_UNKNOWN = "unknown"


class UnwritableTableError(UnsupportedFeatureError, UserInputError):
    """The table uses a format or feature writes do not support: bad input for every job (exit code 2)."""


def check_writable(table: Table) -> None:
    """Raise UnwritableTableError naming what keeps the engine from writing ``table`` (module doc, step 1)."""
    version = table.metadata.format_version
    name = ".".join(table.name())
    if version not in WRITABLE_FORMAT_VERSIONS:
        raise UnwritableTableError(f"writes to format v{version} tables are not supported (table {name})")
    if version >= 3:
        problem = unsupported_v3_feature(table.schema())
        if problem is not None:
            raise UnwritableTableError(f"table {name} (format v3) uses {problem}, which writes do not support")
        allow_v3_metadata_writes()


def unsupported_v3_feature(schema: Schema) -> str | None:
    """The first v3 feature of ``schema`` the engine cannot write, described for an error line; None if none."""
    for field in _fields(schema.as_struct()):
        type_name = _type_name(field.field_type)
        if type_name in _NULL_DEFAULT_ONLY and (field.initial_default is not None or field.write_default is not None):
            where = f"column {field.name}, field id {field.field_id}"
            return f"a default value on a {type_name} column, which the spec forbids ({where})"
        for inner in _collection_fields(field.field_type):
            if _type_name(inner.field_type) == _UNKNOWN:
                return f"the unknown type inside a list or map (column {field.name}, field id {inner.field_id})"
    return None


def _type_name(field_type: IcebergType) -> str:
    return str(field_type).split("(")[0].split("<")[0].strip().lower()


def _collection_fields(field_type: IcebergType) -> list[NestedField]:
    if isinstance(field_type, ListType):
        return [field_type.element_field]
    if isinstance(field_type, MapType):
        return [field_type.key_field, field_type.value_field]
    return []


def _fields(struct: StructType) -> Iterator[NestedField]:
    for field in struct.fields:
        yield field
        yield from _nested_fields(field.field_type)


def _nested_fields(field_type: IcebergType) -> Iterator[NestedField]:
    if isinstance(field_type, StructType):
        yield from _fields(field_type)
    elif isinstance(field_type, ListType):
        yield from _nested(field_type.element_field)
    elif isinstance(field_type, MapType):
        yield from _nested(field_type.key_field)
        yield from _nested(field_type.value_field)


def _nested(field: NestedField) -> Iterator[NestedField]:
    yield field
    yield from _nested_fields(field.field_type)


def _dump_v3_json(
    self: TableMetadataV3, exclude_none: bool = True, exclude: Any = None, by_alias: bool = True, **kw: Any
) -> str:
    """pydantic's dump of the model, with ``next-row-id`` always present (v3 requires it) and the schemas as read."""
    metadata = self if self.next_row_id is not None else self.model_copy(update={"next_row_id": _next_row_id(self)})
    dumped = IcebergBaseModel.model_dump_json(
        metadata, exclude_none=exclude_none, exclude=exclude, by_alias=by_alias, **kw
    )
    return _with_schema_texts_as_read(metadata, dumped)


def _with_schema_texts_as_read(metadata: TableMetadataV3, dumped: str) -> str:
    """``dumped`` with each schema replaced by the text it was read from, where that text says the same."""
    texts = {}
    for schema in metadata.schemas:
        text = iceberg_model.schema_text(str(metadata.table_uuid), schema.schema_id)
        if text is not None and Schema.model_validate_json(text) == schema:
            texts[schema.schema_id] = text
    if not texts:
        return dumped
    document = json.loads(dumped)
    placeholders = {}
    for entry in document.get("schemas", []):
        if entry.get("schema-id") in texts:
            placeholder = f"@@schema-{entry['schema-id']}-{uuid.uuid4().hex}@@"
            placeholders[json.dumps(placeholder)] = texts[entry["schema-id"]]
            document["schemas"][document["schemas"].index(entry)] = placeholder
    rewritten = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    for placeholder, text in placeholders.items():
        rewritten = rewritten.replace(placeholder, text, 1)
    return rewritten


def _next_row_id(metadata: TableMetadataV3) -> int:
    """The row ids the table's snapshots used (0 for none): what ``next-row-id`` is when it was never recorded."""
    ends = [s.first_row_id + (s.added_rows or 0) for s in metadata.snapshots if s.first_row_id is not None]
    return max(ends, default=0)


def allow_v3_metadata_writes() -> None:
    """Let pyiceberg's catalogs write v3 metadata files (module doc, step 2); idempotent."""
    if TableMetadataV3.model_dump_json is not _dump_v3_json:
        TableMetadataV3.model_dump_json = _dump_v3_json  # type: ignore[method-assign]
