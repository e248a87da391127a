"""Spark and Arrow types, converted one way everywhere: the engine's Arrow output, Spark schemas, Iceberg schemas.

The engine reads and writes Arrow with Iceberg's types; Spark checks the Arrow batches a Python function returns
against its own types. Every conversion between the two goes through here:

1. ``spark_schema_of``: Spark's schema for engine Arrow (timestamptz -> timestamp, timestamp -> timestamp_ntz), with
   Arrow's large types read as their plain ones first (Spark 3.5 knows no ``large_list``).
2. ``spark_arrow_schema_of``: the exact Arrow schema Spark expects back for that Spark schema.
3. ``conform_batch``: an engine batch cast to that schema (e.g. large_string -> string).
4. ``spark_types_of``: column name -> the Spark type the engine reads an Iceberg column as.
5. ``arrow_schema_of``: the Arrow schema of a Spark schema (a DataFrame's), timestamps in UTC.
"""

from __future__ import annotations

import inspect
from typing import Any

import pyarrow as pa
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.schema import Schema
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    FloatType,
    IntegerType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

# Spark 4 takes the zone of timestamps as an argument; Spark 3.5's takes none and always gives UTC. Both read a
# zone-less Arrow timestamp as timestamp_ntz only when asked to (Spark 4 by default, Spark 3.5 not).
_ZONE_ARGUMENT: dict[str, Any] = (
    {"timezone": "UTC"} if "timezone" in inspect.signature(to_arrow_schema).parameters else {}
)


def spark_schema_of(arrow_schema: pa.Schema) -> StructType:
    """Spark's schema for the engine's Arrow output (timestamptz -> timestamp, timestamp -> timestamp_ntz)."""
    plain = pa.schema([pa.field(f.name, _without_large_types(f.type), f.nullable) for f in arrow_schema])
    return from_arrow_schema(plain, prefer_timestamp_ntz=True)


def _without_large_types(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with large strings, binaries and lists as their plain kinds, at any depth (same Spark type)."""
    if pa.types.is_large_string(arrow_type):
        return pa.string()
    if pa.types.is_large_binary(arrow_type):
        return pa.binary()
    if pa.types.is_large_list(arrow_type) or pa.types.is_list(arrow_type):
        element = arrow_type.value_field
        return pa.list_(element.with_type(_without_large_types(element.type)))
    if pa.types.is_map(arrow_type):
        key, item = arrow_type.key_field, arrow_type.item_field
        return pa.map_(key.with_type(_without_large_types(key.type)), item.with_type(_without_large_types(item.type)))
    if pa.types.is_struct(arrow_type):
        return pa.struct([field.with_type(_without_large_types(field.type)) for field in arrow_type])
    return arrow_type


def spark_arrow_schema_of(arrow_schema: pa.Schema) -> pa.Schema:
    """The exact Arrow schema Spark expects for the engine's output (Spark's own types, no field metadata)."""
    return to_arrow_schema(spark_schema_of(arrow_schema), **_ZONE_ARGUMENT)


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """The batch in the exact Arrow types Spark checks for (e.g. string where the engine produced large_string)."""
    if batch.schema.equals(schema, check_metadata=False) and not batch.schema.metadata:
        return batch
    columns = [column.cast(field.type) for column, field in zip(batch.columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def spark_types_of(schema: Schema) -> dict[str, Any]:
    """Column name -> the Spark type the engine reads an Iceberg column as."""
    return {f.name: f.dataType for f in spark_schema_of(schema_to_pyarrow(schema, include_field_ids=False))}


def arrow_schema_of(spark_schema: StructType) -> pa.Schema:
    """The Arrow schema of a Spark schema (a DataFrame's), timestamps with the UTC zone."""
    return to_arrow_schema(spark_schema, **_ZONE_ARGUMENT)


def estimated_row_bytes(data_type: DataType) -> int:
    """Spark's own estimate of a value's size (``DataType.defaultSize``): strings 20 bytes, binaries 100, one
    element per array and map; fixed widths as stored. What batch sizes follow, not what a row holds."""
    if isinstance(data_type, StructType):
        return sum(estimated_row_bytes(field.dataType) for field in data_type.fields)
    if isinstance(data_type, ArrayType):
        return estimated_row_bytes(data_type.elementType)
    if isinstance(data_type, MapType):
        return estimated_row_bytes(data_type.keyType) + estimated_row_bytes(data_type.valueType)
    if isinstance(data_type, StringType):
        return 20
    if isinstance(data_type, BinaryType):
        return 100
    if isinstance(data_type, DecimalType):
        return 8 if data_type.precision <= 18 else 16
    if isinstance(data_type, (BooleanType, ByteType)):
        return 1
    if isinstance(data_type, ShortType):
        return 2
    if isinstance(data_type, (IntegerType, FloatType, DateType)):
        return 4
    return 8  # long, double, timestamps, intervals
