"""Executors write a DataFrame's rows as the table's data files, and describe each file for the driver's commit."""

from __future__ import annotations

from urllib.parse import urlparse

import pyarrow.parquet as pq
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.write.write_context import WriteContext
from spark_jobs.spark.types import spark_types_of
from spark_jobs.spark.write import conform_dataframe, task_attempt_tag, write_dataframe

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "part", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="part"))


def test_each_task_writes_its_rows_per_partition_and_names_its_attempt(spark, sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC)
    context = WriteContext.for_table(table)
    rows = [(i, "even" if i % 2 == 0 else "odd") for i in range(100)]
    frame = spark.createDataFrame(rows, "id int, part string").repartition(3)
    frame = conform_dataframe(frame, context.schema, spark_types_of(context.schema))
    written = write_dataframe(frame, context)
    read_back = sorted(
        (row["id"], part)
        for item in written
        for part in item["partition_values"]
        for row in pq.read_table(urlparse(item["file_path"]).path).to_pylist()
    )
    assert read_back == sorted(rows)
    assert {tuple(item["partition_values"]) for item in written} == {("even",), ("odd",)}
    assert sum(item["record_count"] for item in written) == 100
    assert all(f"{context.write_id}-s" in item["file_path"] for item in written)  # named by stage and attempt
    assert task_attempt_tag() == "driver"


def test_conforming_casts_to_the_tables_types_and_fills_missing_columns(spark) -> None:
    frame = spark.createDataFrame([(1,)], "id int")
    conformed = conform_dataframe(frame, SCHEMA, spark_types_of(SCHEMA))
    assert conformed.dtypes == [("id", "bigint"), ("part", "string")]
    assert conformed.collect()[0].asDict() == {"id": 1, "part": None}
