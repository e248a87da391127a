"""Files of a write that no result names (a retried Spark task's first attempt) are found by write id and deleted."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from spark_jobs.engine.write.job_files import delete_leftovers, files_of_write
from spark_jobs.engine.write.write_context import WriteContext, write_data

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def test_only_the_writes_unkept_files_are_deleted(sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.t", SCHEMA, properties={"format-version": "2"})
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    job = WriteContext.for_table(table)
    other_job = WriteContext.for_table(table)
    lost_attempt = write_data(rows, job, "s0-t0-a0")
    kept_attempt = write_data(rows, job, "s0-t0-a1")
    other = write_data(rows, other_job, "s0-t0-a0")
    assert set(files_of_write(job.table_location, job.write_id, table.io)) == {
        f["file_path"] for f in lost_attempt + kept_attempt
    }

    kept = {f["file_path"] for f in kept_attempt}
    deleted = delete_leftovers(job.table_location, job.write_id, kept, table.io)
    assert set(deleted) == {f["file_path"] for f in lost_attempt}
    for item in lost_attempt:
        assert not Path(item["file_path"].removeprefix("file://")).exists()
    for item in kept_attempt + other:
        assert Path(item["file_path"].removeprefix("file://")).exists()


def test_a_file_that_cannot_be_deleted_is_logged_as_left_behind(sql_catalog, caplog) -> None:
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.t", SCHEMA, properties={"format-version": "2"})
    job = WriteContext.for_table(table)
    written = write_data(pa.table({"id": pa.array([1], pa.int64())}), job, "s0-t0-a0")

    class RefusingIO:
        def delete(self, path: str) -> None:
            raise PermissionError(f"denied: {path}")

    with caplog.at_level("WARNING"):
        deleted = delete_leftovers(job.table_location, job.write_id, set(), RefusingIO())
    assert deleted == []
    assert written[0]["file_path"] in caplog.text and "left behind" in caplog.text


def test_a_location_that_cannot_be_listed_is_logged_with_what_stays_behind(caplog) -> None:
    with caplog.at_level("WARNING"):
        assert files_of_write("nosuchscheme://bucket/t", "w123") == []
    assert "nosuchscheme://bucket/t/data" in caplog.text and "w123" in caplog.text and "stay behind" in caplog.text
