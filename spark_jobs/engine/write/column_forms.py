"""Source columns brought to the Arrow forms data files are written in, at any depth, with write defaults.

Sources hand format v3's types over in their own forms: Spark 4 a variant as a struct of ``value`` and ``metadata``
and a geometry or geography as a struct of ``srid`` and ``wkb``; Spark 3.5 and plain Parquet sources geo values
as WKB binary; Spark timestamps in microseconds where the table keeps nanoseconds. ``conformed_column`` makes a
column the engine's Arrow type of its table field (``shared.arrow_types``):

1. Equal types: the column as it is.
2. A variant: the struct's ``metadata`` and ``value`` children by name, in the engine's order and marks.
3. A geometry or geography: WKB binary becomes the WKB extension type of the column's CRS; Spark's struct too,
   once every row's SRID is the one the column's CRS names (another SRID is bad input naming both).
4. Structs by field name (a field the source lacks takes its ``write-default``, else nulls), lists and maps
   element by element; anything else is cast (e.g. microseconds to nanoseconds, int to long).

``default_column`` is a field's value for rows whose source lacks it: the ``write-default`` (the spec: a writer
must write it for a field it is not given), a struct's fields' defaults, or nulls.
"""

from __future__ import annotations

from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.types import GeographyType, GeometryType, IcebergType, ListType, MapType, NestedField, StructType

from spark_jobs.engine.parquet.schema_projection import constant_column
from spark_jobs.engine.shared.arrow_types import WkbType, is_variant_struct, spark_geo_form, srid_of_crs
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.iceberg_model import is_variant

ArrowColumn: TypeAlias = pa.Array | pa.ChunkedArray


def conformed_column(column: ArrowColumn, iceberg_type: IcebergType, target: pa.DataType, name: str) -> ArrowColumn:
    """``column`` in ``target``, the Arrow type files hold ``iceberg_type`` in (module doc); ``name`` for errors."""
    if column.type == target:
        return column
    if isinstance(column, pa.ChunkedArray):
        chunks = [_conformed(chunk, iceberg_type, target, name) for chunk in column.chunks]
        return pa.chunked_array(chunks, type=target)
    return _conformed(column, iceberg_type, target, name)


def default_column(field: NestedField, num_rows: int, target: pa.DataType) -> pa.Array:
    """The value rows lacking ``field`` are written with (module doc), in ``target``."""
    if field.write_default is not None and isinstance(field.field_type, StructType):
        children = [default_column(child, num_rows, target.field(child.name).type) for child in _stored(field)]
        return pa.StructArray.from_arrays(children, fields=list(target))
    if field.write_default is None or not field.field_type.is_primitive:
        return pa.nulls(num_rows, type=target)
    column = constant_column(field.field_type, field.write_default, num_rows)
    return column if column.type == target else column.cast(target)


def _conformed(array: pa.Array, iceberg_type: IcebergType, target: pa.DataType, name: str) -> pa.Array:
    if array.type == target:
        return array
    if not _holds_own_forms(iceberg_type):
        return array.cast(target)
    if is_variant(iceberg_type) and is_variant_struct(array.type):
        children = [array.field(child.name) for child in target]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_nulls(array))
    if isinstance(iceberg_type, GeometryType | GeographyType) and isinstance(target, WkbType):
        return _wkb(array, iceberg_type, target, name)
    if isinstance(iceberg_type, StructType) and pa.types.is_struct(array.type):
        return _struct(array, iceberg_type, target, name)
    if isinstance(iceberg_type, ListType) and (pa.types.is_list(array.type) or pa.types.is_large_list(array.type)):
        element = iceberg_type.element_field
        values = _conformed(array.flatten(), element.field_type, target.value_type, f"{name}.element")
        offsets = array.offsets.cast(pa.int64() if pa.types.is_large_list(target) else pa.int32())
        list_class = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
        return list_class.from_arrays(_sliced_offsets(array, offsets), values, type=target, mask=_nulls(array))
    if isinstance(iceberg_type, MapType) and pa.types.is_map(array.type):
        keys = _conformed(array.keys, iceberg_type.key_type, target.key_type, f"{name}.key")
        items = _conformed(array.items, iceberg_type.value_type, target.item_type, f"{name}.value")
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=_nulls(array))
    return array.cast(target)


def _wkb(array: pa.Array, geo_type: GeometryType | GeographyType, target: WkbType, name: str) -> pa.Array:
    """WKB values of a geometry or geography column in the engine's extension type (module doc, step 3)."""
    if isinstance(array.type, WkbType):
        return pa.ExtensionArray.from_storage(target, array.storage)
    form = spark_geo_form(array.type)
    if form is not None:
        srids = pc.unique(array.field("srid").filter(array.is_valid())).to_pylist()
        expected = srid_of_crs(geo_type.crs)
        wrong = [srid for srid in srids if srid != expected]
        if wrong:
            raise UserInputError(
                f"column {name!r} holds {form[0]} values of SRID {wrong[0]}, but the table's column is {geo_type} "
                f"(SRID {expected if expected is not None else 'unknown'})"
            )
        array = pc.if_else(array.is_valid(), array.field("wkb"), pa.scalar(None, array.type.field("wkb").type))
    return pa.ExtensionArray.from_storage(target, array.cast(target.storage_type))


def _struct(array: pa.Array, struct_type: StructType, target: pa.DataType, name: str) -> pa.Array:
    """A struct's fields by name, conformed; a field the source lacks takes its default (module doc, step 4)."""
    present = {array.type.field(i).name: i for i in range(array.type.num_fields)}
    fields = {child.name: child for child in struct_type.fields}
    children = []
    for target_field in target:
        child = fields[target_field.name]
        if target_field.name in present:
            values = array.field(present[target_field.name])
            children.append(_conformed(values, child.field_type, target_field.type, f"{name}.{child.name}"))
        else:
            children.append(default_column(child, len(array), target_field.type))
    return pa.StructArray.from_arrays(children, fields=list(target), mask=_nulls(array))


def _holds_own_forms(iceberg_type: IcebergType) -> bool:
    """True when ``iceberg_type`` holds a variant, a geo type or a field with a write default (steps 2-4); other
    types are Arrow casts (struct fields in the target's order, as the callers give them)."""
    if is_variant(iceberg_type) or isinstance(iceberg_type, GeometryType | GeographyType):
        return True
    if isinstance(iceberg_type, StructType):
        return any(f.write_default is not None or _holds_own_forms(f.field_type) for f in iceberg_type.fields)
    if isinstance(iceberg_type, ListType):
        return _holds_own_forms(iceberg_type.element_type)
    if isinstance(iceberg_type, MapType):
        return _holds_own_forms(iceberg_type.key_type) or _holds_own_forms(iceberg_type.value_type)
    return False


def _stored(field: NestedField) -> list[NestedField]:
    """The fields of a struct-typed field that files store (``unknown`` ones are never written)."""
    assert isinstance(field.field_type, StructType)
    return [child for child in field.field_type.fields if str(child.field_type) != "unknown"]


def _sliced_offsets(array: pa.Array, offsets: pa.Array) -> pa.Array:
    """The offsets of a list array rebased to its flattened values (a sliced array's first offset may not be 0)."""
    first = offsets[0].as_py() if len(offsets) else 0
    return pc.subtract(offsets, pa.scalar(first, offsets.type)) if first else offsets


def _nulls(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None
