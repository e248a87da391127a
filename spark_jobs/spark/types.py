"""Spark and Arrow types, converted one way everywhere: the engine's Arrow output, Spark schemas, Iceberg schemas.

The engine reads and writes Arrow with Iceberg's types; Spark checks the Arrow batches a Python function returns
against its own types. Every conversion between the two goes through here:

1. ``spark_schema_of``: Spark's schema for engine Arrow (timestamptz -> timestamp, timestamp -> timestamp_ntz), with
   Arrow's large types read as their plain ones first (Spark 3.5 knows no ``large_list``). Format v3's types as
   Spark's own where it has them: a variant is Spark 4's ``VariantType`` (a struct of ``metadata`` and ``value`` on
   Spark 3.5); geometry and geography are Spark 4.1+'s ``GeometryType`` / ``GeographyType`` of the column's SRID
   (OGC:CRS84 is 4326; ``EPSG:n`` and ``srid:n`` are n) when the session has them on (``geo_types_enabled``:
   ``spark.sql.geospatial.enabled``, off by default on Spark 4.1, on from 4.2), else WKB binary (Spark 3.5, the
   types off, or a CRS or edge algorithm Spark has no type for); nanosecond timestamps are Spark's microsecond
   timestamps (truncated, as Iceberg Java reads them).
2. ``spark_arrow_schema_of``: the exact Arrow schema Spark expects back for that Spark schema.
3. ``conform_batch``: an engine batch cast to that schema (e.g. large_string -> string).
4. ``spark_types_of``: column name -> the Spark type the engine reads an Iceberg column as.
5. ``arrow_schema_of``: the Arrow schema of a Spark schema (a DataFrame's), timestamps in UTC.
"""

from __future__ import annotations

import inspect
from typing import Any

import pyarrow as pa
import pyspark
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

from spark_jobs.engine.shared.arrow_types import WkbType, is_variant_arrow, schema_to_arrow, srid_of_crs

_SPARK_LINE = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
# Spark 4 takes the zone of timestamps as an argument; Spark 3.5's takes none and always gives UTC. Both read a
# zone-less Arrow timestamp as timestamp_ntz only when asked to (Spark 4 by default, Spark 3.5 not).
_ZONE_ARGUMENT: dict[str, Any] = (
    {"timezone": "UTC"} if "timezone" in inspect.signature(to_arrow_schema).parameters else {}
)


GEOSPATIAL_CONF = "spark.sql.geospatial.enabled"  # Spark 4.1+: whether DataFrames may hold its geo types


def geo_types_enabled() -> bool:
    """Whether this Spark's DataFrames may hold its geo types: ``spark.sql.geospatial.enabled`` of the active session
    (the driver), else the running Spark's default (off on 4.1, on from 4.2; no geo types before 4.1). A Python
    worker has no session: what runs there is given the driver's answer (the data source's ``geo_types`` option,
    the Arrow schema a ``mapInArrow`` function closes over)."""
    from pyspark.sql import SparkSession

    if _SPARK_LINE < (4, 1):
        return False
    session = SparkSession.getActiveSession()
    value = session.conf.get(GEOSPATIAL_CONF, None) if session is not None else None
    if value is None:
        return _SPARK_LINE >= (4, 2)
    return str(value).strip().lower() == "true"


def spark_schema_of(arrow_schema: pa.Schema, geo_types: bool | None = None) -> StructType:
    """Spark's schema for the engine's Arrow output (timestamptz -> timestamp, timestamp -> timestamp_ntz); geo
    columns as Spark's geo types when ``geo_types`` (by default ``geo_types_enabled()``), else WKB binary."""
    geo = geo_types_enabled() if geo_types is None else geo_types
    plain = pa.schema([pa.field(f.name, _as_spark_reads(f.type, geo), f.nullable) for f in arrow_schema])
    return from_arrow_schema(plain, prefer_timestamp_ntz=True)


