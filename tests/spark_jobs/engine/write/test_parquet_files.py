"""Data files: field ids, rolling at the target size, zstd, page index, bloom filters, metrics, sort order."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.conversions import from_bytes
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.write.write_context import WriteContext, write_data, write_data_stream

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
)


def _table(sql_catalog, properties, *, spec=None, sort_order=None):
    sql_catalog.create_namespace("ns")
    kwargs = {"partition_spec": spec} if spec else {}
    if sort_order:
        kwargs["sort_order"] = sort_order
    return sql_catalog.create_table("ns.t", SCHEMA, properties={"format-version": "2", **properties}, **kwargs)


def _local(path: str) -> str:
    return path.removeprefix("file://")


def test_files_roll_at_the_target_size_and_carry_ids_metrics_page_index_and_bloom_filters(sql_catalog) -> None:
    table = _table(
        sql_catalog,
        {
            "write.target-file-size-bytes": "20000",
            "write.parquet.row-group-limit": "2000",
            "write.parquet.bloom-filter-enabled.column.name": "true",
        },
    )
    count = 30_000
    rows = pa.table({"id": pa.array(range(count), pa.int64()), "name": [f"name-{i % 997}" for i in range(count)]})
    written = write_data(rows, WriteContext.for_table(table), "t0")
    assert len(written) > 1
    assert sum(item["record_count"] for item in written) == count
    ids = []
    for item in written:
        parquet = pq.ParquetFile(_local(item["file_path"]))
        assert item["file_size_in_bytes"] == os.path.getsize(_local(item["file_path"]))
        arrow_schema = parquet.schema_arrow
        assert [f.metadata[b"PARQUET:field_id"] for f in arrow_schema] == [b"1", b"2"]
        column = parquet.metadata.row_group(0).column(0)
        assert column.compression == "ZSTD" and column.has_column_index and column.has_offset_index
        assert parquet.metadata.row_group(0).column(1).bloom_filter_offset is not None
        assert parquet.metadata.row_group(0).column(0).bloom_filter_offset is None
        file_ids = parquet.read().column("id").to_pylist()
        ids += file_ids
        assert from_bytes(LongType(), item["lower_bounds"][1]) == min(file_ids)
        assert from_bytes(LongType(), item["upper_bounds"][1]) == max(file_ids)
        assert item["value_counts"][1] == len(file_ids) and item["null_value_counts"][1] == 0
        assert item["split_offsets"] and item["content"] == 0
    assert sorted(ids) == list(range(count))
    # Rolled files stop soon after the target: no file is more than one row group past it.
    assert all(item["file_size_in_bytes"] < 20000 * 3 for item in written)


def test_a_dictionary_encodes_only_the_columns_it_makes_smaller(sql_catalog) -> None:
    table = _table(sql_catalog, {})
    count = 50_000
    rows = pa.table({"id": pa.array(range(count), pa.int64()), "name": [f"name-{i % 7}" for i in range(count)]})
    (written,) = write_data(rows, WriteContext.for_table(table), "t0")
    parquet = pq.ParquetFile(_local(written["file_path"]))
    id_chunk, name_chunk = (parquet.metadata.row_group(0).column(index) for index in range(2))
    assert id_chunk.dictionary_page_offset is None and "RLE_DICTIONARY" not in id_chunk.encodings
    assert name_chunk.dictionary_page_offset is not None and "RLE_DICTIONARY" in name_chunk.encodings
    assert parquet.read().equals(rows.cast(parquet.schema_arrow))
    assert written["lower_bounds"][1] and written["upper_bounds"][2]


def test_the_dictionary_page_limit_is_the_tables(sql_catalog) -> None:
    # 2,000 distinct names of ~10 bytes: a dictionary pays, but not within a 4 KiB page.
    table = _table(sql_catalog, {"write.parquet.dict-size-bytes": "4096"})
    rows = pa.table({"id": pa.array([7] * 20_000, pa.int64()), "name": [f"name-{i % 2000}" for i in range(20_000)]})
    (written,) = write_data(rows, WriteContext.for_table(table), "t0")
    chunks = pq.ParquetFile(_local(written["file_path"])).metadata.row_group(0)
    assert chunks.column(0).dictionary_page_offset is not None
    assert chunks.column(1).dictionary_page_offset is None


def test_rows_are_split_by_partition_and_sorted_by_the_sort_order(sql_catalog) -> None:
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="name"))
    order = SortOrder(SortField(source_id=1, transform=IdentityTransform(), direction=SortDirection.DESC))
    table = _table(sql_catalog, {}, spec=spec, sort_order=order)
    rows = pa.table({"id": pa.array([5, 1, 9, 3, 7, None], pa.int64()), "name": ["a", "b", "a", "b", "a", "a"]})
    written = write_data(rows, WriteContext.for_table(table), "t0")
    by_partition = {tuple(item["partition_values"]): item for item in written}
    assert set(by_partition) == {("a",), ("b",)}
    assert "/name=a/" in by_partition[("a",)]["file_path"]
    assert pq.read_table(_local(by_partition[("a",)]["file_path"])).column("id").to_pylist() == [9, 7, 5, None]
    assert pq.read_table(_local(by_partition[("b",)]["file_path"])).column("id").to_pylist() == [3, 1]
    assert by_partition[("a",)]["sort_order_id"] == table.sort_order().order_id


def _by_partition(written) -> dict[tuple, dict]:
    """Per partition: its files' ids in file order, rows, null counts, lower and upper bounds of ``id``."""
    result: dict[tuple, dict] = {}
    for item in written:
        entry = result.setdefault(
            tuple(item["partition_values"]), {"ids": [], "rows": 0, "nulls": 0, "lower": [], "upper": []}
        )
        entry["ids"] += pq.read_table(_local(item["file_path"])).column("id").to_pylist()
        entry["rows"] += item["record_count"]
        entry["nulls"] += item["null_value_counts"][1]
        entry["lower"].append(from_bytes(LongType(), item["lower_bounds"][1]))
        entry["upper"].append(from_bytes(LongType(), item["upper_bounds"][1]))
    return {key: {**entry, "lower": min(entry["lower"]), "upper": max(entry["upper"])} for key, entry in result.items()}


