"""Check incoming rows' schema against the table before anything is written.

Rules (by field name, exact case, at every depth: top-level columns and the fields of structs, also inside lists
and maps):
1. A table field the source lacks takes its ``write-default``; else optional becomes null, required is an error.
2. A source field the table lacks: an error, unless schema evolution is allowed; then it is added as an optional
   field (structs, lists and maps included), committed atomically with the data. Fresh field ids are assigned as
   Iceberg Java's ``UpdateSchema`` does: from the table's ``last-column-id`` on, each added field before its nested
   fields (the fields of one struct before what they hold). Fields cannot be added to a map's key.
3. Types must match, or be an Iceberg promotion (int -> long, float -> double, decimal precision widening); a
   primitive where the table has a struct, list or map (or the reverse), and any narrowing, is an error naming the
   field and both types. Format v3's types as sources give them: a variant as Spark's variant struct; a geometry
   or geography as Spark's geo type of the SRID the column's CRS names, or as WKB binary; a nanosecond timestamp
   from microseconds (exact); an ``unknown`` column from nulls only (Arrow's null type) or not at all.
All problems are reported together in one ``UserInputError``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from pyiceberg.io.pyarrow import _ConvertToIcebergWithoutIDs, visit_pyarrow
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
)

from spark_jobs.engine.shared.arrow_types import (
    WkbType,
    is_variant_arrow,
    is_variant_struct,
    spark_geo_form,
    srid_of_crs,
)
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.iceberg_model import VariantType

_PROMOTIONS = {
    (IntegerType(), LongType()),
    (FloatType(), DoubleType()),
    (TimestampType(), TimestampNanoType()),  # microseconds are nanoseconds exactly
    (TimestamptzType(), TimestamptzNanoType()),
}
_CRS84_SRID = 4326


@dataclass(frozen=True)
class SchemaCheck:
    """The schema to write with, and what the check decided on the way."""

    schema: Schema
    added_columns: list[str] = field(default_factory=list)
    null_filled_columns: list[str] = field(default_factory=list)

    @property
    def evolves(self) -> bool:
        """True when the write adds fields to the table (top-level or nested)."""
        return bool(self.added_columns)


@dataclass
class _Merge:
    """What walking the source against the table found: problems, added and null-filled field paths, fresh ids."""

    allow_evolution: bool
    next_id: Callable[[], int]
    problems: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    null_filled: list[str] = field(default_factory=list)


def check_schema(
    table_name: str,
    table_schema: Schema,
    source: pa.Schema,
    *,
    allow_evolution: bool,
    last_column_id: int | None = None,
    next_schema_id: int | None = None,
) -> SchemaCheck:
    """Compare ``source`` with ``table_schema`` (module doc); returns the schema to write with.

    ``last_column_id`` and ``next_schema_id`` come from the table metadata (a dropped column's id is never reused);
    without them, the schema's highest field id and its id + 1.
    """
    ids = itertools.count(max(table_schema.highest_field_id if last_column_id is None else last_column_id, 0) + 1)
    merge = _Merge(allow_evolution, next_id=lambda: next(ids))
    as_struct = pa.struct(list(source))
    merged = _merge_struct("", as_struct, table_schema.as_struct(), merge, top_level=True)
    if merge.problems:
        raise UserInputError(f"source does not fit table {table_name}: " + "; ".join(merge.problems), argument="source")
    if not merge.added:
        return SchemaCheck(table_schema, null_filled_columns=merge.null_filled)
    evolved = Schema(
        *merged.fields,
        schema_id=table_schema.schema_id + 1 if next_schema_id is None else next_schema_id,
        identifier_field_ids=table_schema.identifier_field_ids,
    )
    return SchemaCheck(evolved, added_columns=merge.added, null_filled_columns=merge.null_filled)


def _merge_struct(
    path: str, source: pa.StructType, table: StructType, merge: _Merge, *, top_level: bool = False
) -> StructType:
    """The table's struct with the source's fields merged in (module doc); problems and additions go to ``merge``."""
    noun = "column" if top_level else "field"
    source_fields = {source.field(i).name: source.field(i) for i in range(source.num_fields)}
    fields: list[NestedField] = []
    for table_field in table.fields:
        name = path + table_field.name
        source_field = source_fields.get(table_field.name)
        if source_field is None:
            if table_field.write_default is not None:
                fields.append(table_field)
                continue
            if table_field.required:
                merge.problems.append(f"required {noun} {name!r} is missing from the source")
            merge.null_filled.append(name)
            fields.append(table_field)
            continue
        merged_type = _merge_type(name, source_field.type, table_field.field_type, merge)
        fields.append(table_field if merged_type is table_field.field_type else _with_type(table_field, merged_type))
    table_names = {f.name for f in table.fields}
    extra = [f for f in source_fields.values() if f.name not in table_names]
    if extra and not merge.allow_evolution:
        names = ", ".join(repr(path + f.name) for f in extra)
        merge.problems.append(
            f"source {noun}(s) {names} are not in the table; pass --allow-schema-evolution to add them"
        )
    elif extra:
        fields += _fields_to_add(path, extra, merge)
    if not extra and all(a is b for a, b in zip(fields, table.fields, strict=True)):
        return table
    return StructType(*fields)


def _merge_type(name: str, source: pa.DataType, table: IcebergType, merge: _Merge) -> IcebergType:
    """``table`` itself when nothing is added under it; else the widened type (problems go to ``merge``)."""
    if table.is_primitive:
        source_type = iceberg_type_of(source)
        if source_type is None or not _fits(source_type, table):
            shown = source_type if source_type is not None else source
            merge.problems.append(f"column {name!r} has type {shown} in the source but {table} in the table")
        return table
    if isinstance(table, StructType) and pa.types.is_struct(source):
        return _merge_struct(name + ".", source, table, merge)
    if isinstance(table, ListType) and _is_list(source):
        element = _merge_type(name + ".element", source.value_type, table.element_type, merge)
        if element is table.element_type:
            return table
        return ListType(table.element_id, element, element_required=table.element_required)
    if isinstance(table, MapType) and pa.types.is_map(source):
        key_merge = _Merge(False, merge.next_id, merge.problems)
        key = _merge_type(name + ".key", source.key_type, table.key_type, key_merge)
        value = _merge_type(name + ".value", source.item_type, table.value_type, merge)
        if key is table.key_type and value is table.value_type:
            return table
        return MapType(table.key_id, key, table.value_id, value, value_required=table.value_required)
    merge.problems.append(f"column {name!r} has type {source} in the source but {table} in the table")
    return table


def _fields_to_add(path: str, extra: list[pa.Field], merge: _Merge) -> list[NestedField]:
    """Optional Iceberg fields for the source's extra fields, with fresh ids (module doc, rule 2)."""
    fields: list[NestedField] = []
    for extra_field in extra:
        name = path + extra_field.name
        iceberg_type = iceberg_type_of(extra_field.type)
        if isinstance(iceberg_type, VariantType) and not is_variant_arrow(extra_field.type):
            iceberg_type = None  # a plain struct of two binaries is added as a struct; a marked one is a variant
        if iceberg_type is None:
            try:
                converted = visit_pyarrow(pa.schema([extra_field]), _ConvertToIcebergWithoutIDs())
            except (TypeError, ValueError) as error:
                merge.problems.append(
                    f"source column {name!r} has type {extra_field.type}, which cannot be added: {error}"
                )
                continue
            (fresh,) = assign_fresh_schema_ids(converted, next_id=merge.next_id).fields
            fields.append(NestedField(fresh.field_id, extra_field.name, fresh.field_type, required=False))
        else:
            fields.append(NestedField(merge.next_id(), extra_field.name, iceberg_type, required=False))
        merge.added.append(name)
    return fields


def _with_type(table_field: NestedField, field_type: IcebergType) -> NestedField:
    return NestedField(
        table_field.field_id,
        table_field.name,
        field_type,
        required=table_field.required,
        doc=table_field.doc,
        initial_default=table_field.initial_default,
        write_default=table_field.write_default,
    )


def _is_list(arrow_type: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type)
    )


