"""The iceberg_mor data source without a Spark session: its options, pushed filters, partitions and reads."""

from __future__ import annotations

import pytest
from pyiceberg.expressions import AlwaysTrue, And, EqualTo, GreaterThan, NotNull
from pyspark.sql import datasource as spark_ds
from pyspark.sql.datasource import InputPartition

from spark_jobs.spark.source import (
    FilterPushdownReader,
    IcebergMergeOnReadSource,
    MergeOnReadReader,
    ReadOptions,
    ScanTaskPartition,
)
from spark_jobs.spark.types import spark_arrow_schema_of

# The Python data source API (pyspark.sql.datasource) is Spark 4's: never collected on Spark 3.5 (conftest).
pytestmark = pytest.mark.spark4


def test_options_parse_from_sparks_string_map() -> None:
    options = ReadOptions.from_spark(
        {"catalog": "lake", "table": "ns.t", "columns": "id, price ,", "split_size": "1024", "filter_pushdown": "TRUE"}
    )
    assert (options.catalog, options.table, options.columns) == ("lake", "ns.t", ("id", "price"))
    assert (options.split_size, options.snapshot_id, options.filter_pushdown) == (1024, None, True)
    with pytest.raises(ValueError, match="needs option\\(s\\) catalog, table"):
        ReadOptions.from_spark({"columns": "id"})
    with pytest.raises(ValueError, match="option snapshot_id must be an integer, got 'latest'"):
        ReadOptions.from_spark({"catalog": "lake", "table": "ns.t", "snapshot_id": "latest"})


def test_pushed_filters_are_kept_when_exact_and_handed_back_otherwise() -> None:
    reader = FilterPushdownReader(ReadOptions("lake", "ns.t", filter_pushdown=True))
    exact, inexact = spark_ds.EqualTo(("id",), 5), spark_ds.GreaterThan(("price",), 1.5)
    assert list(reader.pushFilters([exact, inexact, spark_ds.IsNotNull(("name",))])) == [inexact]
    assert reader.pushed_filter == And(EqualTo("id", 5), NotNull("name"))
    assert list(reader.pushFilters([inexact])) == [inexact] and reader.pushed_filter == AlwaysTrue()


def test_the_reader_class_follows_the_pushdown_option() -> None:
    source = IcebergMergeOnReadSource({"catalog": "lake", "table": "ns.t", "filter_pushdown": "true"})
    assert type(source.reader(None)) is FilterPushdownReader
    plain = IcebergMergeOnReadSource({"catalog": "lake", "table": "ns.t"})
    assert type(plain.reader(None)) is MergeOnReadReader


def test_partitions_and_reads_give_the_planned_rows_in_sparks_types(conformance_catalog) -> None:
    options = ReadOptions("conformance", "corpus.mor_v2_pos", columns=("id",), row_filter="id < 100")
    reader = MergeOnReadReader(options)
    reader.pushed_filter = GreaterThan("id", 50)  # what pushFilters would have accepted
    partitions = reader.partitions()
    assert all(isinstance(p, ScanTaskPartition) for p in partitions)
    batches = [batch for partition in partitions for batch in reader.read(partition)]
    ids = [value for batch in batches for value in batch.column(0).to_pylist()]
    assert ids and all(50 < value < 100 for value in ids)
    expected = spark_arrow_schema_of(partitions[0].context.output_schema)
    assert all(batch.schema.equals(expected) for batch in batches)
    assert list(reader.read(InputPartition(None))) == []  # Spark's placeholder for an empty scan


def test_the_schema_is_the_projection_at_the_chosen_snapshot(conformance_catalog) -> None:
    source = IcebergMergeOnReadSource({"catalog": "conformance", "table": "corpus.v1_cow", "columns": "ts,id"})
    assert [field.name for field in source.schema().fields] == ["ts", "id"]
