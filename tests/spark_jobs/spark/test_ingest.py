"""Ingest on real Spark (local[2]) into the session's ``testing`` catalog, read back with our reader and pyiceberg.

pyiceberg reads position deletes but refuses equality deletes, so equality-mode results are checked with our
reader only (and pyiceberg's refusal is asserted, so the test notices when that changes).
"""

from __future__ import annotations

import datetime
import itertools
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from spark_jobs.engine.commit.producer import CommitConflictError
from spark_jobs.engine.jobs import ingest_job
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.spark import ingest as spark_ingest
from spark_jobs.spark.ingest import IngestOptions, ingest

pytestmark = pytest.mark.spark35

CATALOG = "testing"
UTC = datetime.UTC
_names = itertools.count()


def _table_name(prefix: str) -> str:
    return f"ingest_tests.{prefix}_{next(_names)}"


def _frame(spark, rows):
    return spark.createDataFrame(rows, "id long, name string, ts timestamp")


def _rows(ids, name="v1"):
    return [(i, f"{name}-{i}", datetime.datetime(2024, 1, 1 + i % 3, 12, tzinfo=UTC)) for i in ids]


def _ours(table: str) -> list[tuple]:
    result = open_read_session(CATALOG, table).to_arrow()
    return sorted(zip(result.column("id").to_pylist(), result.column("name").to_pylist(), strict=True))


def _pyiceberg(testing_catalog, table: str) -> list[tuple]:
    result = testing_catalog.load_table(table).scan().to_arrow()
    return sorted(zip(result.column("id").to_pylist(), result.column("name").to_pylist(), strict=True))


def _expected(rows) -> list[tuple]:
    return sorted((row[0], row[1]) for row in rows)


def _table_files(testing_catalog, table: str) -> set[Path]:
    location = Path(testing_catalog.load_table(table).metadata.location.removeprefix("file://"))
    return {p for p in (location / "data").rglob("*.parquet")}


@pytest.mark.parametrize("partition_by", ["day(ts),bucket(4,id)", None])
def test_position_mode_upsert_and_delete_round_trip(spark, testing_catalog, partition_by) -> None:
    table = _table_name("position")
    first = _rows(range(30))
    created = ingest(
        spark,
        CATALOG,
        table,
        _frame(spark, first),
        IngestOptions(mode="append", create_if_missing=True, partition_by=partition_by, sort_by="id"),
    )
    assert created["operation"] == "append" and created["rows_added"] == 30
    assert _ours(table) == _pyiceberg(testing_catalog, table) == _expected(first)

    changes = _rows([3, 4, 100], "v2")
    upserted = ingest(spark, CATALOG, table, _frame(spark, changes), IngestOptions(mode="upsert", key=("id",)))
    assert upserted["operation"] == "overwrite" and upserted["rows_deleted_by_key"] == 2
    assert upserted["position_deletes_added"] == 2 and upserted["rows_added"] == 3
    state = [r for r in first if r[0] not in (3, 4)] + changes
    assert _ours(table) == _pyiceberg(testing_catalog, table) == _expected(state)
    # A v2 table has no row lineage: the data files hold the table's columns only (delete files: path, position).
    schemas = {tuple(pq.read_schema(path).names) for path in _table_files(testing_catalog, table)}
    assert schemas == {("id", "name", "ts"), ("file_path", "pos")}

    deleted = ingest(
        spark,
        CATALOG,
        table,
        spark.createDataFrame([(4,), (5,), (999,)], "id long"),
        IngestOptions(mode="delete", key=("id",)),
    )
    assert deleted["operation"] == "delete" and deleted["rows_deleted_by_key"] == 2
    state = [r for r in state if r[0] not in (4, 5)]
    assert _ours(table) == _pyiceberg(testing_catalog, table) == _expected(state)

    # Keys beyond every file's bounds: the planner prunes every file, nothing is written or committed.
    nothing = ingest(
        spark, CATALOG, table, spark.createDataFrame([(5000,)], "id long"), IngestOptions(mode="delete", key=("id",))
    )
    assert nothing["operation"] is None and nothing["snapshot_id"] == deleted["snapshot_id"]
    assert nothing["rows_deleted_by_key"] == 0


