"""The read job run in the driver (``spark/driver_read.py``): when it is taken, and that it writes what Spark would.

The route's rows are checked against Java's for every conformance query in ``test_read.py``; here: the rule that
picks the route, that Spark reads the driver's files with the same schema and rows as the files Spark's own route
writes (every type of the conformance corpus, deletes of every kind), and that a failed write leaves the output as
it was.
"""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import read as read_job
from spark_jobs.engine.planning.scan_tasks import (
    DataFileSlice,
    DeletionVector,
    EqualityDeleteFile,
    PositionDeleteFile,
    ScanTask,
)
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.spark import driver_read
from spark_jobs.spark.driver_read import (
    planned_bytes,
    spark_needed_before_planning,
    why_not_in_driver,
    write_in_driver,
)

pytestmark = pytest.mark.spark35


def _slice(path: str, length: int, **deletes) -> DataFileSlice:
    return DataFileSlice(path=path, file_size_in_bytes=10_000, record_count=10, spec_id=0, length=length, **deletes)


def test_planned_bytes_count_each_slice_and_each_delete_file_once() -> None:
    position = PositionDeleteFile("pos.parquet", 300, 3, 2)
    equality = EqualityDeleteFile("eq.parquet", 50, 1, (1,), 2)
    vector_a = DeletionVector("dv.puffin", 4, 40, 2, "a.parquet", 3)
    vector_b = DeletionVector("dv.puffin", 44, 60, 2, "b.parquet", 3)
    tasks = [
        ScanTask((_slice("a.parquet", 1000, position_deletes=(position,), deletion_vector=vector_a),)),
        ScanTask(
            (
                _slice("b.parquet", 2000, position_deletes=(position,), equality_deletes=(equality,)),
                _slice("b.parquet", 0, deletion_vector=vector_b, equality_deletes=(equality,)),
            )
        ),
    ]
    # slices 1000 + 2000 + a whole file (length 0: its size) + pos once + eq once + both vectors of one Puffin file
    assert planned_bytes(tasks) == 1000 + 2000 + 10_000 + 300 + 50 + 40 + 60
    assert planned_bytes([]) == 0


def _snapshot(summary: dict[str, str] | None) -> SimpleNamespace:
    return SimpleNamespace(summary=summary)


@pytest.mark.parametrize(
    ("snapshot", "row_filter", "max_bytes", "needed"),
    [
        (_snapshot({"total-files-size": "2000"}), None, 1000, True),  # a full read of a large snapshot
        (_snapshot({"total-files-size": "1000"}), None, 1000, False),  # fits
        (_snapshot({"total-files-size": "2000"}), "id = 1", 1000, False),  # a filter may prune it: plan first
        (_snapshot({}), None, 1000, False),  # no size: the plan decides
        (_snapshot({"total-files-size": "x"}), None, 1000, False),
        (None, None, 1000, False),  # an empty table
        (_snapshot({"total-files-size": "1"}), None, 0, True),  # the route is off
    ],
)
def test_spark_starts_before_planning_only_when_the_plan_cannot_fit(snapshot, row_filter, max_bytes, needed) -> None:
    assert spark_needed_before_planning(snapshot, row_filter, max_bytes) is needed


@pytest.fixture(scope="module")
def eq_deletes_session(conformance_catalog):
    return open_read_session(conformance_catalog, "corpus.v2_eq_deletes")


@pytest.mark.parametrize(
    "case",
    [
        ("/tmp/x", "csv", 10**9, "snappy", "csv output is written by Spark's own writer"),
        ("s3://bucket/x", "parquet", 10**9, "snappy", "is not on a local file system"),
        ("/tmp/x", "parquet", 0, "snappy", "--driver-max-bytes is 0"),
        ("/tmp/x", "parquet", 1, "snappy", "more than --driver-max-bytes 1"),
        ("/tmp/x", "parquet", 10**9, "lzo", "is not a codec pyarrow writes"),
        ("/tmp/x", "parquet", 10**9, "ZSTD", None),
    ],
)
def test_why_not_in_driver(eq_deletes_session, case) -> None:
    output, output_format, max_bytes, codec, reason = case
    refusal = why_not_in_driver(eq_deletes_session, output, output_format, max_bytes, codec)
    assert refusal is None if reason is None else reason in refusal


# A table of every type, and one of each kind of delete.
ROUTE_TABLES = ["corpus.types", "corpus.v2_eq_deletes", "corpus.mor_v2_pos", "corpus.mor_v3_dv"]