def iceberg_type_of(arrow_type: pa.DataType) -> IcebergType | None:
    """The Iceberg primitive type of an Arrow type, or None for nested and unsupported types."""
    if is_variant_struct(arrow_type):
        return VariantType()
    geo_form = spark_geo_form(arrow_type)
    if geo_form is not None:
        kind, srid = geo_form
        crs = "OGC:CRS84" if srid == _CRS84_SRID else f"srid:{srid}"
        return GeometryType(crs) if kind == "geometry" else GeographyType(crs)
    if isinstance(arrow_type, WkbType):
        if arrow_type.edges is not None:
            return GeographyType(arrow_type.crs, arrow_type.edges)
        return GeometryType(arrow_type.crs)
    if pa.types.is_null(arrow_type):
        return UnknownType()
    if pa.types.is_timestamp(arrow_type) and arrow_type.unit == "ns":
        return TimestamptzNanoType() if arrow_type.tz else TimestampNanoType()
    if pa.types.is_boolean(arrow_type):
        return BooleanType()
    if pa.types.is_integer(arrow_type):
        return LongType() if arrow_type.bit_width == 64 else IntegerType()
    if pa.types.is_float32(arrow_type):
        return FloatType()
    if pa.types.is_float64(arrow_type):
        return DoubleType()
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return StringType()
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return BinaryType()
    if pa.types.is_date(arrow_type):
        return DateType()
    if pa.types.is_timestamp(arrow_type):
        return TimestamptzType() if arrow_type.tz else TimestampType()
    if pa.types.is_time(arrow_type):
        return TimeType()
    if pa.types.is_decimal(arrow_type):
        return DecimalType(arrow_type.precision, arrow_type.scale)
    return None


def _same_geo_type(source_type: IcebergType, table_type: GeometryType | GeographyType) -> bool:
    """A source geo value fits a geo column of the same kind and CRS (by SRID where both name one)."""
    if type(source_type) is not type(table_type):
        return False
    assert isinstance(source_type, GeometryType | GeographyType)
    geographies = isinstance(source_type, GeographyType) and isinstance(table_type, GeographyType)
    if geographies and source_type.algorithm != table_type.algorithm:  # type: ignore[union-attr]
        return False
    source_srid, table_srid = srid_of_crs(source_type.crs), srid_of_crs(table_type.crs)
    if source_srid is not None and table_srid is not None:
        return source_srid == table_srid
    return source_type.crs == table_type.crs


def _fits(source_type: IcebergType, table_type: IcebergType) -> bool:
    if source_type == table_type or (source_type, table_type) in _PROMOTIONS:
        return True
    if isinstance(source_type, UnknownType):
        return True  # nulls only: any optional column (a required one is refused for its nulls)
    if isinstance(table_type, GeometryType | GeographyType):
        return isinstance(source_type, BinaryType) or _same_geo_type(source_type, table_type)
    if isinstance(source_type, DecimalType) and isinstance(table_type, DecimalType):
        return source_type.scale == table_type.scale and source_type.precision <= table_type.precision
    return False
