"""Delete-free data files read by Spark's own vectorized Parquet reader, columns matched by Iceberg field id.

The engine's route hands every row a Python worker decodes to the JVM (``mapInArrow``); Spark's own reader decodes
a file into columnar batches inside the JVM, as Iceberg Java's does. For the files ``engine.read.plain_files``
lets go (no delete applies, nothing a plain reader would read otherwise than the engine), ``plain_frame`` builds:

1. Spark's schema of the fields read (output fields, then fields only the filter needs), each field at any depth
   carrying its Iceberg field id as ``parquet.field.id``; the session reads Parquet by field id
   (``spark.sql.parquet.fieldId.read.enabled``, set when this route is taken), so a renamed column is found by its
   id and a column a file lacks reads as NULLs, as the engine reads them.
2. The files by path (as Spark's Hadoop file systems name them: ``hadoop_uri``), with no partition discovery
   (``recursiveFileLookup``: a ``key=value`` directory never becomes a column) and dates and timestamps taken as
   written (Iceberg's proleptic Gregorian calendar: no rebase).
3. The row filter as a Spark column (``spark_filter``) with the engine's row semantics (``parquet.predicates``:
   comparisons false on NULL and on NaN but ``!=`` and NOT IN true on NaN); Spark prunes row groups, pages and
   bloom filters by it. A literal or an operation without an exact Spark form leaves the whole read to the engine.
4. Identity-partition columns read as the files' partition values, as the engine reads them (not the files' own
   columns): files are read in groups of equal values (at most ``MAX_CONSTANT_GROUPS``, else the engine reads
   them all), each group's values as literals.
5. Required top-level fields kept non-nullable (Spark's file reader makes every column nullable): a NULL in one
   fails the read naming the file, as the engine's does, and the column is declared non-nullable (a coalesce
   never taken); then the output fields in order, cast to the Spark types the engine's route gives them: the
   schema, types and nullability equal the engine's.

``spark.scan`` unions that frame with the engine's over the other files, so a read is one DataFrame. The route is
taken when the delete-free files hold at least ``spark.iceberg_provider.sparkParquetReader.minBytes`` (64 MiB by
default: below it the engine's reader answers sooner, since Spark's file listing and a second scan cost about
0.1 s of driver time; docs/benchmarks/side-by-side.md) and number at most
``spark.iceberg_provider.sparkParquetReader.maxFiles`` (1,000 by default: Spark asks the file system for every
path's status before reading, a HEAD per file on S3, which the engine never needs), unless the session sets
``spark.iceberg_provider.sparkParquetReader.enabled`` to false, or skips missing or corrupt files
(``spark.sql.files.ignoreMissingFiles`` / ``ignoreCorruptFiles``), which the engine never does.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from spark_jobs.engine.parquet.predicates import AllOf, ColumnPredicate, Constant, FilterNode, translate_filter
from spark_jobs.engine.planning.scan_context import ScanContext
from spark_jobs.engine.planning.scan_tasks import ScanTask
from spark_jobs.engine.read.plain_files import PlainFile, plain_read_refusal, read_field_ids, split_plain_files
from spark_jobs.engine.shared.arrow_types import schema_to_arrow
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.spark.files import hadoop_uri
from spark_jobs.spark.types import spark_schema_of

log = logging.getLogger("spark_jobs.read")

ENABLED_CONF = "spark.iceberg_provider.sparkParquetReader.enabled"
MIN_BYTES_CONF = "spark.iceberg_provider.sparkParquetReader.minBytes"
DEFAULT_MIN_BYTES = 64 * 1024 * 1024
# Spark checks and lists every path it is given (one file-system status call per file, a HEAD on S3) before it reads
# a byte; the engine opens files by the sizes the manifests record. Above this many delete-free files the engine
# reads them all.
MAX_FILES_CONF = "spark.iceberg_provider.sparkParquetReader.maxFiles"
DEFAULT_MAX_FILES = 1000
FIELD_ID_READ_CONF = "spark.sql.parquet.fieldId.read.enabled"
FIELD_ID_METADATA_KEY = "parquet.field.id"  # Spark's key for a Parquet field id in a StructField's metadata
READ_OPTIONS = {"recursiveFileLookup": "true", "datetimeRebaseMode": "CORRECTED", "int96RebaseMode": "CORRECTED"}
# Session settings under which Spark's reader would skip a file the engine fails on.
SKIPPING_CONFS = ("spark.sql.files.ignoreMissingFiles", "spark.sql.files.ignoreCorruptFiles")
# At most this many groups of files with distinct identity-partition values read (one Spark scan each).
MAX_CONSTANT_GROUPS = 32
_EPOCH = dt.datetime(1970, 1, 1)
_FLOAT_TYPES = (FloatType, DoubleType)


@dataclass(frozen=True)
class PlainRoute:
    """The files Spark's reader takes (by its paths), the filter it applies, and the tasks left for the engine."""

    files: tuple[PlainFile, ...]
    spark_paths: tuple[str, ...]
    row_filter: Column | None
    engine_tasks: list[ScanTask]