@pytest.mark.parametrize("partition_by", ["bucket(4,id)", "day(ts)"])
def test_equality_mode_upsert_and_delete_round_trip(spark, testing_catalog, partition_by) -> None:
    table = _table_name("equality")
    first = _rows(range(20))
    ingest(
        spark,
        CATALOG,
        table,
        _frame(spark, first),
        IngestOptions(mode="append", create_if_missing=True, partition_by=partition_by),
    )
    changes = _rows([1, 2, 50], "v2")
    upserted = ingest(
        spark,
        CATALOG,
        table,
        _frame(spark, changes),
        IngestOptions(mode="upsert", key=("id",), delete_mode="equality"),
    )
    assert upserted["equality_deletes_added"] >= 3 - (partition_by == "day(ts)") and upserted["rows_added"] == 3
    state = [r for r in first if r[0] not in (1, 2)] + changes
    assert _ours(table) == _expected(state)
    deleted = ingest(
        spark,
        CATALOG,
        table,
        spark.createDataFrame([(2,), (7,)], "id long"),
        IngestOptions(mode="delete", key=("id",), delete_mode="equality"),
    )
    assert deleted["operation"] == "delete" and deleted["delete_files_written"] >= 1
    state = [r for r in state if r[0] not in (2, 7)]
    assert _ours(table) == _expected(state)
    with pytest.raises(ValueError, match="equality deletes"):
        testing_catalog.load_table(table).scan().to_arrow()


def test_overwrite_by_filter_and_by_partition(spark, testing_catalog) -> None:
    table = _table_name("overwrite")
    first = _rows(range(12))
    ingest(
        spark,
        CATALOG,
        table,
        _frame(spark, first),
        IngestOptions(mode="append", create_if_missing=True, partition_by="day(ts)"),
    )
    replaced = ingest(
        spark,
        CATALOG,
        table,
        _frame(spark, _rows([100], "new")),
        IngestOptions(mode="overwrite", overwrite_filter="id < 4"),
    )
    assert replaced["operation"] == "overwrite" and replaced["data_files_removed"] >= 1
    state = [r for r in first if r[0] >= 4] + _rows([100], "new")
    assert _ours(table) == _pyiceberg(testing_catalog, table) == _expected(state)

    # Dynamic: the new rows' days (id % 3 == 0 -> Jan 1) are replaced, the other days kept.
    dynamic = ingest(spark, CATALOG, table, _frame(spark, _rows([300], "dyn")), IngestOptions(mode="overwrite"))
    assert dynamic["operation"] == "overwrite"
    state = [r for r in state if r[2].day != 1] + _rows([300], "dyn")
    assert _ours(table) == _pyiceberg(testing_catalog, table) == _expected(state)


def test_a_retry_with_the_same_idempotency_key_adds_no_rows(spark, testing_catalog) -> None:
    table = _table_name("idempotent")
    frame = _frame(spark, _rows(range(5)))
    options = IngestOptions(mode="append", create_if_missing=True, idempotency_key="run-1/task")
    first = ingest(spark, CATALOG, table, frame, options)
    files_after_first = _table_files(testing_catalog, table)
    again = ingest(spark, CATALOG, table, frame, options)
    assert again["already_committed"] and again["snapshot_id"] == first["snapshot_id"]
    assert _ours(table) == _expected(_rows(range(5)))
    assert len(testing_catalog.load_table(table).metadata.snapshots) == 1
    assert _table_files(testing_catalog, table) == files_after_first


