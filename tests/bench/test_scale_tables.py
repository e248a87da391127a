"""The scale benchmark's definitions agree with the files it writes: filters select what they say, the position
deletes name the rows Java's DELETE removes, and the report renders a result file (no Spark, no timing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH_DIR))

import scale_files  # noqa: E402
import scale_report  # noqa: E402
import scale_tables as st  # noqa: E402


@pytest.mark.parametrize("files", [1_000, 100_000, 1_000_000])
def test_point_filter_matches_one_row_of_one_distinct_file(files: int) -> None:
    point = next(f for f in st.filters(files) if f.name == "point")
    assert point.java is not None
    value = point.java[2]
    distinct = st.distinct_files(files)
    index = distinct // 2 + 7
    schema = scale_files.data_schema(partitioned=False)
    rows = scale_files.rows_of(index * st.ROWS_PER_FILE, st.ROWS_PER_FILE, st.day_of_file(index, distinct), schema)
    assert pc.sum(pc.equal(rows.column("k"), value)).as_py() == 1
    for neighbour in (index - 1, index + 1):  # k ascends with the file: no other file's range holds it
        first, last = neighbour * st.ROWS_PER_FILE, (neighbour + 1) * st.ROWS_PER_FILE - 1
        assert not st.k_of(first) <= value <= st.k_of(last)


def test_partition_filter_names_one_day_of_the_files() -> None:
    partition = next(f for f in st.filters(1_000) if f.name == "partition")
    day = st.DAYS // 2
    assert partition.row_filter == f"d = '{st.date_text(day)}'"
    assert sum(st.day_of_file(index, 1_000) == day for index in range(1_000)) == 1_000 // st.DAYS


@pytest.mark.parametrize("index", [0, 1, 19, 20, 40, 99])
def test_position_deletes_are_the_rows_of_the_delete_predicate(index: int) -> None:
    first_id = index * st.ROWS_PER_FILE
    expected = [
        pos
        for pos in range(st.ROWS_PER_FILE)
        if ((first_id + pos) // st.ROWS_PER_FILE) % st.DELETE_FILE_STRIDE == 0
        and (first_id + pos) % st.DELETE_ROW_STRIDE == 0
    ]
    assert scale_files.deleted_positions(first_id) == expected


def test_position_delete_files_are_written_and_listed(tmp_path: Path) -> None:
    paths = [(f"file:/t/data/f-{index:07d}.parquet", index * st.ROWS_PER_FILE, "") for index in range(41)]
    lines = scale_files.write_position_deletes(paths, tmp_path)
    assert len(lines) == 3  # files 0, 20 and 40
    path, size, records, data_file, low, high, partition = lines[1].split("\t")
    written = pq.read_table(path.removeprefix("file:"))
    assert written.column("file_path").to_pylist() == [data_file] * int(records)
    assert written.column("pos").to_pylist()[0] == int(low) and written.column("pos").to_pylist()[-1] == int(high)
    assert int(size) == Path(path.removeprefix("file:")).stat().st_size and partition == ""


def test_upsert_batch_keys(tmp_path: Path) -> None:
    batch = pq.read_table(scale_files.write_upsert_batch(tmp_path, 1_000))
    ids = batch.column("id").to_pylist()
    assert len(ids) == len(set(ids)) == st.UPSERT_MATCHED + st.UPSERT_NEW
    rows = 1_000 * st.ROWS_PER_FILE
    assert sum(value < rows for value in ids) == st.UPSERT_MATCHED
    assert all(note.startswith("upserted-") for note in batch.column("note").to_pylist())


def test_report_renders_a_plan_record_with_its_ratio() -> None:
    runs = {
        "java": [{"seconds": 0.5, "data_files": 10, "deletes": 0, "tasks": 1}],
        "ours": [{"seconds": 1.0, "data_files": 10, "deletes": 0, "tasks": 1}],
    }
    record = {
        "job": "plan",
        "files": 1_000,
        "shape": "u1",
        "snapshot": "base",
        "filter": "point",
        "summary": {"java_s": 0.5, "ours_s": 1.0, "ratio": 2.0},
        "runs": runs,
        "load": ["1.0 1.0 1.0", "2.0 1.0 1.0"],
        "checks": ["data_files: Java 10, ours 11 (DIFFER)"],
    }
    text = scale_report.markdown([{"date": "today", "records": [record], "tables": {}}])
    row = next(line for line in text.splitlines() if line.startswith("| u1 | base | point |"))
    assert "0.500 / 1.000 (**2.00x**) ⚠" in row
    assert "(DIFFER)" in text


@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize(("files", "first", "count"), [(1_000, 0, 3), (1_000, 997, 3), (100_000, 49_990, 20)])
def test_batch_generation_gives_the_rows_of_each_file(partitioned: bool, files: int, first: int, count: int) -> None:
    schema = scale_files.data_schema(partitioned)
    batch = scale_files.rows_of_files(first, count, files, schema)
    one_by_one = [
        scale_files.rows_of(index * st.ROWS_PER_FILE, st.ROWS_PER_FILE, st.day_of_file(index, files), schema)
        for index in range(first, first + count)
    ]
    assert batch.equals(pa.concat_tables(one_by_one))