def route_enabled(spark: SparkSession) -> bool:
    """The session lets delete-free files go to Spark's reader (``ENABLED_CONF``, true unless set to false)."""
    return str(spark.conf.get(ENABLED_CONF, "true")).strip().lower() != "false"


def plain_route(
    spark: SparkSession, tasks: Sequence[ScanTask], context: ScanContext, schemas: Sequence[Schema]
) -> PlainRoute | None:
    """How a read splits between Spark's reader and the engine, or None when every file stays with the engine."""
    refusal = _route_refusal(spark, tasks, context, schemas)
    if isinstance(refusal, str):
        log.info("every data file is read by the engine's reader: %s", refusal)
        return None
    return refusal


def _route_refusal(
    spark: SparkSession, tasks: Sequence[ScanTask], context: ScanContext, schemas: Sequence[Schema]
) -> PlainRoute | str:
    """The route, or why there is none."""
    if not route_enabled(spark):
        return f"{ENABLED_CONF} is false"
    if not schemas:
        return "the table's schemas are not known"
    skipping = [key for key in SKIPPING_CONFS if str(spark.conf.get(key, "false")).strip().lower() == "true"]
    if skipping:
        return f"the session sets {', '.join(skipping)} (Spark's reader would skip files the engine fails on)"
    refusal = plain_read_refusal(context, schemas, context.name_mapping_json)
    if refusal is not None:
        return refusal
    node = translate_filter(context.bound_filter)
    row_filter = None if node == Constant(True) else spark_filter(node, context.read_schema)
    if row_filter is None and node != Constant(True):
        return "the row filter has no exact Spark form"
    read_schema = context.read_schema
    files, engine_tasks = split_plain_files(tasks, read_field_ids(context))
    if not files:
        return "a delete applies to every data file"
    plain_bytes = sum(plain_file.file_size_in_bytes for plain_file in files)
    min_bytes = _conf_int(spark, MIN_BYTES_CONF, DEFAULT_MIN_BYTES)
    if plain_bytes < min_bytes:
        return f"the {len(files)} delete-free data files hold {plain_bytes:,} bytes, under {MIN_BYTES_CONF}={min_bytes}"
    max_files = _conf_int(spark, MAX_FILES_CONF, DEFAULT_MAX_FILES)
    if len(files) > max_files:
        return (
            f"the read has {len(files):,} delete-free data files, over {MAX_FILES_CONF}={max_files} (Spark's reader"
            " asks the file system for each one's status first)"
        )
    groups = {plain_file.constants for plain_file in files}
    if len(groups) > MAX_CONSTANT_GROUPS:
        return f"the read spans {len(groups)} identity-partition values (more than {MAX_CONSTANT_GROUPS})"
    for constants in groups:
        for field_id, value in constants:
            if value is not None and _literal(value, read_schema.find_field(field_id).field_type) is None:
                return f"identity-partition value {value!r} of field id {field_id} has no exact Spark form"
    spark_paths = _spark_paths(spark, [plain_file.path for plain_file in files])
    if any(path is None for path in spark_paths):
        return "a data file's path has no Hadoop file system form"
    return PlainRoute(
        tuple(files),
        tuple(path for path in spark_paths if path is not None),
        row_filter,
        engine_tasks,
    )