def test_schema_and_key_errors_commit_nothing(spark, testing_catalog) -> None:
    table = _table_name("errors")
    ingest(spark, CATALOG, table, _frame(spark, _rows(range(3))), IngestOptions(mode="append", create_if_missing=True))
    before = testing_catalog.load_table(table).current_snapshot().snapshot_id
    cases = [
        (spark.createDataFrame([(1, 5)], "id long, name int"), IngestOptions(mode="append"), "'name' has type int"),
        (
            spark.createDataFrame([(1, "x", 2)], "id long, name string, extra int"),
            IngestOptions(mode="append"),
            "pass --allow-schema-evolution",
        ),
        (
            spark.createDataFrame([(None, "x"), (None, "y")], "id long, name string"),
            IngestOptions(mode="upsert", key=("id",)),
            "2 source row",
        ),
        (
            spark.createDataFrame([(1, "x"), (1, "y"), (2, "z"), (2, "w"), (3, "v")], "id long, name string"),
            IngestOptions(mode="upsert", key=("id",)),
            "2 key value",
        ),
    ]
    for frame, options, message in cases:
        with pytest.raises(UserInputError, match=message):
            ingest(spark, CATALOG, table, frame, options)
    assert testing_catalog.load_table(table).current_snapshot().snapshot_id == before
    empty = ingest(spark, CATALOG, table, _frame(spark, []), IngestOptions(mode="append"))
    assert empty["operation"] is None and empty["snapshot_id"] == before

    evolved = ingest(
        spark,
        CATALOG,
        table,
        spark.createDataFrame([(7, "x", 2)], "id long, name string, extra int"),
        IngestOptions(mode="append", allow_schema_evolution=True),
    )
    loaded = testing_catalog.load_table(table)
    assert loaded.schema().find_field("extra").field_id == 4
    assert loaded.current_snapshot().snapshot_id == evolved["snapshot_id"]
    assert loaded.current_snapshot().schema_id == loaded.schema().schema_id
    extra = open_read_session(CATALOG, table, columns=["id", "extra"]).to_arrow().sort_by("id")
    assert extra.column("extra").to_pylist() == [None, None, None, 2]


def test_an_upsert_losing_to_a_concurrent_append_fails_and_leaves_no_file(spark, testing_catalog, monkeypatch) -> None:
    table = _table_name("race")
    ingest(spark, CATALOG, table, _frame(spark, _rows(range(4))), IngestOptions(mode="append", create_if_missing=True))
    files_before = _table_files(testing_catalog, table)
    real_commit = ingest_job.commit_change

    def commit_after_a_concurrent_append(table_object, change, **kwargs):
        import pyarrow as pa

        other = testing_catalog.load_table(table)
        other.append(
            pa.table(
                {
                    "id": pa.array([2], pa.int64()),
                    "name": ["concurrent"],
                    "ts": pa.array([datetime.datetime(2024, 1, 1, tzinfo=UTC)], pa.timestamp("us", tz="UTC")),
                },
                schema=other.schema().as_arrow(),
            )
        )
        return real_commit(table_object, change, **kwargs)

    monkeypatch.setattr(ingest_job, "commit_change", commit_after_a_concurrent_append)
    with pytest.raises(CommitConflictError, match="added data file"):
        ingest(spark, CATALOG, table, _frame(spark, _rows([1, 2], "v2")), IngestOptions(mode="upsert", key=("id",)))
    loaded = testing_catalog.load_table(table)
    assert loaded.current_snapshot().summary.operation.value == "append"
    concurrent_files = (
        {Path(f.file_path.removeprefix("file://")) for f in loaded.inspect.files().to_pylist()} if False else set()
    )
    leftover = _table_files(testing_catalog, table) - files_before - concurrent_files
    # Only the concurrent append's own file is new: nothing this job wrote survived.
    assert len(leftover) == 1 and all("concurrent" not in p.name for p in leftover)
    assert sorted(r[1] for r in _ours(table)) == sorted([f"v1-{i}" for i in range(4)] + ["concurrent"])