def _partitioned_rows(count: int) -> pa.Table:
    ids = [None if i % 101 == 0 else (i * 7919) % count for i in range(count)]
    return pa.table({"id": pa.array(ids, pa.int64()), "name": ["ab"[i % 3 == 0] for i in range(count)]})


def test_a_stream_of_batches_is_written_as_it_comes_with_the_same_rows_and_metrics(sql_catalog) -> None:
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="name"))
    table = _table(
        sql_catalog, {"write.target-file-size-bytes": "20000", "write.parquet.row-group-limit": "2000"}, spec=spec
    )
    rows = _partitioned_rows(30_000)
    data_dir = _local(table.metadata.location) + "/data"
    files_seen_before_the_last_batch = []

    def batches():
        pieces = rows.to_batches(max_chunksize=500)
        for index, batch in enumerate(pieces):
            if index == len(pieces) - 1:
                files_seen_before_the_last_batch.extend(
                    name for _root, _dirs, names in os.walk(data_dir) for name in names
                )
            yield batch

    streamed = write_data_stream(batches(), WriteContext.for_table(table), "streamed", rows.schema)
    # Files were written (and most rolled) while batches were still coming: nothing waited for the whole input.
    assert len(files_seen_before_the_last_batch) >= len(streamed) - 2 > 2
    whole = write_data(rows, WriteContext.for_table(table), "whole")
    assert _by_partition(streamed) == _by_partition(whole)
    assert set(_by_partition(streamed)) == {("a",), ("b",)}
    assert all(item["file_size_in_bytes"] < 20000 * 3 for item in streamed)


def test_a_stream_into_a_sorted_table_is_sorted_as_a_whole(sql_catalog) -> None:
    order = SortOrder(SortField(source_id=1, transform=IdentityTransform(), direction=SortDirection.DESC))
    table = _table(sql_catalog, {}, sort_order=order)
    rows = _partitioned_rows(3_000)
    streamed = write_data_stream(
        iter(rows.to_batches(max_chunksize=100)), WriteContext.for_table(table), "streamed", rows.schema
    )
    whole = write_data(rows, WriteContext.for_table(table), "whole")
    assert _by_partition(streamed) == _by_partition(whole)
    ids = _by_partition(streamed)[()]["ids"]
    assert len(streamed) == 1 and ids[: ids.index(None)] == sorted((i for i in ids if i is not None), reverse=True)
