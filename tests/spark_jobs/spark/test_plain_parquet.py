"""Delete-free files through Spark's own Parquet reader: the same rows as the engine's reader, wherever it is taken.

Each read is run with the route on and off (``ENABLED_CONF``) in the same session; the rows must be equal, and the
route must have been taken where the test says so (otherwise the comparison would prove nothing).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.spark import plain_parquet
from spark_jobs.spark.plain_parquet import ENABLED_CONF, MAX_FILES_CONF, MIN_BYTES_CONF, plain_route
from spark_jobs.spark.scan import counted_dataframe_from_session, dataframe_from_session
from spark_jobs.spark.types import arrow_schema_of
from tests.support.conformance import ConformanceQuery, load_queries, table_checksum

pytestmark = pytest.mark.spark35

# Conformance queries whose files (all, or some beside files with deletes) go to Spark's reader.
PLAIN_QUERIES = {
    "corpus.types-full_scan": "lists, maps, structs, NaN, -0.0, pre-1970 dates",
    "corpus.types-filter": "a filter beside every type",
    "corpus.v1_cow-filter_projection": "identity partition",
    "corpus.partition_evolution-as_of_timestamp_spec2_bucket_category": "identity partition added by evolution",
    "corpus.v2_eq_deletes_part-full_scan": "files without deletes beside files with equality deletes",
    "corpus.mor_v2_pos-snapshot_update1": "files without deletes beside files with position deletes",
}
QUERIES = [query for query in load_queries() if query.id in PLAIN_QUERIES]


def rows_of(frame) -> pa.Table:
    """A DataFrame's rows as Arrow (Spark 4's ``toArrow``; Spark 3.5's Arrow collect)."""
    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    batches = frame._collect_as_arrow()
    return pa.Table.from_batches(batches) if batches else arrow_schema_of(frame.schema).empty_table()


def checksum(table: pa.Table) -> str:
    return table_checksum(table, table.column_names)[0]


@pytest.fixture(autouse=True)
def route_for_small_tables(spark):
    """The test tables are small: let the route take files of any size (``MIN_BYTES_CONF``) in this module."""
    spark.conf.set(MIN_BYTES_CONF, "0")
    yield
    spark.conf.unset(MIN_BYTES_CONF)


def read_both_ways(spark, session) -> tuple[pa.Table, pa.Table]:
    """The session's rows through the split route and through the engine alone; both frames have one schema
    (names, types and nullability)."""
    try:
        spark.conf.set(ENABLED_CONF, "false")
        engine_frame = dataframe_from_session(spark, session)
        engine_only = rows_of(engine_frame)
    finally:
        spark.conf.unset(ENABLED_CONF)
    split_frame = dataframe_from_session(spark, session)
    assert split_frame.schema == engine_frame.schema
    return rows_of(split_frame), engine_only


@pytest.mark.parametrize("query", QUERIES, ids=[q.id for q in QUERIES])
def test_javas_tables_read_the_same_through_spark_for_files_without_deletes(
    spark, conformance_catalog, query: ConformanceQuery
) -> None:
    session = open_read_session(
        conformance_catalog,
        query.table,
        columns=query.select,
        row_filter=query.where,
        snapshot_id=query.snapshot_id,
        as_of=query.as_of_timestamp_ms,
    )
    route = plain_route(spark, session.tasks, session.context, session.table_schemas)
    assert route is not None and route.files, PLAIN_QUERIES[query.id]
    split, engine_only = read_both_ways(spark, session)
    assert split.column_names == query.result_columns and split.num_rows == query.row_count
    assert checksum(split) == query.checksum == checksum(engine_only)