def _conf_int(spark: SparkSession, key: str, default: int) -> int:
    """The session setting ``key`` as a whole number (``default`` when unset; a bad value is the user's error)."""
    text = str(spark.conf.get(key, str(default))).strip()
    try:
        return int(text)
    except ValueError:
        raise UserInputError(f"Spark setting {key} must be a whole number, got {text!r}") from None


def _spark_paths(spark: SparkSession, paths: Sequence[str]) -> list[str | None]:
    """Each path as Spark's Hadoop file systems name it (``hadoop_uri``), the JVM asked once per scheme."""
    scheme_of: dict[str, str | None] = {}
    out: list[str | None] = []
    for path in paths:
        scheme = urlparse(path).scheme.lower()
        if scheme not in scheme_of:
            converted = hadoop_uri(spark, path)
            scheme_of[scheme] = None if converted is None else urlparse(converted).scheme
        spark_scheme = scheme_of[scheme]
        out.append(None if spark_scheme is None else spark_scheme + path[len(scheme) :])
    return out


def plain_frame(spark: SparkSession, route: PlainRoute, context: ScanContext) -> DataFrame:
    """The rows of ``route``'s files read by Spark (module doc, steps 1-5)."""
    spark.conf.set(FIELD_ID_READ_CONF, "true")
    read_schema = context.read_schema
    fields = [read_schema.find_field(field_id) for field_id in read_field_ids(context)]
    read_spark_schema = spark_read_schema(fields)
    paths_of: dict[tuple[tuple[int, Any], ...], list[str]] = {}
    for plain_file, spark_path in zip(route.files, route.spark_paths, strict=True):
        paths_of.setdefault(plain_file.constants, []).append(spark_path)
    output = spark_schema_of(context.output_schema)
    required = [field.name for field in fields if field.required]
    frames = []
    for constants, paths in paths_of.items():
        frame = spark.read.schema(read_spark_schema).options(**READ_OPTIONS).parquet(*paths)
        if constants:
            frame = frame.withColumns(
                {
                    read_schema.find_field(field_id).name: _constant(value, read_schema.find_field(field_id))
                    for field_id, value in constants
                }
            )
        if route.row_filter is not None:
            frame = frame.where(route.row_filter)
        for name in required:  # a valid file never fails this; a NULL fails the read as the engine's does
            message = F.concat(F.lit(f"required column {name} is NULL in data file "), F.input_file_name())
            frame = frame.where(F.when(F.col(_quoted(name)).isNull(), F.raise_error(message)).otherwise(F.lit(True)))
        frames.append(
            frame.select(
                *(
                    _non_null(F.col(_quoted(f.name)).cast(f.dataType), f.dataType).alias(f.name)
                    if not f.nullable
                    else F.col(_quoted(f.name)).cast(f.dataType).alias(f.name)
                    for f in output
                )
            )
        )
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.union(frame)
    return combined