def test_nulls_in_a_required_column_are_bad_input(spark, testing_catalog) -> None:
    import pyarrow as pa

    testing_catalog.create_namespace_if_not_exists("ingest_tests")
    name = _table_name("required")
    point = pa.struct([pa.field("x", pa.float64(), nullable=False), pa.field("y", pa.float64())])
    testing_catalog.create_table(
        name,
        pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), ("point", point)]),
        properties={"format-version": "2"},
    )
    frame = spark.createDataFrame([(1, "a"), (None, "b"), (None, "c")], "id long, name string").repartition(3)
    with pytest.raises(UserInputError, match=r"nulls in column\(s\) table .* requires: 'id' in 2 row"):
        ingest(spark, CATALOG, name, frame, IngestOptions(mode="append"))
    # Without a required field inside a struct the writers count them: in three tasks here, the ones that find
    # nulls report them, and the driver names the rows of all of them; what the others wrote is deleted.
    flat = _table_name("required_flat")
    testing_catalog.create_table(
        flat,
        pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())]),
        properties={"format-version": "2"},
    )
    with pytest.raises(UserInputError, match=r"nulls in column\(s\) table .* requires: 'id' in 2 row"):
        ingest(spark, CATALOG, flat, frame, IngestOptions(mode="append"))
    assert testing_catalog.load_table(flat).current_snapshot() is None
    assert not _table_files(testing_catalog, flat)
    with pytest.raises(UserInputError, match=r"nulls in column\(s\) table .* requires: 'id' in 2 row"):
        ingest(spark, CATALOG, flat, frame, IngestOptions(mode="upsert", key=("name",)))  # checked with the keys
    # a required field of a struct: null where its struct is not (a null struct is fine)
    nested = spark.createDataFrame(
        [(1, {"x": None, "y": 1.0}), (2, None), (3, {"x": 2.0, "y": None})],
        "id long, point struct<x: double, y: double>",
    )
    with pytest.raises(UserInputError, match=r"requires: 'point.x' in 1 row\(s\)$"):
        ingest(spark, CATALOG, name, nested, IngestOptions(mode="append"))
    assert testing_catalog.load_table(name).current_snapshot() is None
    assert not _table_files(testing_catalog, name)
    with pytest.raises(UserInputError, match=r"nulls in column\(s\) table .* requires: 'id' in 2 row"):
        ingest(spark, CATALOG, name, frame, IngestOptions(mode="upsert", key=("name",)))
    assert testing_catalog.load_table(name).current_snapshot() is None


def test_null_structs_with_required_fields_are_written_and_read_back_as_null(spark, testing_catalog) -> None:
    """An optional struct with a required field: a source without the struct, and null structs, append as nulls."""
    import pyarrow as pa

    testing_catalog.create_namespace_if_not_exists("ingest_tests")
    name = _table_name("null_structs")
    point = pa.struct([pa.field("x", pa.float64(), nullable=False), pa.field("y", pa.float64())])
    testing_catalog.create_table(
        name,
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("point", point)]),
        properties={"format-version": "2"},
    )
    without_struct = spark.createDataFrame([(1,), (2,)], "id long")
    ingest(spark, CATALOG, name, without_struct, IngestOptions(mode="append"))
    with_nulls = spark.createDataFrame(
        [(3, None), (4, {"x": 4.0, "y": None})], "id long, point struct<x: double not null, y: double>"
    )
    ingest(spark, CATALOG, name, with_nulls, IngestOptions(mode="append"))
    rows = open_read_session(CATALOG, name).to_arrow().sort_by("id").to_pylist()
    assert rows == [
        {"id": 1, "point": None},
        {"id": 2, "point": None},
        {"id": 3, "point": None},
        {"id": 4, "point": {"x": 4.0, "y": None}},
    ]


def test_schema_evolution_adds_nested_columns_that_read_back(spark, testing_catalog) -> None:
    table = _table_name("nested_evolution")
    ingest(spark, CATALOG, table, _frame(spark, _rows(range(2))), IngestOptions(mode="append", create_if_missing=True))
    frame = spark.createDataFrame(
        [(5, "x", {"lat": 1.5, "lon": -2.0}, ["a", "b"])],
        "id long, name string, point struct<lat: double, lon: double>, tags array<string>",
    )
    ingest(spark, CATALOG, table, frame, IngestOptions(mode="append", allow_schema_evolution=True))

    schema = testing_catalog.load_table(table).schema()
    assert [f.field_id for f in schema.find_field("point").field_type.fields] == [5, 6]
    assert schema.find_field("tags").field_id == 7
    result = open_read_session(CATALOG, table, columns=["id", "point", "tags"]).to_arrow().sort_by("id")
    assert result.to_pylist() == [
        {"id": 0, "point": None, "tags": None},
        {"id": 1, "point": None, "tags": None},
        {"id": 5, "point": {"lat": 1.5, "lon": -2.0}, "tags": ["a", "b"]},
    ]


