"""Project columns read from a data file onto the read schema, by Iceberg field id.

Data files keep the schema they were written with; the read schema may have renamed, reordered, added, dropped and
re-added fields and promoted types since. pyiceberg gives us the file's Iceberg schema (``pyarrow_to_schema``) and
the output Arrow types (``schema_to_pyarrow``); its ``ArrowProjectionVisitor`` drops the validity of lists and maps
whose elements are structs and projects whole batches only, so the projection itself lives here, per column:

1. Find the file field with the read field's id (never by name: a dropped and re-added column has a new id, so old
   values are never served under it).
2. A missing field reads as its ``initial_default`` repeated, or as NULLs when it has none (it must be optional).
3. Primitives are cast to the read type's Arrow type (int->long, float->double, decimal(p,s)->decimal(p',s),
   timestamps to microseconds with tz "UTC" for timestamptz and no tz for timestamp); uuid becomes Arrow's uuid.
4. Structs, lists and maps are rebuilt child by child (steps 1-3 recursively), keeping their own validity so that
   a NULL struct, list or map stays NULL.
5. A variant is stored as a group whose ``metadata`` and ``value`` (and, shredded, ``typed_value``) carry no field
   ids: the file schema holds it as a variant, and its column is made the engine's unshredded variant
   (``variant_shredding``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeAlias, TypeVar

import pyarrow as pa
from pyiceberg.io.pyarrow import pyarrow_to_schema
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType

from spark_jobs.engine.parquet.variant_shredding import unshredded_variant
from spark_jobs.engine.shared.arrow_types import schema_to_arrow
from spark_jobs.engine.shared.errors import CorruptFileError, UnsupportedFeatureError
from spark_jobs.engine.shared.iceberg_model import VariantType, is_variant

ArrowColumn: TypeAlias = pa.Array | pa.ChunkedArray  # a decoded column, in one piece or in chunks


def file_schema_of(arrow_schema: pa.Schema, path: str) -> Schema:
    """The Iceberg schema of a data file from its Arrow schema, which must carry a field id on every field (but
    inside a variant's group, step 5)."""
    variant_ids: set[int] = set()
    stand_ins = pa.schema([_variant_stand_in(field, variant_ids) for field in arrow_schema])
    try:
        # Format version 3 accepts every timestamp unit (INT96 and nanosecond files); values are cast to the read type.
        schema = pyarrow_to_schema(stand_ins, format_version=3)
    except ValueError as error:
        raise UnsupportedFeatureError(
            f"{path}: cannot resolve columns by field id ({error}); files without field ids need a name mapping"
        ) from error
    return _with_variants(schema, variant_ids) if variant_ids else schema


def is_variant_group(arrow_type: pa.DataType) -> bool:
    """True for a file's variant group: a struct of ``metadata``, ``value`` (and ``typed_value``) without ids."""
    if not pa.types.is_struct(arrow_type):
        return False
    names = {field.name for field in arrow_type}
    return (
        "metadata" in names
        and names <= {"metadata", "value", "typed_value"}
        and not any(field.metadata and FIELD_ID in field.metadata for field in arrow_type)
    )


FIELD_ID = b"PARQUET:field_id"


def _variant_stand_in(field: pa.Field, variant_ids: set[int]) -> pa.Field:
    """``field`` with every variant group (at any depth) replaced by a binary stand-in, its id noted."""
    arrow_type = field.type
    if is_variant_group(arrow_type) and field.metadata and FIELD_ID in field.metadata:
        variant_ids.add(int(field.metadata[FIELD_ID]))
        return field.with_type(pa.binary())
    if pa.types.is_struct(arrow_type):
        return field.with_type(pa.struct([_variant_stand_in(child, variant_ids) for child in arrow_type]))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        element = _variant_stand_in(arrow_type.value_field, variant_ids)
        return field.with_type(pa.large_list(element) if pa.types.is_large_list(arrow_type) else pa.list_(element))
    if pa.types.is_map(arrow_type):
        key = _variant_stand_in(arrow_type.key_field, variant_ids)
        return field.with_type(pa.map_(key, _variant_stand_in(arrow_type.item_field, variant_ids)))
    return field


def _with_variants(schema: Schema, variant_ids: set[int]) -> Schema:
    """``schema`` with the stand-ins of ``_variant_stand_in`` typed as variants again."""

    def retyped(field: NestedField) -> NestedField:
        if field.field_id in variant_ids:
            return field.model_copy(update={"field_type": VariantType()})
        return field.model_copy(update={"field_type": retyped_type(field.field_type)})

    def retyped_type(iceberg_type: IcebergType) -> IcebergType:
        if isinstance(iceberg_type, StructType):
            return StructType(*(retyped(child) for child in iceberg_type.fields))
        if isinstance(iceberg_type, ListType):
            element = retyped(iceberg_type.element_field)
            return ListType(element.field_id, element.field_type, element.required)
        if isinstance(iceberg_type, MapType):
            key, value = retyped(iceberg_type.key_field), retyped(iceberg_type.value_field)
            return MapType(key.field_id, key.field_type, value.field_id, value.field_type, value.required)
        return iceberg_type

    return Schema(*(retyped(field) for field in schema.fields), schema_id=schema.schema_id)


@lru_cache(maxsize=4096)
def arrow_type_of(iceberg_type: IcebergType) -> pa.DataType:
    """The Arrow type a column of this Iceberg type is produced as (memoized: asked per column of every file)."""
    return schema_to_arrow(iceberg_type)


def output_arrow_schema(read_schema: Schema, field_ids: Sequence[int]) -> pa.Schema:
    """The Arrow schema of the batches out: the given top-level read fields, in order, with their field ids."""
    return schema_to_arrow(Schema(*(read_schema.find_field(field_id) for field_id in field_ids)))


def project_column(
    read_field: NestedField, file_field: NestedField | None, values: ArrowColumn | None, num_rows: int, source: str
) -> ArrowColumn:
    """The column of ``read_field`` from the file's column of the same id (None when the file lacks it)."""
    if file_field is None or values is None:
        return missing_column(read_field, num_rows, source)
    if isinstance(values, pa.ChunkedArray):
        chunks = [_project(read_field.field_type, file_field.field_type, chunk, source) for chunk in values.chunks]
        return pa.chunked_array(chunks, type=arrow_type_of(read_field.field_type))
    return _project(read_field.field_type, file_field.field_type, values, source)


def missing_column(read_field: NestedField, num_rows: int, source: str) -> pa.Array:
    """A field the file does not have: its initial default repeated, or NULLs."""
    if read_field.initial_default is not None:
        return constant_column(read_field.field_type, read_field.initial_default, num_rows)
    if read_field.required:
        raise CorruptFileError(
            f"{source}: required field {read_field.name} (id {read_field.field_id}) is missing "
            "and has no initial default"
        )
    return pa.nulls(num_rows, type=arrow_type_of(read_field.field_type))


def constant_column(iceberg_type: IcebergType, value: Any, num_rows: int) -> pa.Array:
    """``value`` (as pyiceberg holds it) repeated ``num_rows`` times in the Arrow type of ``iceberg_type``."""
    arrow_type = arrow_type_of(iceberg_type)
    if value is None:
        return pa.nulls(num_rows, type=arrow_type)
    if isinstance(arrow_type, pa.BaseExtensionType):
        storage_value = value.bytes if isinstance(value, uuid.UUID) else value
        storage = pa.repeat(pa.scalar(storage_value, type=arrow_type.storage_type), num_rows)
        return pa.ExtensionArray.from_storage(arrow_type, storage)
    return pa.repeat(pa.scalar(value, type=arrow_type), num_rows)


def _project(read_type: IcebergType, file_type: IcebergType, array: pa.Array, source: str) -> pa.Array:
    if isinstance(read_type, StructType):
        return _project_struct(read_type, _expect(file_type, StructType, source), array, source)
    if isinstance(read_type, ListType):
        return _project_list(read_type, _expect(file_type, ListType, source), array, source)
    if isinstance(read_type, MapType):
        return _project_map(read_type, _expect(file_type, MapType, source), array, source)
    if is_variant(read_type):
        if not is_variant_group(array.type):
            raise CorruptFileError(f"{source}: a variant column stored as {array.type}, not as a variant group")
        return unshredded_variant(array, source)
    return _cast_primitive(array, arrow_type_of(read_type), source)


TypeT = TypeVar("TypeT", bound=IcebergType)


def _expect(file_type: IcebergType, expected: type[TypeT], source: str) -> TypeT:
    if not isinstance(file_type, expected):
        raise CorruptFileError(
            f"{source}: file column of type {file_type} where the read schema has a {expected.__name__}"
        )
    return file_type


def _cast_primitive(array: pa.Array, target: pa.DataType, source: str) -> pa.Array:
    if array.type == target:
        return array
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    if isinstance(target, pa.BaseExtensionType):
        storage = array if array.type == target.storage_type else array.cast(target.storage_type)
        return pa.ExtensionArray.from_storage(target, storage)
    try:
        if pa.types.is_timestamp(array.type) and pa.types.is_timestamp(target) and array.type.unit == "ns":
            return array.cast(target, safe=False)  # nanoseconds to microseconds truncates, as Iceberg readers do
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise CorruptFileError(f"{source}: cannot read a {array.type} column as {target}: {error}") from error


def _validity_mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _project_struct(read_type: StructType, file_type: StructType, array: pa.Array, source: str) -> pa.Array:
    target = arrow_type_of(read_type)
    file_fields = {field.field_id: field for field in file_type.fields}
    children = []
    for read_child in read_type.fields:
        file_child = file_fields.get(read_child.field_id)
        child_values = array.field(array.type.get_field_index(file_child.name)) if file_child else None
        children.append(project_column(read_child, file_child, child_values, len(array), source))
    return pa.StructArray.from_arrays(children, fields=list(target), mask=_validity_mask(array))


def _project_list(read_type: ListType, file_type: ListType, array: pa.Array, source: str) -> pa.Array:
    target = arrow_type_of(read_type)
    elements = _project(read_type.element_type, file_type.element_type, array.values, source)
    list_class = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
    offsets = array.offsets.cast(pa.int64() if list_class is pa.LargeListArray else pa.int32())
    return list_class.from_arrays(offsets, elements, type=target, mask=_validity_mask(array))


def _project_map(read_type: MapType, file_type: MapType, array: pa.Array, source: str) -> pa.Array:
    target = arrow_type_of(read_type)
    keys = _project(read_type.key_type, file_type.key_type, array.keys, source)
    items = _project(read_type.value_type, file_type.value_type, array.items, source)
    return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=_validity_mask(array))