def _non_null(column: Column, data_type: T.DataType) -> Column:
    """``column`` (never NULL: checked before) as a non-nullable Spark column of the same values, as the engine's
    route declares a required column: a coalesce with a value of its type that is never taken, or a struct rebuilt
    from its fields."""
    if isinstance(data_type, T.StructType):
        return F.struct(*(column.getField(child.name).alias(child.name) for child in data_type.fields))
    if isinstance(data_type, T.ArrayType):
        return F.coalesce(column, F.array().cast(data_type))
    if isinstance(data_type, T.MapType):
        return F.coalesce(column, F.create_map().cast(data_type))
    if isinstance(data_type, T.BooleanType):
        return F.coalesce(column, F.lit(False))
    if isinstance(data_type, T.StringType | T.BinaryType):
        return F.coalesce(column, F.lit("").cast(data_type))
    if isinstance(data_type, T.DateType):
        return F.coalesce(column, F.expr("date_from_unix_date(0)"))
    if isinstance(data_type, T.TimestampType):
        return F.coalesce(column, F.expr("timestamp_micros(0)"))
    if isinstance(data_type, T.TimestampNTZType):
        return F.coalesce(column, F.expr("TIMESTAMP_NTZ '1970-01-01 00:00:00'"))
    return F.coalesce(column, F.lit(0).cast(data_type))  # numbers and decimals


def _constant(value: Any, field: NestedField) -> Column:
    """An identity-partition value as a literal of the field's Spark type (``plain_route`` checked it has one)."""
    spark_type = spark_read_schema([field]).fields[0].dataType
    if value is None:
        return F.lit(None).cast(spark_type)
    literal = _literal(value, field.field_type)
    assert literal is not None, f"no Spark literal for {value!r}"
    # A literal is non-nullable; an optional column stays nullable, as the engine declares it (NULLIF with a NULL
    # keeps the value; Spark folds a CASE over a literal condition to the literal's own nullability).
    typed = literal.cast(spark_type)
    return typed if field.required else F.nullif(typed, F.lit(None).cast(spark_type))


def spark_read_schema(fields: Sequence[NestedField]) -> T.StructType:
    """Spark's schema of ``fields`` with each field's Iceberg id as its Parquet field id, at every depth."""
    spark_schema = spark_schema_of(schema_to_arrow(Schema(*fields)))
    return T.StructType(
        [_with_field_id(spark_field, field) for spark_field, field in zip(spark_schema.fields, fields, strict=True)]
    )


def _with_field_id(spark_field: T.StructField, field: NestedField) -> T.StructField:
    metadata = {**(spark_field.metadata or {}), FIELD_ID_METADATA_KEY: field.field_id}
    return T.StructField(spark_field.name, _with_field_ids(spark_field.dataType, field.field_type), True, metadata)


def _with_field_ids(data_type: T.DataType, field_type: IcebergType) -> T.DataType:
    if isinstance(data_type, T.StructType) and isinstance(field_type, StructType):
        return T.StructType(
            [_with_field_id(child, nested) for child, nested in zip(data_type.fields, field_type.fields, strict=True)]
        )
    if isinstance(data_type, T.ArrayType) and isinstance(field_type, ListType):
        return T.ArrayType(_with_field_ids(data_type.elementType, field_type.element_type), True)
    if isinstance(data_type, T.MapType) and isinstance(field_type, MapType):
        key = _with_field_ids(data_type.keyType, field_type.key_type)
        return T.MapType(key, _with_field_ids(data_type.valueType, field_type.value_type), True)
    return data_type


def spark_filter(node: FilterNode, read_schema: Schema) -> Column | None:
    """The row filter as a Spark column with the engine's row semantics, or None when some part of it has no exact
    Spark form."""
    if isinstance(node, Constant):
        return F.lit(node.value)
    if isinstance(node, ColumnPredicate):
        return _predicate(node, read_schema)
    children = [spark_filter(child, read_schema) for child in node.children]
    if any(child is None for child in children):
        return None
    combined = children[0]
    for child in children[1:]:
        combined = (combined & child) if isinstance(node, AllOf) else (combined | child)  # type: ignore[operator]
    return combined