@pytest.fixture(scope="module")
def evolved_table(tmp_path_factory):
    """A table whose files were written under four schemas: renamed, added, dropped and re-added, nested added,
    and two columns whose names were swapped; identity-partitioned on ``cat``."""
    from pyiceberg.catalog.sql import SqlCatalog

    root = tmp_path_factory.mktemp("evolved")
    catalog = SqlCatalog("evolved", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "cat", StringType(), required=False),
        NestedField(3, "qty", IntegerType(), required=False),
        NestedField(4, "info", StructType(NestedField(5, "a", IntegerType(), required=False)), required=False),
        NestedField(6, "x", StringType(), required=False),
        NestedField(7, "y", StringType(), required=False),
        NestedField(8, "gone", StringType(), required=False),
        NestedField(9, "tags", ListType(10, StringType(), element_required=False), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
    table = catalog.create_table("db.evolved", schema, partition_spec=spec)

    def append(rows: list[dict]) -> None:
        table.append(pa.Table.from_pylist(rows, schema=table.schema().as_arrow()))

    append(
        [
            {
                "id": i,
                "cat": "ab"[i % 2],
                "qty": i,
                "info": {"a": -i},
                "x": f"x{i}",
                "y": f"y{i}",
                "gone": "g",
                "tags": [str(i)] if i % 3 else None,
            }
            for i in range(20)
        ]
    )
    with table.update_schema() as update:
        update.rename_column("qty", "quantity")
        update.rename_column("info.a", "alpha")
        update.add_column(("info", "b"), StringType())
        update.add_column("extra", DoubleType())
        update.delete_column("gone")
    with table.update_schema() as update:
        update.add_column("gone", StringType())  # a new field id: old files' values must not come back
        update.rename_column("x", "x_old")
    with table.update_schema() as update:
        update.rename_column("y", "x")
    with table.update_schema() as update:
        update.rename_column("x_old", "y")
    append(
        [
            {
                "id": i,
                "cat": "abc"[i % 3],
                "quantity": i * 2,
                "info": {"alpha": i, "b": "n"},
                "y": f"new-x{i}",
                "x": f"new-y{i}",
                "extra": i / 4,
                "gone": "back",
                "tags": [],
            }
            for i in range(20, 35)
        ]
    )
    return catalog, table


@pytest.mark.parametrize(
    ("columns", "row_filter", "plain"),
    [
        (None, None, True),
        (["gone", "quantity", "id"], None, True),
        (["info", "cat", "x", "y"], "id > 15", True),
        (["id", "extra", "tags"], "cat = 'b' or id < 3", True),
        # A filter on a name another field had: Spark's Parquet filters find columns by name, so the engine reads.
        (["id", "x"], "x = 'y3'", False),
        # A filter on a renamed column no other field had: old files lack the name (nothing pruned there).
        (["id"], "quantity >= 10", True),
        (["cat", "quantity"], "quantity >= 10 and cat = 'a'", True),
    ],
)
def test_an_evolved_tables_files_read_the_same_through_spark(spark, evolved_table, columns, row_filter, plain) -> None:
    catalog, table = evolved_table
    session = open_read_session(catalog, table, columns=columns, row_filter=row_filter)
    route = plain_route(spark, session.tasks, session.context, session.table_schemas)
    assert (route is not None) == plain
    split, engine_only = read_both_ways(spark, session)
    in_process = session.to_arrow()
    assert split.num_rows == in_process.num_rows > 0
    assert checksum(split) == checksum(engine_only) == checksum(in_process)
    if columns is None:  # the swapped names, the re-added column and the renamed nested field hold their own values
        by_id = {row["id"]: row for row in split.to_pylist()}
        assert (by_id[3]["x"], by_id[3]["y"], by_id[3]["gone"], by_id[3]["info"]) == (
            "y3",
            "x3",
            None,
            {"alpha": -3, "b": None},
        )
        assert (by_id[21]["x"], by_id[21]["y"], by_id[21]["gone"]) == ("new-y21", "new-x21", "back")


@pytest.fixture(scope="module")
def edge_values(tmp_path_factory):
    """One file of edge values in every type a filter may compare: NaN, -0.0, infinities, NULLs, old dates."""
    from pyiceberg.catalog.sql import SqlCatalog

    root = tmp_path_factory.mktemp("edges")
    catalog = SqlCatalog("edges", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "i", IntegerType(), required=False),
        NestedField(2, "f", FloatType(), required=False),
        NestedField(3, "d", DoubleType(), required=False),
        NestedField(4, "s", StringType(), required=False),
        NestedField(5, "dec", DecimalType(10, 2), required=False),
        NestedField(6, "day", DateType(), required=False),
        NestedField(7, "ts", TimestampType(), required=False),
        NestedField(8, "tz", TimestamptzType(), required=False),
        NestedField(9, "bin", BinaryType(), required=False),
    )
    table = catalog.create_table("db.edges", schema)
    doubles = [math.nan, -0.0, 0.0, 1.0, 2.5, math.inf, -math.inf, None, 1.0, math.nan]
    rows = [
        {
            "i": None if n == 7 else n - 3,
            "f": doubles[n],
            "d": doubles[(n + 3) % 10],
            "s": [None, "", "ab", "abc", "b", "é", "a", "ab\u0000", "zz", "A"][n],
            "dec": None if n == 4 else decimal.Decimal(n * 37 - 100) / 100,
            "day": None if n == 5 else dt.date(1500 + n * 60, 1 + n, 3),
            "ts": None if n == 6 else dt.datetime(1969, 12, 31, 23, 59, 59, 999_990) + dt.timedelta(microseconds=n * 5),
            "tz": None if n == 8 else dt.datetime(2024, 3, 1, tzinfo=dt.UTC) + dt.timedelta(hours=n),
            "bin": None if n == 9 else bytes([n, 255 - n]),
        }
        for n in range(10)
    ]
    table.append(pa.Table.from_pylist(rows, schema=table.schema().as_arrow()))
    return catalog, table


