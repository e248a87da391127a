"""Spark and Arrow types converted one way: timestamps by zone, the Arrow types Spark checks, Iceberg columns."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DecimalType,
    ListType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)
from pyspark.sql.types import (
    ArrayType,
    StructField,
    StructType,
    TimestampNTZType,
)
from pyspark.sql.types import (
    DecimalType as SparkDecimal,
)
from pyspark.sql.types import (
    LongType as SparkLong,
)
from pyspark.sql.types import (
    StringType as SparkString,
)
from pyspark.sql.types import (
    TimestampType as SparkTimestamp,
)

from spark_jobs.spark.types import (
    arrow_schema_of,
    conform_batch,
    spark_arrow_schema_of,
    spark_schema_of,
    spark_types_of,
)

pytestmark = pytest.mark.spark35

ENGINE_OUTPUT = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"}),
        pa.field("name", pa.large_string()),
        pa.field("at", pa.timestamp("us", tz="UTC")),
        pa.field("local", pa.timestamp("us")),
    ]
)


def test_timestamptz_is_sparks_timestamp_and_timestamp_is_ntz() -> None:
    spark = spark_schema_of(ENGINE_OUTPUT)
    assert [(f.name, type(f.dataType), f.nullable) for f in spark.fields] == [
        ("id", SparkLong, False),
        ("name", SparkString, True),
        ("at", SparkTimestamp, True),
        ("local", TimestampNTZType, True),
    ]


def test_batches_are_cast_to_the_arrow_types_spark_checks_for() -> None:
    expected = spark_arrow_schema_of(ENGINE_OUTPUT)
    assert expected.field("name").type == pa.string() and not expected.field("id").metadata
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([1], pa.int64()),
            pa.array(["a"], pa.large_string()),
            pa.array([0], pa.timestamp("us", tz="UTC")),
            pa.array([0], pa.timestamp("us")),
        ],
        schema=ENGINE_OUTPUT,
    )
    conformed = conform_batch(batch, expected)
    assert conformed.schema.equals(expected) and conformed.column(1).to_pylist() == ["a"]
    assert conform_batch(conformed, expected) is conformed  # already right: no copy


def test_an_iceberg_column_reads_as_the_spark_type_of_its_arrow_type() -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "price", DecimalType(10, 2), required=False),
        NestedField(3, "tags", ListType(4, StringType(), element_required=False), required=False),
        NestedField(5, "at", TimestamptzType(), required=False),
        NestedField(6, "local", TimestampType(), required=False),
    )
    types = spark_types_of(schema)
    assert types["id"] == SparkLong() and types["price"] == SparkDecimal(10, 2)
    assert types["tags"] == ArrayType(SparkString(), True)
    assert types["at"] == SparkTimestamp() and types["local"] == TimestampNTZType()


def test_a_dataframes_schema_as_arrow_keeps_utc_timestamps() -> None:
    spark = StructType([StructField("id", SparkLong(), False), StructField("at", SparkTimestamp(), True)])
    arrow = arrow_schema_of(spark)
    assert arrow.field("at").type == pa.timestamp("us", tz="UTC") and not arrow.field("id").nullable


def test_geo_columns_are_sparks_geo_types_only_where_the_session_allows_them(spark) -> None:
    """Spark 4.1 has its geo types off by default (a DataFrame holding one fails), 4.2 on; 3.5 has none."""
    import pyspark

    from spark_jobs.engine.shared.arrow_types import WkbType
    from spark_jobs.spark.types import GEOSPATIAL_CONF, geo_types_enabled

    line = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
    geo = pa.schema([pa.field("g", WkbType("OGC:CRS84", None)), pa.field("gs", pa.list_(WkbType("OGC:CRS84", None)))])
    as_wkb = spark_schema_of(geo, geo_types=False)
    assert [field.dataType.simpleString() for field in as_wkb.fields] == ["binary", "array<binary>"]
    assert spark_arrow_schema_of(geo, geo_types=False).field("g").type == pa.binary()
    if line < (4, 1):
        assert not geo_types_enabled() and spark_schema_of(geo, geo_types=True) == as_wkb
        return
    assert spark_schema_of(geo, geo_types=True).fields[0].dataType.typeName() == "geometry"
    session_value = spark.conf.get(GEOSPATIAL_CONF)
    assert geo_types_enabled() == (session_value == "true")
    assert session_value == ("false" if line == (4, 1) else "true")  # the Spark line's default, which the tests keep
    spark.conf.set(GEOSPATIAL_CONF, "false")
    try:
        assert not geo_types_enabled() and spark_schema_of(geo) == as_wkb
    finally:
        spark.conf.set(GEOSPATIAL_CONF, session_value)
