"""Executors write a DataFrame's rows as data files for the driver's commit, and read key columns with positions."""

from __future__ import annotations

from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.ingest.live_files import files_that_may_hold_keys, key_scan_context, partitions_of
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data, write_position_delete_rows
from spark_jobs.spark.types import spark_types_of
from spark_jobs.spark.write import (
    ARROW_BATCH_ROWS_KEY,
    ORDINAL_COLUMN,
    arrow_batch_rows,
    conform_dataframe,
    key_positions,
    task_attempt_tag,
    write_dataframe,
)

pytestmark = pytest.mark.spark35

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


def test_a_write_hands_narrow_rows_over_in_batches_larger_than_sparks_default(spark) -> None:
    def batch_sizes(batches):
        for batch in batches:
            yield pa.RecordBatch.from_arrays([pa.array([batch.num_rows], pa.int64())], names=["rows"])

    frame = spark.range(0, 50_000, numPartitions=1).selectExpr("id", "cast(id AS INT) AS n")
    assert spark.conf.get(ARROW_BATCH_ROWS_KEY, None) is None
    with arrow_batch_rows(frame) as rows:
        sizes = [row["rows"] for row in frame.mapInArrow(batch_sizes, "rows long").collect()]
    assert rows == 131_072 and sizes == [50_000]  # 12 bytes a row: the upper bound
    assert spark.conf.get(ARROW_BATCH_ROWS_KEY, None) is None  # unset again
    spark.conf.set(ARROW_BATCH_ROWS_KEY, "20000")  # a session's own choice is kept
    try:
        with arrow_batch_rows(frame) as rows:
            sizes = [row["rows"] for row in frame.mapInArrow(batch_sizes, "rows long").collect()]
        assert rows == 20_000 and sizes == [20_000, 20_000, 10_000]
        assert spark.conf.get(ARROW_BATCH_ROWS_KEY) == "20000"
    finally:
        spark.conf.unset(ARROW_BATCH_ROWS_KEY)
    wide = spark.range(0, 10).selectExpr(*[f"X'00' AS b{i}" for i in range(100)])
    with arrow_batch_rows(wide) as rows:
        assert rows == 10_000  # 10 KB a row by Spark's estimate: the lower bound


def test_rows_handed_over_as_columns_are_written_once_whatever_the_batches(spark, sql_catalog) -> None:
    import pyspark

    from spark_jobs.spark import write

    spark_version = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
    assert (write._ARROW_UDF is not None) == (spark_version >= (4, 1))  # the column hand-over where Spark has it
    sql_catalog.create_namespace("columns")
    one_column = Schema(NestedField(1, "id", LongType(), required=True))
    table = sql_catalog.create_table("columns.t", one_column)
    context = WriteContext.for_table(table)
    # Five partitions, two of them empty; many batches per task (the session's own batch size is kept).
    frame = spark.range(0, 9_000, numPartitions=3).union(spark.range(0, 0, numPartitions=2))
    spark.conf.set(ARROW_BATCH_ROWS_KEY, "1000")
    try:
        written = write_dataframe(frame, context)
    finally:
        spark.conf.unset(ARROW_BATCH_ROWS_KEY)
    assert len(written) == 3 and sum(item["record_count"] for item in written) == 9_000
    ids = sorted(
        i for item in written for i in pq.read_table(urlparse(item["file_path"]).path).column("id").to_pylist()
    )
    assert ids == list(range(9_000))


def test_conforming_casts_to_the_tables_types_and_fills_missing_columns(spark) -> None:
    frame = spark.createDataFrame([(1,)], "id int")
    conformed = conform_dataframe(frame, SCHEMA, spark_types_of(SCHEMA))
    assert conformed.dtypes == [("id", "bigint"), ("part", "string")]
    assert conformed.collect()[0].asDict() == {"id": 1, "part": None}


def test_key_positions_are_read_by_the_per_task_scan_with_deletes_applied(spark, sql_catalog) -> None:
    sql_catalog.create_namespace("keys")
    table = sql_catalog.create_table("keys.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    rows = pa.table({"id": pa.array(range(6), pa.int64()), "part": ["a", "b"] * 3})
    files = [to_data_file(f) for f in write_data(rows, WriteContext.for_table(table), "data")]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    table.refresh()
    file_a = next(f.file_path for f in files if f.partition[0] == "a")  # ids 0, 2, 4 at positions 0, 1, 2
    positions = pa.table({"file_path": [file_a], "pos": pa.array([1], pa.int64())})
    deletes = write_position_delete_rows(positions, WriteContext.for_table(table), 0, ("a",), "deletes")
    commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=[to_data_file(f) for f in deletes]))
    table.refresh()
    live = files_that_may_hold_keys(table, ["id"], AlwaysTrue(), with_position_deletes=True)
    ordinals = {partition: index for index, partition in enumerate(partitions_of(live))}
    frame = key_positions(
        spark, [(f, ordinals[(f.spec_id, f.partition)]) for f in live], key_scan_context(table, ["id"], live)
    )
    assert frame.columns == ["file_path", "pos", ORDINAL_COLUMN, "id"]
    got = sorted((row.file_path == file_a, row.pos, row.id) for row in frame.collect())
    assert got == [(False, 0, 1), (False, 1, 3), (False, 2, 5), (True, 0, 0), (True, 2, 4)]
    assert {row[ORDINAL_COLUMN] for row in frame.collect()} == set(ordinals.values())
    # Small files share a Spark task, as a read packs them: not a task per file.
    assert len(live) == 2 and frame.rdd.getNumPartitions() == 1