@pytest.mark.parametrize(
    "row_filter",
    [
        "d > 1.0",
        "d <= 0.0",
        "d = 0.0",
        "d != 1.0",
        "f in (1.0, 2.5)",
        "f not in (1.0, -0.0)",
        "d is nan",
        "d is not nan",
        "not (d >= 1.0)",
        "f < 3.0 or i is null",
        "s like 'ab%'",
        "s not like 'ab%'",
        "s >= 'b'",
        "s in ('', 'é', 'zz')",
        "dec >= 1.50",
        "dec < -0.26",
        "day < '1700-01-01'",
        "day = '1680-04-03'",
        "ts >= '1969-12-31T23:59:59.999995'",
        "tz > '2024-03-01T04:00:00+00:00'",
        "i not in (1, 2) and i is not null",
        "i != 0",
        "bin is null",
    ],
)
def test_filters_keep_the_engines_semantics_on_edge_values(spark, edge_values, row_filter) -> None:
    catalog, table = edge_values
    session = open_read_session(catalog, table, row_filter=row_filter)
    route = plain_route(spark, session.tasks, session.context, session.table_schemas)
    assert route is not None and route.row_filter is not None
    split, engine_only = read_both_ways(spark, session)
    assert checksum(split) == checksum(engine_only) == checksum(session.to_arrow())


def test_counters_count_the_files_and_rows_spark_read(spark, conformance_catalog, tmp_path) -> None:
    session = open_read_session(conformance_catalog, "corpus.v2_eq_deletes_part", columns=["id"])
    route = plain_route(spark, session.tasks, session.context, session.table_schemas)
    assert route is not None and route.files and route.engine_tasks
    frame, counters = counted_dataframe_from_session(spark, session)
    frame.write.parquet(str(tmp_path / "out"))
    written = spark.read.parquet(str(tmp_path / "out")).count()
    assert counters.value["rows_out"] == written == session.to_arrow().num_rows
    assert counters.value["data_files_read_by_spark"] == len(route.files)


def test_the_route_is_off_when_the_session_says_so(spark, conformance_catalog) -> None:
    session = open_read_session(conformance_catalog, "corpus.v1_cow")
    try:
        spark.conf.set(ENABLED_CONF, "false")
        assert plain_route(spark, session.tasks, session.context, session.table_schemas) is None
    finally:
        spark.conf.unset(ENABLED_CONF)
    assert plain_route(spark, session.tasks, session.context, session.table_schemas) is not None


def test_identity_partition_values_past_the_limit_leave_the_read_to_the_engine(
    spark, evolved_table, monkeypatch
) -> None:
    catalog, table = evolved_table
    with_cat = open_read_session(catalog, table, columns=["id", "cat"])
    without_cat = open_read_session(catalog, table, columns=["id"])
    monkeypatch.setattr(plain_parquet, "MAX_CONSTANT_GROUPS", 2)  # the table has files of cat a, b and c
    assert plain_route(spark, with_cat.tasks, with_cat.context, with_cat.table_schemas) is None
    assert plain_route(spark, without_cat.tasks, without_cat.context, without_cat.table_schemas) is not None


def test_small_reads_and_sessions_that_skip_files_stay_with_the_engine(spark, conformance_catalog) -> None:
    session = open_read_session(conformance_catalog, "corpus.v1_cow")
    assert plain_route(spark, session.tasks, session.context, session.table_schemas) is not None
    try:
        spark.conf.unset(MIN_BYTES_CONF)  # the default: the table's few KB are under it
        assert plain_route(spark, session.tasks, session.context, session.table_schemas) is None
        spark.conf.set(MIN_BYTES_CONF, "0")
        spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
        assert plain_route(spark, session.tasks, session.context, session.table_schemas) is None
    finally:
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")
        spark.conf.set(MIN_BYTES_CONF, "0")