def _predicate(predicate: ColumnPredicate, read_schema: Schema) -> Column | None:
    """One leaf as a Spark column (``parquet.predicates`` row semantics), or None."""
    column = _column_of(predicate.field_id, read_schema)
    operation, field_type = predicate.operation, predicate.field_type
    if operation == "is_null":
        return column.isNull()
    if operation == "not_null":
        return column.isNotNull()
    if operation in ("is_nan", "not_nan"):
        if not isinstance(field_type, _FLOAT_TYPES):
            return None
        return F.isnan(column) if operation == "is_nan" else ~F.isnan(column)
    literals = [_literal(value, field_type) for value in predicate.literals]
    if any(literal is None for literal in literals) or not literals:
        return None
    values: list[Column] = [literal for literal in literals if literal is not None]
    comparisons = {
        "eq": lambda: column == values[0],
        "ne": lambda: column != values[0],
        "lt": lambda: column < values[0],
        "le": lambda: column <= values[0],
        "gt": lambda: column > values[0],
        "ge": lambda: column >= values[0],
        "in": lambda: column.isin(values),
        "not_in": lambda: ~column.isin(values),
        "starts_with": lambda: column.startswith(values[0]),
        "not_starts_with": lambda: ~column.startswith(values[0]),
    }
    if operation not in comparisons or (operation.endswith("starts_with") and not isinstance(field_type, StringType)):
        return None
    condition: Column = comparisons[operation]()
    if isinstance(field_type, _FLOAT_TYPES):  # Spark orders NaN above every value and makes NaN = NaN true
        if operation in ("ne", "not_in"):
            return condition | F.isnan(column)
        return condition & ~F.isnan(column)
    return condition


def _literal(value: Any, field_type: IcebergType) -> Column | None:
    """An Iceberg literal as a Spark literal of the column's type, or None without an exact form."""
    if isinstance(field_type, BooleanType) and isinstance(value, bool):
        return F.lit(value)
    if isinstance(field_type, IntegerType | LongType) and isinstance(value, int) and not isinstance(value, bool):
        return F.lit(value).cast("int" if isinstance(field_type, IntegerType) else "bigint")
    if isinstance(field_type, _FLOAT_TYPES) and isinstance(value, int | float) and not math.isnan(value):
        return F.lit(float(value)).cast("float" if isinstance(field_type, FloatType) else "double")
    if isinstance(field_type, DecimalType) and isinstance(value, decimal.Decimal) and value.is_finite():
        exponent = value.as_tuple().exponent
        if isinstance(exponent, int) and -exponent <= field_type.scale:
            return F.lit(value).cast(f"decimal({field_type.precision},{field_type.scale})")
        return None
    if isinstance(field_type, StringType) and isinstance(value, str):
        return F.lit(value)
    if isinstance(field_type, BinaryType | FixedType) and isinstance(value, bytes | bytearray):
        return F.lit(bytearray(value))
    if isinstance(field_type, DateType) and isinstance(value, int):
        return F.expr(f"date_from_unix_date({int(value)})")
    if isinstance(field_type, TimestamptzType) and isinstance(value, int):
        return F.expr(f"timestamp_micros({int(value)})")
    if isinstance(field_type, TimestampType) and isinstance(value, int):
        try:
            wall_clock = _EPOCH + dt.timedelta(microseconds=value)
        except OverflowError:
            return None
        return F.expr(f"TIMESTAMP_NTZ '{wall_clock.isoformat(sep=' ', timespec='microseconds')}'")
    return None


def _column_of(field_id: int, read_schema: Schema) -> Column:
    """The Spark column of a field of the read schema, through its structs by name."""
    top, *children = _name_path(read_schema, field_id)
    column = F.col(_quoted(top))
    for child in children:
        column = column.getField(child)
    return column


def _name_path(schema: Schema, field_id: int) -> list[str]:
    """The names from the top-level field down to ``field_id`` (through structs; names may hold dots)."""
    path: list[str] = []
    current = field_id
    parents = schema._lazy_id_to_parent
    while True:
        path.append(schema.find_field(current).name)
        if current not in parents:
            return list(reversed(path))
        current = parents[current]


def _quoted(name: str) -> str:
    """A column name as Spark resolves it literally (dots and backticks kept)."""
    return "`" + name.replace("`", "``") + "`"
