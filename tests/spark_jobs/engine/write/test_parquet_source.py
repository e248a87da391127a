"""Planning a Parquet source for pyarrow reads: which sources qualify, how row groups are packed into tasks."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.write.parquet_source import plan_parquet_source, read_source_task

IO = PyArrowFileIO()
UTC = datetime.UTC


def _rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in ids]),
            "ts": pa.array([datetime.datetime(2024, 1, 1, tzinfo=UTC)] * count, pa.timestamp("us", tz="UTC")),
            "amount": pa.array([i * 3 for i in ids], pa.decimal128(12, 2)),
        }
    )


def _plan(uri: Path | str, parallelism: int = 2, max_task_bytes: int = 128 << 20):
    return plan_parquet_source(str(uri), IO, parallelism=parallelism, max_task_bytes=max_task_bytes)


def test_a_directory_is_planned_with_every_row_group_once_and_read_back_in_order(tmp_path) -> None:
    for index in range(3):
        pq.write_table(_rows(index * 1000, 1000), tmp_path / f"part-{index}.parquet", row_group_size=250)
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".part-0.parquet.crc").write_text("not parquet")
    one_task_each = _plan(tmp_path, parallelism=4, max_task_bytes=1)
    assert one_task_each is not None
    runs = [run for task in one_task_each.tasks for run in task]
    assert len(one_task_each.tasks) == 12 and all(len(run.row_groups) == 1 for run in runs)
    assert [(Path(r.path).name, r.row_groups[0]) for r in runs] == [
        (f"part-{f}.parquet", g) for f in range(3) for g in range(4)
    ]
    # Small files, each one split, packed as Spark packs them: each counts 4 MiB of open cost, so two slots make
    # two tasks (the first full at two files).
    together = _plan(f"file://{tmp_path}")
    assert together is not None and len(together.tasks) == 2
    assert [[(Path(r.path).name, r.row_groups) for r in task] for task in together.tasks] == [
        [("part-0.parquet", (0, 1, 2, 3)), ("part-1.parquet", (0, 1, 2, 3))],
        [("part-2.parquet", (0, 1, 2, 3))],
    ]
    assert all(field.nullable for field in together.arrow_schema)  # as Spark reads files
    read = pa.Table.from_batches(
        [b for task in one_task_each.tasks for b in read_source_task(task, IO, one_task_each.arrow_schema)]
    )
    expected = pa.concat_tables([_rows(i * 1000, 1000) for i in range(3)])
    assert read.num_rows == one_task_each.rows == 3000
    assert read.to_pylist() == expected.to_pylist()


def test_tasks_are_sized_by_parallelism_and_the_largest_split(tmp_path) -> None:
    for index in range(4):
        pq.write_table(_rows(index * 50_000, 50_000), tmp_path / f"part-{index}.parquet", row_group_size=5_000)
    full = _plan(tmp_path, parallelism=1, max_task_bytes=1 << 40)
    assert full is not None
    total = sum(run.compressed_bytes for task in full.tasks for run in task)
    split = _plan(tmp_path, parallelism=1, max_task_bytes=total // 5)
    assert split is not None and len(split.tasks) >= 5
    assert all(sum(r.compressed_bytes for r in task) <= total // 5 for task in split.tasks)
    assert sorted((r.path, g) for task in split.tasks for r in task for g in r.row_groups) == sorted(
        (r.path, g) for task in full.tasks for r in task for g in r.row_groups
    )


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda d: pq.write_table(pa.table({"x": [[1, 2]]}), d / "a.parquet"), id="nested column"),
        pytest.param(lambda d: pq.write_table(pa.table({"x": pa.array([1], pa.uint32())}), d / "a.parquet"), id="uint"),
        pytest.param(
            lambda d: pq.write_table(
                pa.table({"t": pa.array([datetime.datetime(2024, 1, 1)], pa.timestamp("us"))}),
                d / "a.parquet",
                use_deprecated_int96_timestamps=True,
            ),
            id="INT96",
        ),
        pytest.param(
            lambda d: (
                pq.write_table(pa.table({"x": pa.array([1], pa.int64())}), d / "a.parquet"),
                pq.write_table(pa.table({"x": pa.array([1], pa.int32())}), d / "b.parquet"),
            ),
            id="files differ",
        ),
        pytest.param(
            lambda d: (
                (d / "k=1").mkdir(),
                pq.write_table(pa.table({"x": pa.array([1], pa.int64())}), d / "k=1" / "a.parquet"),
            ),
            id="partition directories",
        ),
        pytest.param(lambda d: (d / "_SUCCESS").write_text(""), id="no files"),
    ],
)
def test_sources_spark_reads_differently_are_left_to_spark(tmp_path, make) -> None:
    make(tmp_path)
    assert _plan(tmp_path) is None


def test_globs_and_missing_paths_are_left_to_spark(tmp_path) -> None:
    pq.write_table(_rows(0, 10), tmp_path / "a.parquet")
    assert _plan(f"{tmp_path}/*.parquet") is None
    assert _plan(tmp_path / "missing") is None


def test_a_file_that_is_not_parquet_is_bad_input_naming_it(tmp_path) -> None:
    pq.write_table(_rows(0, 10), tmp_path / "a.parquet")
    (tmp_path / "b.csv").write_text("id\n1\n")
    with pytest.raises(UserInputError, match=r"cannot read source .* \(parquet\): file .*b\.csv"):
        _plan(tmp_path)


def test_null_counts_come_from_the_footers_statistics_when_every_row_group_has_them(tmp_path) -> None:
    pq.write_table(_rows(0, 100), tmp_path / "a.parquet", row_group_size=30)
    pq.write_table(_rows(100, 100), tmp_path / "b.parquet", row_group_size=30)
    planned = _plan(tmp_path)
    assert planned is not None
    expected_names = sum(1 for i in range(200) if i % 7 == 0)
    assert planned.null_counts == {"id": 0, "name": expected_names, "ts": 0, "amount": 0}
    pq.write_table(_rows(200, 10), tmp_path / "c.parquet", write_statistics=False)
    assert all(count is None for count in _plan(tmp_path).null_counts.values())


def _spark_int96_file(path: Path, values: list[datetime.datetime], metadata: dict[str, str]) -> None:
    """A file like Spark writes by default: INT96 timestamps, Spark's footer keys, no Arrow schema."""
    rows = pa.table({"id": pa.array(range(len(values)), pa.int64()), "ts": pa.array(values, pa.timestamp("ns"))})
    _write_like_spark(rows, path, metadata)