def test_reads_of_more_files_than_the_limit_stay_with_the_engine(spark, conformance_catalog, caplog) -> None:
    """Spark's reader asks for each path's status before reading: above the file limit the engine reads them all,
    and the log says why; a bad limit is the user's error naming the setting."""
    session = open_read_session(conformance_catalog, "corpus.small_files")
    files = {file_slice.path for task in session.tasks for file_slice in task.slices}
    assert len(files) > 2
    try:
        spark.conf.set(MAX_FILES_CONF, str(len(files)))
        assert plain_route(spark, session.tasks, session.context, session.table_schemas) is not None
        spark.conf.set(MAX_FILES_CONF, str(len(files) - 1))
        with caplog.at_level("INFO", logger="spark_jobs.read"):
            assert plain_route(spark, session.tasks, session.context, session.table_schemas) is None
        assert f"over {MAX_FILES_CONF}={len(files) - 1}" in caplog.text
        spark.conf.set(MAX_FILES_CONF, "many")
        with pytest.raises(UserInputError, match=f"Spark setting {MAX_FILES_CONF} must be a whole number"):
            plain_route(spark, session.tasks, session.context, session.table_schemas)
    finally:
        spark.conf.unset(MAX_FILES_CONF)


@pytest.fixture(scope="module")
def promoted_table(tmp_path_factory):
    """Files written before and after int -> long, float -> double and decimal(9,2) -> decimal(12,2), beside
    required columns of several types (a struct among them)."""
    from pyiceberg.catalog.sql import SqlCatalog

    root = tmp_path_factory.mktemp("promoted")
    catalog = SqlCatalog("promoted", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "n", IntegerType(), required=False),
        NestedField(3, "f", FloatType(), required=False),
        NestedField(4, "dec", DecimalType(9, 2), required=False),
        NestedField(5, "day", DateType(), required=True),
        NestedField(6, "ts", TimestampType(), required=True),
        NestedField(7, "s", StringType(), required=True),
        NestedField(8, "pair", StructType(NestedField(9, "a", IntegerType(), required=False)), required=True),
    )
    table = catalog.create_table("db.promoted", schema)

    def rows(start: int) -> list[dict]:
        return [
            {
                "id": i,
                "n": i * 1000,
                "f": i + 0.25,
                "dec": decimal.Decimal(i * 101) / 100,
                "day": dt.date(2020, 1, 1) + dt.timedelta(days=i),
                "ts": dt.datetime(2020, 1, 1) + dt.timedelta(minutes=i),
                "s": f"s{i}",
                "pair": {"a": None if i % 4 == 0 else i},
            }
            for i in range(start, start + 12)
        ]

    table.append(pa.Table.from_pylist(rows(0), schema=table.schema().as_arrow()))
    with table.update_schema() as update:
        update.update_column("n", LongType())
        update.update_column("f", DoubleType())
        update.update_column("dec", DecimalType(12, 2))
    table.append(pa.Table.from_pylist(rows(12), schema=table.schema().as_arrow()))
    return catalog, table


@pytest.mark.parametrize(
    ("columns", "row_filter", "plain"),
    [
        (["id", "day", "ts", "s", "pair"], None, True),  # required columns keep the engine's non-nullable schema
        (["id", "s"], "day >= '2020-01-10' and ts < '2020-01-01T00:20:00'", True),
        (["id", "n"], None, False),  # promoted types: Spark's reader does not promote
        (["id", "f"], None, False),
        (["id"], "dec > 5.00", False),
    ],
)
def test_promoted_columns_go_to_the_engine_and_required_ones_stay_required(
    spark, promoted_table, columns, row_filter, plain
) -> None:
    catalog, table = promoted_table
    session = open_read_session(catalog, table, columns=columns, row_filter=row_filter)
    route = plain_route(spark, session.tasks, session.context, session.table_schemas)
    assert (route is not None) == plain
    split, engine_only = read_both_ways(spark, session)
    assert split.num_rows == session.to_arrow().num_rows > 0
    assert checksum(split) == checksum(engine_only) == checksum(session.to_arrow())