@pytest.mark.parametrize("table", ROUTE_TABLES)
def test_spark_reads_the_drivers_files_as_the_files_its_own_route_writes(
    spark, conformance_catalog, tmp_path, table
) -> None:
    outputs = {}
    for ran_in, max_bytes in (("spark", "0"), ("driver", str(10**9))):
        outputs[ran_in] = tmp_path / ran_in
        argv = ["--catalog", "conformance", "--table", table, "--output", str(outputs[ran_in])]
        result = read_job.main([*argv, "--driver-max-bytes", max_bytes])
        assert result["ran_in"] == ran_in
    by_spark = spark.read.parquet(str(outputs["spark"]))
    by_driver = spark.read.parquet(str(outputs["driver"]))
    assert by_driver.schema == by_spark.schema
    rows = {name: sorted(repr(row) for row in frame.collect()) for name, frame in (("s", by_spark), ("d", by_driver))}
    assert rows["d"] == rows["s"] and rows["s"]  # maps rule out EXCEPT; a row's repr holds every value
    assert (outputs["driver"] / "_SUCCESS").exists()
    [part] = list(outputs["driver"].glob("part-00000-*-c000.snappy.parquet"))
    assert pq.ParquetFile(part).metadata.row_group(0).column(0).compression == "SNAPPY"
    assert not list(tmp_path.glob(".*staging*"))


def test_an_empty_result_is_one_file_with_the_schema(spark, conformance_catalog, tmp_path) -> None:
    output = tmp_path / "out"
    argv = ["--catalog", "conformance", "--table", "corpus.types", "--output", str(output), "--filter", "false"]
    result = read_job.main(argv)
    assert result["ran_in"] == "driver" and result["rows_out"] == 0
    frame = spark.read.parquet(str(output))
    assert frame.count() == 0
    assert frame.columns == [f.name for f in conformance_catalog.load_table("corpus.types").schema().fields]


def test_a_failed_write_leaves_the_output_as_it_was(conformance_catalog, tmp_path, monkeypatch) -> None:
    output = tmp_path / "out"
    output.mkdir()
    (output / "old.parquet").write_bytes(b"old")
    session = open_read_session(conformance_catalog, "corpus.v2_eq_deletes")

    def failing(tasks, context, metrics):
        yield from []
        raise OSError("disk full")

    monkeypatch.setattr(driver_read, "read_tasks_in_process", failing)
    with pytest.raises(OSError, match="disk full"):
        write_in_driver(session, str(output), "overwrite", "snappy")
    assert [p.name for p in output.iterdir()] == ["old.parquet"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_overwrite_replaces_the_output_and_error_mode_refuses_one_that_appeared(conformance_catalog, tmp_path) -> None:
    output = tmp_path / "out"
    output.mkdir()
    (output / "old.parquet").write_bytes(b"old")
    session = open_read_session(conformance_catalog, "corpus.v2_eq_deletes")
    rows = write_in_driver(session, f"file://{output}", "overwrite", "zstd")
    names = sorted(p.name for p in output.iterdir())
    assert names[0] == "_SUCCESS" and len(names) == 2 and names[1].endswith("-c000.zstd.parquet")
    assert pq.read_table(output / names[1]).num_rows == rows > 0
    session = open_read_session(conformance_catalog, "corpus.v2_eq_deletes")
    with pytest.raises(Exception, match="was created by someone else"):
        write_in_driver(session, str(output), "error", "snappy")
    assert sorted(p.name for p in output.iterdir()) == names
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_the_written_schema_is_nullable_at_every_depth() -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("s", pa.struct([pa.field("a", pa.int32(), nullable=False)]), nullable=False),
            pa.field("l", pa.list_(pa.field("element", pa.string(), nullable=False))),
            pa.field("m", pa.map_(pa.string(), pa.field("value", pa.int64(), nullable=False))),
        ]
    )
    nullable = driver_read._nullable_schema(schema)
    assert all(f.nullable for f in nullable)
    assert nullable.field("s").type.field("a").nullable
    assert nullable.field("l").type.value_field.nullable
    assert nullable.field("m").type.item_field.nullable and not nullable.field("m").type.key_field.nullable


def test_settings_come_from_the_running_jvms_configuration(spark) -> None:
    assert driver_read.submitted_setting("spark.sql.shuffle.partitions", "none") == "4"  # the test session's
    assert driver_read.submitted_setting("spark.no.such.setting", "fallback") == "fallback"
    assert driver_read.submitted_parquet_codec() == "snappy"