def _write_like_spark(rows: pa.Table, path: Path, metadata: dict[str, str]) -> None:
    with pq.ParquetWriter(path, rows.schema, use_deprecated_int96_timestamps=True, store_schema=False) as writer:
        writer.write_table(rows)
        if metadata:
            writer.add_key_value_metadata(metadata)


def test_int96_columns_spark_wrote_in_the_gregorian_calendar_are_read_as_utc_microseconds(tmp_path) -> None:
    values = [
        datetime.datetime(2024, 1, 1, 0, 20, 45, 184000),
        datetime.datetime(1970, 1, 1),
        datetime.datetime(1900, 3, 1, 12, 0, 0, 999999),
    ]
    _spark_int96_file(tmp_path / "a.parquet", values, {"org.apache.spark.version": "3.5.9"})
    planned = plan_parquet_source(str(tmp_path), IO, parallelism=2, max_task_bytes=1 << 30, int96_as_timestamp=True)
    assert planned is not None
    assert planned.arrow_schema.field("ts").type == pa.timestamp("us", tz="UTC")
    read = pa.Table.from_batches(
        [b for task in planned.tasks for b in read_source_task(task, IO, planned.arrow_schema)]
    )
    assert read.column("ts").to_pylist() == [value.replace(tzinfo=UTC) for value in values]
    # Spark would read them otherwise: not as timestamps, or rebased from the Julian calendar (old Spark, marker).
    assert _plan(tmp_path) is None
    for name, metadata in (
        ("old", {"org.apache.spark.version": "3.0.3"}),
        ("marked", {"org.apache.spark.version": "3.5.9", "org.apache.spark.legacyINT96": ""}),
        ("foreign", {}),
    ):
        directory = tmp_path / name
        directory.mkdir()
        _spark_int96_file(directory / "a.parquet", values, metadata)
        assert plan_parquet_source(str(directory), IO, parallelism=2, max_task_bytes=1, int96_as_timestamp=True) is None


def test_int96_nanoseconds_are_truncated_to_microseconds_as_spark_reads_them(tmp_path) -> None:
    rows = pa.table({"ts": pa.array([1_704_067_200_123_456_789, -1_000], pa.timestamp("ns"))})
    _write_like_spark(rows, tmp_path / "a.parquet", {"org.apache.spark.version": "4.0.1"})
    planned = plan_parquet_source(str(tmp_path), IO, parallelism=1, max_task_bytes=1 << 30, int96_as_timestamp=True)
    assert planned is not None
    (batch,) = read_source_task(planned.tasks[0], IO, planned.arrow_schema)
    assert batch.column(0).cast(pa.int64()).to_pylist() == [1_704_067_200_123_456, -1]