def test_schema_evolution_adds_fields_inside_existing_structs(spark, testing_catalog) -> None:
    table = _table_name("struct_evolution")
    first = spark.createDataFrame(
        [(1, {"lat": 1.0, "lon": 2.0, "n": 5}, [{"k": "a"}])],
        "id long, point struct<lat: double, lon: double, n: int>, items array<struct<k: string>>",
    )
    ingest(spark, CATALOG, table, first, IngestOptions(mode="append", create_if_missing=True))
    # Fields in another order, one missing, one new in each struct (the one inside a list too), upserted by key.
    wider = spark.createDataFrame(
        [(1, {"alt": 9.5, "lon": 4.0, "lat": 3.0}, [{"v": 7, "k": "b"}, None]), (2, None, None)],
        "id long, point struct<alt: double, lon: double, lat: double>, items array<struct<v: long, k: string>>",
    )
    options = IngestOptions(mode="upsert", key=("id",), allow_schema_evolution=True)
    ingest(spark, CATALOG, table, wider, options)

    loaded = testing_catalog.load_table(table)
    assert loaded.metadata.last_column_id == 10 and loaded.current_snapshot().schema_id == loaded.schema().schema_id
    assert str(loaded.schema().find_field("point").field_type) == (
        "struct<4: lat: optional double, 5: lon: optional double, 6: n: optional int, 9: alt: optional double>"
    )
    assert loaded.schema().find_field("items.element.v").field_id == 10
    assert open_read_session(CATALOG, table).to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "point": {"lat": 3.0, "lon": 4.0, "n": None, "alt": 9.5}, "items": [{"k": "b", "v": 7}, None]},
        {"id": 2, "point": None, "items": None},
    ]
    before = loaded.current_snapshot().snapshot_id
    narrowed = spark.createDataFrame([(3, {"n": 1})], "id long, point struct<n: long>")
    with pytest.raises(UserInputError, match=r"column 'point.n' has type long in the source but int in the table"):
        ingest(spark, CATALOG, table, narrowed, IngestOptions(mode="append", allow_schema_evolution=True))
    assert testing_catalog.load_table(table).current_snapshot().snapshot_id == before


def _typed_parquet_rows(start: int, count: int):
    import decimal

    import pyarrow as pa

    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "qty": pa.array([None if i % 5 == 0 else i % 1000 for i in ids], pa.int32()),
            "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in ids]),
            "ts": pa.array(
                [datetime.datetime(2024, 1, 1 + i % 3, i % 24, tzinfo=UTC) for i in ids], pa.timestamp("us", tz="UTC")
            ),
            "local_ts": pa.array([datetime.datetime(2024, 2, 1, i % 24) for i in ids], pa.timestamp("us")),
            "day": pa.array([datetime.date(2024, 3, 1 + i % 28) for i in ids], pa.date32()),
            "amount": pa.array([decimal.Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
            "price": pa.array([i / 8 for i in ids], pa.float64()),
            "flag": pa.array([i % 2 == 0 for i in ids]),
            "raw": pa.array([bytes([i % 256]) for i in ids], pa.binary()),
        }
    )


