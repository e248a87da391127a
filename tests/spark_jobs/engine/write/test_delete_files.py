"""Delete files: position deletes sorted with the reserved field ids and whole path bounds; equality deletes."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.conversions import from_bytes
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.write.write_context import WriteContext, write_equality_delete_rows, write_position_delete_rows

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))


def _context(sql_catalog) -> WriteContext:
    sql_catalog.create_namespace("ns")
    return WriteContext.for_table(sql_catalog.create_table("ns.t", SCHEMA, properties={"format-version": "2"}))


def test_position_deletes_are_sorted_and_name_their_only_data_file(sql_catalog) -> None:
    context = _context(sql_catalog)
    long_path = "file:///warehouse/ns/t/data/" + "x" * 40 + ".parquet"
    positions = pa.table({"file_path": [long_path] * 3, "pos": pa.array([7, 2, 5], pa.int64())})
    (described,) = write_position_delete_rows(positions, context, 0, (), "d")
    assert described["content"] == 1 and described["record_count"] == 3
    assert described["referenced_data_file"] == long_path
    parquet = pq.ParquetFile(described["file_path"].removeprefix("file://"))
    assert [f.metadata[b"PARQUET:field_id"] for f in parquet.schema_arrow] == [b"2147483546", b"2147483545"]
    assert parquet.read().column("pos").to_pylist() == [2, 5, 7]
    assert from_bytes(StringType(), described["lower_bounds"][2147483546]) == long_path
    assert from_bytes(StringType(), described["upper_bounds"][2147483546]) == long_path


def test_position_deletes_for_several_files_sort_by_path_then_position(sql_catalog) -> None:
    context = _context(sql_catalog)
    positions = pa.table({"file_path": ["b", "a", "b", "a"], "pos": pa.array([1, 9, 0, 3], pa.int64())})
    (described,) = write_position_delete_rows(positions, context, 0, (), "d")
    assert described["referenced_data_file"] is None
    rows = pq.read_table(described["file_path"].removeprefix("file://")).to_pylist()
    assert [(r["file_path"], r["pos"]) for r in rows] == [("a", 3), ("a", 9), ("b", 0), ("b", 1)]


def test_equality_deletes_hold_distinct_keys_on_the_key_field_ids(sql_catalog) -> None:
    context = _context(sql_catalog)
    keys = pa.table({"name": ["x", "y", "x", None]})
    (described,) = write_equality_delete_rows(
        keys, context, key_names=["name"], spec_id=0, partition_values=(), task_tag="e"
    )
    assert described["content"] == 2 and described["equality_ids"] == (2,) and described["record_count"] == 3
    parquet = pq.ParquetFile(described["file_path"].removeprefix("file://"))
    assert [f.metadata[b"PARQUET:field_id"] for f in parquet.schema_arrow] == [b"2"]
    names = parquet.read().column("name").to_pylist()
    assert sorted(names, key=lambda v: (v is None, v or "")) == ["x", "y", None]
