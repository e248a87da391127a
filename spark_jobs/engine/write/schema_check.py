"""Check incoming rows' schema against the table before anything is written.

Rules (by column name, exact case):
1. A table column the source lacks: nullable becomes null; required is an error.
2. A source column the table lacks: an error, unless schema evolution is allowed; then it is added as an optional
   column (structs, lists and maps included) with fresh field ids for it and every nested field, committed
   atomically with the data.
3. Types must match, or be an Iceberg promotion (int -> long, float -> double, decimal precision widening); a
   mismatch is an error naming the column and both types. Nested columns must cast to the table's type.
All problems are reported together in one ``UserInputError``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pyarrow as pa
from pyiceberg.io.pyarrow import _ConvertToIcebergWithoutIDs, schema_to_pyarrow, visit_pyarrow
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

from spark_jobs.engine.shared.errors import UserInputError

_PROMOTIONS = {(IntegerType(), LongType()), (FloatType(), DoubleType())}


@dataclass(frozen=True)
class SchemaCheck:
    """The schema to write with, and what the check decided on the way."""

    schema: Schema
    added_columns: list[str] = field(default_factory=list)
    null_filled_columns: list[str] = field(default_factory=list)

    @property
    def evolves(self) -> bool:
        """True when the write adds columns to the table."""
        return bool(self.added_columns)


def check_schema(table_name: str, table_schema: Schema, source: pa.Schema, *, allow_evolution: bool) -> SchemaCheck:
    """Compare ``source`` with ``table_schema`` (module doc); returns the schema to write with."""
    problems: list[str] = []
    table_names = {f.name for f in table_schema.fields}
    missing = [f for f in table_schema.fields if f.name not in source.names]
    for table_field in missing:
        if table_field.required:
            problems.append(f"required column {table_field.name!r} is missing from the source")
    for source_field in source:
        if source_field.name not in table_names:
            continue
        table_field = table_schema.find_field(source_field.name)
        problem = _type_problem(source_field, table_field)
        if problem:
            problems.append(problem)
    extra = [f for f in source if f.name not in table_names]
    new_fields: list[NestedField] = []
    if extra and not allow_evolution:
        problems.append(
            f"source column(s) {', '.join(repr(f.name) for f in extra)} are not in the table; "
            "pass --allow-schema-evolution to add them"
        )
    elif extra:
        new_fields, problems_adding = _fields_to_add(extra, first_id=max(table_schema.highest_field_id, 0) + 1)
        problems += problems_adding
    if problems:
        raise UserInputError(f"source does not fit table {table_name}: " + "; ".join(problems))
    if not new_fields:
        return SchemaCheck(table_schema, null_filled_columns=[f.name for f in missing])
    evolved = Schema(
        *table_schema.fields,
        *new_fields,
        schema_id=table_schema.schema_id + 1,
        identifier_field_ids=table_schema.identifier_field_ids,
    )
    return SchemaCheck(
        evolved, added_columns=[f.name for f in new_fields], null_filled_columns=[f.name for f in missing]
    )


def _fields_to_add(extra: list[pa.Field], *, first_id: int) -> tuple[list[NestedField], list[str]]:
    """Optional Iceberg fields for the source's extra columns, ids from ``first_id`` on (nested fields included)."""
    next_ids = itertools.count(first_id)
    fields: list[NestedField] = []
    problems: list[str] = []
    for extra_field in extra:
        iceberg_type = iceberg_type_of(extra_field.type)
        if iceberg_type is None:
            try:
                converted = visit_pyarrow(pa.schema([extra_field]), _ConvertToIcebergWithoutIDs())
            except (TypeError, ValueError) as error:
                problems.append(
                    f"source column {extra_field.name!r} has type {extra_field.type}, which cannot be added: {error}"
                )
                continue
            (fresh,) = assign_fresh_schema_ids(converted, next_id=lambda: next(next_ids)).fields
            fields.append(NestedField(fresh.field_id, extra_field.name, fresh.field_type, required=False))
            continue
        fields.append(NestedField(next(next_ids), extra_field.name, iceberg_type, required=False))
    return fields, problems


def iceberg_type_of(arrow_type: pa.DataType) -> IcebergType | None:
    """The Iceberg primitive type of an Arrow type, or None for nested and unsupported types."""
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


def _type_problem(source_field: pa.Field, table_field: NestedField) -> str | None:
    """Why ``source_field`` cannot be written to ``table_field``, or None when it can."""
    table_type = table_field.field_type
    if table_type.is_primitive:
        source_type = iceberg_type_of(source_field.type)
        if source_type is not None and _fits(source_type, table_type):
            return None
        shown = source_type if source_type is not None else source_field.type
        return f"column {source_field.name!r} has type {shown} in the source but {table_type} in the table"
    target = schema_to_pyarrow(table_type, include_field_ids=False)
    try:
        pa.array([], type=source_field.type).cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return f"column {source_field.name!r} has type {source_field.type} in the source but {table_type} in the table"
    return None


def _fits(source_type: IcebergType, table_type: IcebergType) -> bool:
    if source_type == table_type or (source_type, table_type) in _PROMOTIONS:
        return True
    if isinstance(source_type, DecimalType) and isinstance(table_type, DecimalType):
        return source_type.scale == table_type.scale and source_type.precision <= table_type.precision
    return False