def test_parquet_files_read_by_pyarrow_make_the_table_spark_makes(spark, testing_catalog, tmp_path) -> None:
    import pyarrow.parquet as pq

    source = tmp_path / "landing"
    source.mkdir()
    for index in range(3):
        pq.write_table(_typed_parquet_rows(index * 400, 400), source / f"part-{index}.parquet", row_group_size=150)
    (source / "_SUCCESS").write_text("")
    planned = spark_ingest.parquet_source_of(spark, CATALOG, str(source))
    assert planned is not None and planned.rows == 1200
    direct, through_spark = _table_name("direct"), _table_name("spark_read")
    options = IngestOptions(mode="append", create_if_missing=True, partition_by="day(ts)")
    result = ingest(spark, CATALOG, direct, planned, options)
    spark_result = ingest(spark, CATALOG, through_spark, spark.read.parquet(str(source)), options)
    # Tasks packed as Spark packs the files (two on two slots), each writing a file per day partition.
    assert result["rows_added"] == 1200 and len(planned.tasks) == 2
    assert result["data_files_added"] == spark_result["data_files_added"] == 6
    ours = testing_catalog.load_table(direct)
    theirs = testing_catalog.load_table(through_spark)
    assert ours.schema() == theirs.schema()
    columns = [f.name for f in ours.schema().fields]
    read = open_read_session(CATALOG, direct).to_arrow().sort_by("id")
    assert read.to_pylist() == open_read_session(CATALOG, through_spark).to_arrow().sort_by("id").to_pylist()
    assert (
        read.select(columns).to_pylist()
        == testing_catalog.load_table(direct).scan().to_arrow().sort_by("id").select(columns).to_pylist()
    )

    # Dynamic overwrite from a Parquet source: the days it holds are replaced, the others kept.
    replacement = tmp_path / "replacement.parquet"
    rows = _typed_parquet_rows(3, 1)  # ts on January 1st
    pq.write_table(rows, replacement)
    replaced = ingest(
        spark,
        CATALOG,
        direct,
        spark_ingest.parquet_source_of(spark, CATALOG, str(replacement)),
        IngestOptions(mode="overwrite"),
    )
    assert replaced["operation"] == "overwrite" and replaced["rows_added"] == 1
    left = open_read_session(CATALOG, direct, columns=["id"]).to_arrow().column("id").to_pylist()
    assert sorted(left) == sorted([i for i in range(1200) if i % 3 != 0] + [3])


def test_int96_timestamps_spark_wrote_are_read_by_pyarrow_as_spark_reads_them(spark, testing_catalog, tmp_path) -> None:
    import pyarrow as pa

    source = str(tmp_path / "int96")
    values = [
        datetime.datetime(2024, 1, 1, 0, 20, 45, 184001, tzinfo=UTC),
        datetime.datetime(1900, 1, 1, tzinfo=UTC),
        datetime.datetime(1582, 10, 4, 23, 59, 59, tzinfo=UTC),
        None,
    ]
    rows = [(i, values[i % len(values)]) for i in range(40)]
    assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "INT96"  # Spark's default
    rebase = "spark.sql.parquet.int96RebaseModeInWrite"
    frame = spark.createDataFrame(rows, "id long, ts timestamp").coalesce(2)
    try:
        spark.conf.set(rebase, "CORRECTED")  # as stored, in the proleptic Gregorian calendar
        frame.write.parquet(source)
        spark.conf.set(rebase, "LEGACY")  # rebased to the Julian calendar and marked so: Spark's route
        frame.write.parquet(f"{source}-legacy")
    finally:
        spark.conf.unset(rebase)
    assert spark_ingest.parquet_source_of(spark, CATALOG, f"{source}-legacy") is None
    planned = spark_ingest.parquet_source_of(spark, CATALOG, source)
    assert planned is not None and planned.arrow_schema.field("ts").type == pa.timestamp("us", tz="UTC")
    direct, through_spark = _table_name("int96_direct"), _table_name("int96_spark")
    options = IngestOptions(mode="append", create_if_missing=True)
    ingest(spark, CATALOG, direct, planned, options)
    ingest(spark, CATALOG, through_spark, spark.read.parquet(source), options)
    assert testing_catalog.load_table(direct).schema() == testing_catalog.load_table(through_spark).schema()
    ours = open_read_session(CATALOG, direct).to_arrow().sort_by("id")
    assert ours.to_pylist() == open_read_session(CATALOG, through_spark).to_arrow().sort_by("id").to_pylist()
    assert ours.column("ts").to_pylist() == [ts for _, ts in rows]
    spark.conf.set("spark.sql.parquet.int96AsTimestamp", "false")  # Spark would read binary values: its route
    try:
        assert spark_ingest.parquet_source_of(spark, CATALOG, source) is None
    finally:
        spark.conf.unset("spark.sql.parquet.int96AsTimestamp")