def _as_spark_reads(arrow_type: pa.DataType, geo: bool) -> pa.DataType:
    """``arrow_type`` as Spark's Arrow conversion knows it, at any depth: large strings, binaries and lists as their
    plain kinds, WKB as Spark's geo struct (``geo``) or binary, nanosecond timestamps as microseconds (module doc,
    step 1)."""
    if isinstance(arrow_type, WkbType):
        return (_spark_geo_struct(arrow_type) if geo else None) or pa.binary()
    if pa.types.is_large_string(arrow_type):
        return pa.string()
    if pa.types.is_large_binary(arrow_type):
        return pa.binary()
    if pa.types.is_timestamp(arrow_type) and arrow_type.unit == "ns":
        return pa.timestamp("us", arrow_type.tz)
    if pa.types.is_large_list(arrow_type) or pa.types.is_list(arrow_type):
        element = arrow_type.value_field
        return pa.list_(element.with_type(_as_spark_reads(element.type, geo)))
    if pa.types.is_map(arrow_type):
        key, item = arrow_type.key_field, arrow_type.item_field
        return pa.map_(key.with_type(_as_spark_reads(key.type, geo)), item.with_type(_as_spark_reads(item.type, geo)))
    if is_variant_arrow(arrow_type):
        return arrow_type
    if pa.types.is_struct(arrow_type):
        return pa.struct([field.with_type(_as_spark_reads(field.type, geo)) for field in arrow_type])
    return arrow_type


def _spark_geo_struct(wkb_type: WkbType) -> pa.DataType | None:
    """Spark's Arrow form of its geometry or geography type for this column's CRS, or None when Spark has none."""
    spark_type = spark_geo_type(wkb_type.crs, wkb_type.edges)
    if spark_type is None:
        return None
    return to_arrow_schema(StructType().add("g", spark_type), **_ZONE_ARGUMENT).field("g").type


def spark_geo_type(crs: str, edges: str | None) -> DataType | None:
    """Spark's ``GeometryType`` (``edges`` None) or ``GeographyType`` of ``crs``; None before Spark 4.1, or for a
    CRS or edge algorithm Spark has no type for."""
    try:
        from pyspark.sql.types import GeographyType, GeometryType
    except ImportError:  # Spark 3.5
        return None
    srid = srid_of_crs(crs)
    try:
        if edges is None:
            return GeometryType(srid) if srid is not None else None
        if srid is None or edges != "spherical":
            return None
        return GeographyType(srid)
    except Exception:  # Spark refuses the SRID (an unsupported reference system): WKB binary instead
        return None


def spark_arrow_schema_of(arrow_schema: pa.Schema, geo_types: bool | None = None) -> pa.Schema:
    """The exact Arrow schema Spark expects for the engine's output (Spark's own types, no field metadata)."""
    return to_arrow_schema(spark_schema_of(arrow_schema, geo_types), **_ZONE_ARGUMENT)


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """The batch in the exact Arrow types Spark checks for (e.g. string where the engine produced large_string)."""
    if batch.schema.equals(schema, check_metadata=False) and not batch.schema.metadata:
        return batch
    columns = [_conform(column, field.type) for column, field in zip(batch.columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _conform(column: pa.Array, target: pa.DataType) -> pa.Array:
    """``column`` in Spark's Arrow type ``target``: casts, and the v3 types rebuilt where a cast cannot."""
    source = column.type
    if source == target:
        return column
    if isinstance(source, WkbType):
        if pa.types.is_struct(target):  # Spark's geo struct: the SRID beside each WKB value
            srid = int(target.field("wkb").metadata[b"srid"])
            children = [pa.repeat(pa.scalar(srid, pa.int32()), len(column)), column.storage.cast(pa.binary())]
            return pa.StructArray.from_arrays(children, fields=list(target), mask=_nulls(column))
        return column.storage.cast(target)
    if pa.types.is_timestamp(source) and source.unit == "ns":
        return column.cast(target, safe=False)  # truncated to microseconds, as Iceberg Java reads them into Spark
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        children = [_conform(column.field(field.name), field.type) for field in target]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_nulls(column))
    if (pa.types.is_list(source) or pa.types.is_large_list(source)) and pa.types.is_list(target):
        values = _conform(column.values, target.value_type)
        return pa.ListArray.from_arrays(column.offsets.cast(pa.int32()), values, type=target, mask=_nulls(column))
    if pa.types.is_map(source) and pa.types.is_map(target):
        keys, items = _conform(column.keys, target.key_type), _conform(column.items, target.item_type)
        return pa.MapArray.from_arrays(column.offsets, keys, items, type=target, mask=_nulls(column))
    return column.cast(target)


def _nulls(column: pa.Array) -> pa.Array | None:
    return column.is_null() if column.null_count else None


def spark_types_of(schema: Schema) -> dict[str, Any]:
    """Column name -> the Spark type the engine reads an Iceberg column as."""
    return {f.name: f.dataType for f in spark_schema_of(schema_to_arrow(schema, include_field_ids=False))}


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