def test_nulls_in_a_required_column_of_a_parquet_source_are_bad_input(spark, testing_catalog, tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    testing_catalog.create_namespace_if_not_exists("ingest_tests")
    name = _table_name("required_direct")
    testing_catalog.create_table(
        name,
        pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())]),
        properties={"format-version": "2"},
    )
    source = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array([1, None, None], pa.int64()), "name": ["a", "b", "c"]}), source)
    planned = spark_ingest.parquet_source_of(spark, CATALOG, str(source))
    assert planned is not None
    with pytest.raises(UserInputError, match=r"nulls in column\(s\) table .* requires: 'id' in 2 row"):
        ingest(spark, CATALOG, name, planned, IngestOptions(mode="append"))
    assert testing_catalog.load_table(name).current_snapshot() is None
    assert not _table_files(testing_catalog, name)
    with pytest.raises(ValueError, match="append and dynamic overwrite only"):
        ingest(spark, CATALOG, name, planned, IngestOptions(mode="upsert", key=("id",)))
    # Footers without statistics do not count nulls: the writers find them, and the files they wrote are deleted.
    pq.write_table(
        pa.table({"id": pa.array([1, None], pa.int64()), "name": ["a", "b"]}), source, write_statistics=False
    )
    unknown = spark_ingest.parquet_source_of(spark, CATALOG, str(source))
    assert unknown is not None and unknown.null_counts["id"] is None
    with pytest.raises(UserInputError, match=r"nulls in column\(s\) table .* requires: 'id' in 1 row"):
        ingest(spark, CATALOG, name, unknown, IngestOptions(mode="append"))
    assert testing_catalog.load_table(name).current_snapshot() is None
    assert not _table_files(testing_catalog, name)


@pytest.mark.parametrize("shipped_keys_max", [0, 1_000_000], ids=["joined in Spark", "keys shipped to the scan"])
def test_upsert_by_position_checks_and_matches_keys_whether_or_not_they_are_collected(
    spark, testing_catalog, monkeypatch, shipped_keys_max
) -> None:
    monkeypatch.setattr(spark_ingest, "SHIPPED_KEYS_MAX", shipped_keys_max)
    table = _table_name("shipped")
    first = _rows(range(40))
    ingest(spark, CATALOG, table, _frame(spark, first), IngestOptions(mode="append", create_if_missing=True))
    before = testing_catalog.load_table(table).current_snapshot().snapshot_id
    duplicated = spark.createDataFrame([(1, "x"), (1, "y"), (2, "z"), (None, "n")], "id long, name string")
    with pytest.raises(UserInputError, match="1 source row"):
        ingest(spark, CATALOG, table, duplicated, IngestOptions(mode="upsert", key=("id",)))
    with pytest.raises(UserInputError, match="1 key value"):
        ingest(spark, CATALOG, table, duplicated.dropna(), IngestOptions(mode="upsert", key=("id",)))
    assert testing_catalog.load_table(table).current_snapshot().snapshot_id == before

    changed = _rows([3, 17, 39, 500], "v2")  # three matched ids, one new
    result = ingest(spark, CATALOG, table, _frame(spark, changed), IngestOptions(mode="upsert", key=("id",)))
    assert result["rows_deleted_by_key"] == 3 and result["position_deletes_added"] >= 1
    state = [r for r in first if r[0] not in (3, 17, 39)] + changed
    assert _ours(table) == _pyiceberg(testing_catalog, table) == _expected(state)
    deleted = ingest(
        spark, CATALOG, table, _frame(spark, _rows([17, 20, 999])), IngestOptions(mode="delete", key=("id",))
    )
    assert deleted["rows_deleted_by_key"] == 2
    state = [r for r in state if r[0] not in (17, 20)]
    assert _ours(table) == _pyiceberg(testing_catalog, table) == _expected(state)
