"""What a read costs on a real object store (SeaweedFS behind a counting proxy): requests and bytes per data file.

The table: three files sorted on ``k`` with several row groups each, a page index, and a bloom filter on ``id`` (a
random permutation, so only the bloom filter can prune a point lookup). The reader must read each footer with one
ranged request, the bloom filters and page indexes as ranges (never a whole file for metadata), and retry a
throttled request (HTTP 503 SlowDown) instead of failing the scan.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from tests.support.object_store import SeaweedFS, catalog_env
from tests.support.s3_counting_proxy import CountingProxy, Request, summarize

pytestmark = pytest.mark.s3

CATALOG = "s3requests"
TABLE = "requests.events"
FILES, ROWS_PER_FILE, ROW_GROUP_ROWS = 3, 30_000, 6_000


@pytest.fixture(scope="module")
def proxied_table(seaweedfs: SeaweedFS, tmp_path_factory) -> tuple[CountingProxy, dict[str, int], int]:
    """The table, committed straight to S3; the catalog ``s3requests`` reads it through the proxy."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.io.pyarrow import parquet_file_to_data_file
    from pyiceberg.schema import Schema
    from pyiceberg.types import DoubleType, LongType, NestedField

    work = tmp_path_factory.mktemp("s3requests")
    rng = np.random.default_rng(5)
    total = FILES * ROWS_PER_FILE
    ids = rng.permutation(total).astype(np.int64)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
            pa.field("k", pa.int64(), metadata={b"PARQUET:field_id": b"2"}),
            pa.field("price", pa.float64(), metadata={b"PARQUET:field_id": b"3"}),
        ]
    )
    filesystem = seaweedfs.filesystem()
    sizes, uris = {}, []
    for index in range(FILES):
        rows = slice(index * ROWS_PER_FILE, (index + 1) * ROWS_PER_FILE)
        data = pa.table(
            [pa.array(ids[rows]), pa.array(np.arange(total)[rows]), pa.array(rng.random(ROWS_PER_FILE))],
            schema=schema,
        )
        local = work / f"data-{index}.parquet"
        pq.write_table(
            data,
            local,
            row_group_size=ROW_GROUP_ROWS,
            write_page_index=True,
            bloom_filter_options={"id": {"ndv": ROW_GROUP_ROWS, "fpp": 0.01}},
        )
        key = f"warehouse/s3requests/files/{local.name}"
        with filesystem.open_output_stream(key) as stream:
            stream.write(local.read_bytes())
        sizes[key] = local.stat().st_size
        uris.append(f"s3://{key}")
    properties = seaweedfs.sql_catalog_properties(f"sqlite:///{work}/catalog.db", "s3://warehouse/s3requests/wh")
    catalog = load_catalog(CATALOG, **properties)
    catalog.create_namespace("requests")
    iceberg_schema = Schema(
        NestedField(1, "id", LongType()), NestedField(2, "k", LongType()), NestedField(3, "price", DoubleType())
    )
    table = catalog.create_table(TABLE, schema=iceberg_schema)
    with table.transaction() as transaction, transaction.update_snapshot().fast_append() as append:
        for uri in uris:
            append.append_data_file(parquet_file_to_data_file(table.io, table.metadata, uri))
    proxy = CountingProxy(seaweedfs.s3_endpoint)
    os.environ.update(catalog_env(CATALOG, {**properties, "s3.endpoint": proxy.url}))
    yield proxy, sizes, int(ids[ROWS_PER_FILE + 17])
    proxy.stop()


def _cold_read(proxy: CountingProxy, row_filter: str | None) -> tuple[pa.Table, list[Request]]:
    from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.engine.table.manifest_cache import manifest_cache

    FOOTER_CACHE.clear()
    manifest_cache().clear()
    proxy.log.reset()
    result = open_read_session(CATALOG, TABLE, columns=["id", "price"], row_filter=row_filter).to_arrow()
    return result, [r for r in proxy.log.reset() if "/files/" in r.path]


def _key(request: Request) -> str:
    """The bucket/key a request names (path-style URL)."""
    return request.path.split("?", 1)[0].lstrip("/")


def _range_length(request: Request) -> int:
    assert request.range and request.range.startswith("bytes="), f"a GET without a range: {request}"
    first, last = request.range.removeprefix("bytes=").split("-")
    return int(last) - int(first) + 1


def _range_start(request: Request) -> int:
    return int(request.range.removeprefix("bytes=").split("-")[0])


def test_every_data_file_read_is_a_range_and_each_footer_one_request(proxied_table) -> None:
    proxy, sizes, _ = proxied_table
    result, requests = _cold_read(proxy, None)
    assert result.num_rows == FILES * ROWS_PER_FILE
    for key, size in sizes.items():
        gets = [r for r in requests if r.method == "GET" and r.path.endswith(key)]
        assert gets, key
        assert all(_range_length(r) < size for r in gets), "no GET fetches a whole file"
        footer_reads = [r for r in gets if r.range.endswith(f"-{size - 1}")]
        assert len(footer_reads) == 1, f"{key}: footer read as {[r.range for r in footer_reads]}"
    # The manifest records each file's size: an unfiltered read opens no file by path, so it asks for no size.
    assert [r for r in requests if r.method == "HEAD"] == []


def test_a_cold_scan_reads_every_footer_ahead_and_counts_it_as_without(proxied_table, monkeypatch) -> None:
    from contextlib import nullcontext

    from spark_jobs.engine.parquet import data_file_input, footer_read_ahead
    from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE
    from spark_jobs.engine.read import task_scan
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.engine.table.manifest_cache import manifest_cache

    proxy, sizes, _ = proxied_table
    taken: list[str] = []

    def take(path: str, size: int):
        read = footer_read_ahead.take_footer_read_ahead(path, size)
        if read is not None:
            taken.append(path)
        return read

    monkeypatch.setattr(data_file_input, "take_footer_read_ahead", take)
    seen = {}
    for read_ahead in (True, False):
        if not read_ahead:
            monkeypatch.setattr(task_scan, "_footers_read_ahead", lambda slices, context: nullcontext())
        FOOTER_CACHE.clear()
        manifest_cache().clear()
        proxy.log.reset()
        session = open_read_session(CATALOG, TABLE, columns=["id", "price"])
        rows = session.to_arrow().num_rows
        metrics, requests = session.metrics, [r for r in proxy.log.reset() if "/files/" in r.path]
        seen[read_ahead] = (rows, metrics.files_opened, metrics.footer_cache_hits, metrics.bytes_read, len(requests))
        if read_ahead:
            assert sorted(taken) == sorted(f"s3://{key}" for key in sizes), "every footer was read ahead"
            assert footer_read_ahead._PENDING == {}, "nothing is left pending after the read"
    # The same rows, files, misses, bytes and requests as a read that opens each footer itself.
    assert seen[True] == seen[False]
    assert seen[True][:3] == (FILES * ROWS_PER_FILE, FILES, 0)


def test_a_footer_read_ahead_fails_in_its_reader_and_one_not_taken_is_dropped(proxied_table) -> None:
    from spark_jobs.engine.parquet.data_file_input import DataFileInput
    from spark_jobs.engine.parquet.footer_cache import FooterCache
    from spark_jobs.engine.parquet.footer_read_ahead import footers_read_ahead, take_footer_read_ahead
    from spark_jobs.engine.shared.errors import CorruptFileError
    from spark_jobs.engine.table.catalog import load_catalog

    _, sizes, _ = proxied_table
    io = load_catalog(CATALOG).load_table(TABLE).io
    (key, size), (other_key, other_size) = list(sizes.items())[:2]
    wrong = size - 100
    cache = FooterCache()
    with footers_read_ahead(io, [(f"s3://{key}", wrong), (f"s3://{other_key}", other_size)], cache=cache):
        source = DataFileInput(io, f"s3://{key}", wrong, cache=cache)
        with source, pytest.raises(CorruptFileError, match=f"{key}.*{wrong} bytes"):
            source.footer(reads_index=False)
    assert take_footer_read_ahead(f"s3://{other_key}", other_size) is None
    assert len(cache) == 0


def test_a_warm_point_lookup_opens_only_the_file_it_decodes(proxied_table) -> None:
    from spark_jobs.engine.read.session import open_read_session

    proxy, _, point_id = proxied_table
    _cold_read(proxy, f"id = {point_id}")
    result = open_read_session(CATALOG, TABLE, columns=["id", "price"], row_filter=f"id = {point_id}").to_arrow()
    assert result.column("id").to_pylist() == [point_id]
    requests = [r for r in proxy.log.reset() if "/files/" in r.path]
    # Footers and bloom filters are in memory: the files the filters rule out are not even opened; the one holding
    # the id is read with its recorded size (no HEAD): its surviving row group's `id` chunk, then `price`.
    described = [(r.method, _key(r), r.range) for r in requests]
    assert len({_key(r) for r in requests}) == 1, described
    assert [r.method for r in requests] == ["GET"] * 2, described


def test_a_recorded_size_that_disagrees_with_the_object_fails_loudly(proxied_table) -> None:
    from spark_jobs.engine.parquet.data_file_input import DataFileInput
    from spark_jobs.engine.parquet.footer_cache import FooterCache
    from spark_jobs.engine.shared.errors import CorruptFileError
    from spark_jobs.engine.table.catalog import load_catalog

    proxy, sizes, _ = proxied_table
    io = load_catalog(CATALOG).load_table(TABLE).io
    key, size = next(iter(sizes.items()))
    proxy.log.reset()
    with DataFileInput(io, f"s3://{key}", size, cache=FooterCache()) as source:
        footer, cache_hit, bytes_read = source.footer(reads_index=False)
        rows = source.row_groups(footer, pre_buffer=True).read_row_groups([1, 2], columns=["id", "k", "id"])
    assert not cache_hit and footer.fragment is not None and 0 < bytes_read <= size
    assert rows.column_names == ["id", "k"]  # a column named twice is read once, as through pq.ParquetFile
    assert rows.column("k").to_pylist() == list(range(ROW_GROUP_ROWS, 3 * ROW_GROUP_ROWS))
    # No HEAD: the footer in one GET, then each row group's adjacent `id` and `k` chunks in one GET.
    assert [r.method for r in proxy.log.reset()] == ["GET"] * 3
    for wrong in (size - 100, size + 100, size // 2):
        source = DataFileInput(io, f"s3://{key}", wrong, cache=FooterCache())
        with source, pytest.raises(CorruptFileError, match=f"{key}.*{wrong} bytes"):
            source.footer(reads_index=False)
        # A filtered read reads the footer with ranged GETs of its own: the error names both sizes.
        source = DataFileInput(io, f"s3://{key}", wrong, cache=FooterCache())
        with source, pytest.raises(CorruptFileError, match=f"{key}: .* {wrong} bytes .* {size} bytes"):
            source.footer(reads_index=True)


def test_a_point_lookup_costs_at_most_two_requests_per_file_and_a_few_percent_of_the_bytes(proxied_table) -> None:
    proxy, sizes, point_id = proxied_table
    _, full_requests = _cold_read(proxy, None)
    result, requests = _cold_read(proxy, f"id = {point_id}")
    assert result.column("id").to_pylist() == [point_id]
    point, scan = summarize(requests), summarize(full_requests)
    # Per file: the footer with what precedes it in one GET (the recorded size makes a HEAD needless), the other
    # index ranges in at most one more; the file holding the id adds its surviving row group's `id` chunk, then
    # its `price` chunk (late materialization).
    assert point["requests"] <= 2 * len(sizes) + 2, requests
    data_reads = [r for r in requests if r.method == "GET" and not r.range.endswith(f"-{sizes[_key(r)] - 1}")]
    assert len(data_reads) <= 2 + len(sizes), data_reads
    assert point["bytes"] <= 0.25 * scan["bytes"], (point, scan)
    assert [r for r in requests if r.method == "HEAD"] == [], requests


def test_a_throttled_request_is_retried(proxied_table) -> None:
    proxy, _, point_id = proxied_table
    proxy.fail_next(2, key_contains="/files/")
    result, requests = _cold_read(proxy, f"id = {point_id}")
    assert result.column("id").to_pylist() == [point_id]
    assert [r.status for r in requests].count(503) == 2


def test_large_bloom_filters_are_probed_by_single_blocks_in_a_cold_file_and_read_whole_in_a_hot_one(
    proxied_table, seaweedfs: SeaweedFS
) -> None:
    from pyiceberg.catalog import load_catalog
    from pyiceberg.io.pyarrow import parquet_file_to_data_file
    from pyiceberg.utils.config import Config

    from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.engine.table.manifest_cache import manifest_cache

    proxy, _, _ = proxied_table
    # Four row groups of 60,000 random ids, each with a 64 KiB filter: too large together to read whole.
    rows = pa.table({"id": pa.array(np.random.default_rng(9).permutation(240_000).astype(np.int64))})
    rows = rows.cast(pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})]))
    sink = pa.BufferOutputStream()
    options = {"id": {"ndv": 60_000, "fpp": 0.01}}
    pq.write_table(rows, sink, row_group_size=60_000, bloom_filter_options=options)
    key = "warehouse/s3requests/files/big-blooms.parquet"
    with seaweedfs.filesystem().open_output_stream(key) as stream:
        stream.write(sink.getvalue().to_pybytes())
    # Written straight to S3 (the proxy is for reads), registered in the catalog the reads go through.
    direct = {**(Config().get_catalog_config(CATALOG) or {}), "s3.endpoint": seaweedfs.s3_endpoint}
    catalog = load_catalog(CATALOG, **direct)
    table = catalog.create_table("requests.big_blooms", schema=Schema(NestedField(1, "id", LongType())))
    with table.transaction() as transaction, transaction.update_snapshot().fast_append() as append:
        append.append_data_file(parquet_file_to_data_file(table.io, table.metadata, f"s3://{key}"))
    size = sink.getvalue().size
    first_filter = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata.row_group(0).column(0).bloom_filter_offset
    wanted = int(rows.column("id")[123_456].as_py())
    FOOTER_CACHE.clear()
    manifest_cache().clear()
    proxy.log.reset()
    result = open_read_session(CATALOG, "requests.big_blooms", row_filter=f"id = {wanted}").to_arrow()
    assert result.column("id").to_pylist() == [wanted]
    gets = [r for r in proxy.log.reset() if r.method == "GET" and r.path.endswith(key)]
    index_reads = [r for r in gets if not r.range.endswith(f"-{size - 1}") and _range_length(r) <= 32]
    data_reads = [r for r in gets if not r.range.endswith(f"-{size - 1}") and _range_length(r) > 32]
    # One 32-byte block per row group and nothing else, never a whole filter nor a filter's header (pyarrow writes
    # only the spec's header, which the recorded filter lengths then place exactly); then the one surviving row
    # group's column.
    assert sorted(_range_length(r) for r in index_reads) == [32] * 4, [(r.range, size) for r in gets]
    assert len(data_reads) == 1, [r.range for r in data_reads]
    # The file is hot now: the next lookup reads its filters whole (the last one partly in the footer tail already),
    # once, and keeps them with the footer.
    for whole_reads in (1, 0):
        result = open_read_session(CATALOG, "requests.big_blooms", row_filter=f"id = {wanted}").to_arrow()
        assert result.column("id").to_pylist() == [wanted]
        gets = [r for r in proxy.log.reset() if r.method == "GET" and r.path.endswith(key)]
        region_reads = [r for r in gets if _range_start(r) == first_filter and _range_length(r) > 3 * 128 * 1024]
        assert len(region_reads) == whole_reads, [r.range for r in gets]
        assert len([r for r in gets if _range_length(r) <= 32]) == 0, [r.range for r in gets]


def test_delete_files_are_read_with_their_recorded_size_and_no_head_request(
    proxied_table, seaweedfs: SeaweedFS
) -> None:
    from spark_jobs.engine.deletes.cache import DeleteFileCache
    from spark_jobs.engine.deletes.equality_deletes import read_equality_delete_keys
    from spark_jobs.engine.deletes.position_deletes import load_deleted_positions
    from spark_jobs.engine.planning.scan_tasks import DataFileSlice, EqualityDeleteFile, PositionDeleteFile
    from spark_jobs.engine.table.catalog import load_catalog

    proxy, sizes, _ = proxied_table
    io = load_catalog(CATALOG).load_table(TABLE).io
    data_path = f"s3://{next(iter(sizes))}"
    other_path = "s3://warehouse/s3requests/files/other.parquet"
    # Two row groups, each holding positions of both files (file_path as Iceberg writes it, sorted).
    positions = pa.table(
        {
            "file_path": pa.array([data_path, data_path, other_path, data_path, other_path]).cast(pa.string()),
            "pos": pa.array([3, 7, 1, 11, 2], pa.int64()),
        }
    )
    positions = positions.cast(
        pa.schema(
            [
                pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
            ]
        )
    )
    keys = pa.table({"id": pa.array([5, 9], pa.int64())}).cast(
        pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    )
    written = {}
    for name, rows, row_group_rows in (("pos-deletes", positions, 3), ("eq-deletes", keys, 2)):
        sink = pa.BufferOutputStream()
        pq.write_table(rows, sink, row_group_size=row_group_rows)
        key = f"warehouse/s3requests/files/{name}.parquet"
        with seaweedfs.filesystem().open_output_stream(key) as stream:
            stream.write(sink.getvalue().to_pybytes())
        written[name] = (f"s3://{key}", sink.getvalue().size)
    position_file = PositionDeleteFile(*written["pos-deletes"], record_count=5, data_sequence_number=2)
    data_file = DataFileSlice(data_path, sizes[next(iter(sizes))], ROWS_PER_FILE, 0, position_deletes=(position_file,))
    proxy.log.reset()
    deleted = load_deleted_positions(data_file, io=io, cache=DeleteFileCache(1 << 20))
    assert deleted.positions.tolist() == [3, 7, 11]
    equality_file = EqualityDeleteFile(
        *written["eq-deletes"], record_count=2, equality_ids=(1,), data_sequence_number=2
    )
    found = read_equality_delete_keys(equality_file, (1,), (pa.int64(),), io=io)
    assert found.column("1").to_pylist() == [5, 9]
    requests = [r for r in proxy.log.reset() if "-deletes" in r.path]
    # Position deletes: the footer, then each row group; equality deletes: the footer, then the key column. No HEAD.
    assert [r.method for r in requests] == ["GET"] * 5, [(r.method, r.path, r.range) for r in requests]


def test_a_deletion_vector_is_one_ranged_get_without_head(proxied_table, seaweedfs: SeaweedFS) -> None:
    from dataclasses import replace

    from spark_jobs.engine.deletes.deletion_vectors import read_deletion_vector
    from spark_jobs.engine.planning.scan_tasks import DeletionVector
    from spark_jobs.engine.shared.errors import CorruptFileError
    from spark_jobs.engine.table.catalog import load_catalog
    from spark_jobs.engine.write.deletion_vector_files import puffin_file_bytes, serialize_blob

    proxy, sizes, _ = proxied_table
    io = load_catalog(CATALOG).load_table(TABLE).io
    wanted = np.array([4, 8, 15, 16, 23, 42, 1 << 33], dtype=np.int64)
    other, _ = serialize_blob(np.array([1, 2], dtype=np.int64))
    blob, cardinality = serialize_blob(wanted)
    content, ranges = puffin_file_bytes([(other, {}), (blob, {})])
    key = "warehouse/s3requests/files/dv.puffin"
    with seaweedfs.filesystem().open_output_stream(key) as stream:
        stream.write(content)
    (offset, length) = ranges[1]
    dv = DeletionVector(f"s3://{key}", offset, length, cardinality, f"s3://{next(iter(sizes))}", 3)
    proxy.log.reset()
    assert read_deletion_vector(dv, io=io).tolist() == wanted.tolist()
    requests = [r for r in proxy.log.reset() if r.path.endswith(key)]
    assert [(r.method, r.range) for r in requests] == [("GET", f"bytes={offset}-{offset + length - 1}")]
    # A blob recorded past the object's end: a clear error (the object's size is asked only then).
    with pytest.raises(CorruptFileError, match="the file ends"):
        read_deletion_vector(replace(dv, content_offset=len(content) - 10), io=io)


def test_ranged_reads_use_the_file_io_keys_and_not_a_token_of_the_process(proxied_table, monkeypatch) -> None:
    from spark_jobs.engine.shared.object_ranges import clear_stores, read_object_range
    from spark_jobs.engine.table.catalog import load_catalog

    _, sizes, _ = proxied_table
    io = load_catalog(CATALOG).load_table(TABLE).io
    key, size = next(iter(sizes.items()))
    # pyarrow signs with the catalog's keys alone; a session token of the process must not join them.
    monkeypatch.setenv("AWS_SESSION_TOKEN", "a-token-of-another-identity")
    clear_stores()
    try:
        assert read_object_range(io, f"s3://{key}", size - 4, 4) == b"PAR1"
    finally:
        clear_stores()


def test_a_point_lookup_reads_only_the_pages_holding_the_row_of_the_other_columns(
    proxied_table, seaweedfs: SeaweedFS
) -> None:
    from pyiceberg.catalog import load_catalog
    from pyiceberg.io.pyarrow import parquet_file_to_data_file
    from pyiceberg.types import DoubleType
    from pyiceberg.utils.config import Config

    from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.engine.table.manifest_cache import manifest_cache

    proxy, _, _ = proxied_table
    # One row group of 200,000 random ids, `price` (no dictionary) in pages of ~1,000 rows: the page index cannot
    # narrow `id`, so its chunk is read whole; of `price`, only the one page holding the row is needed.
    rng = np.random.default_rng(11)
    ids = rng.permutation(200_000).astype(np.int64)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
            pa.field("price", pa.float64(), metadata={b"PARQUET:field_id": b"2"}),
        ]
    )
    rows = pa.table([pa.array(ids), pa.array(rng.random(200_000))], schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(
        rows, sink, row_group_size=200_000, data_page_size=8 * 1024, write_page_index=True, use_dictionary=["id"]
    )
    key = "warehouse/s3requests/files/pages.parquet"
    with seaweedfs.filesystem().open_output_stream(key) as stream:
        stream.write(sink.getvalue().to_pybytes())
    direct = {**(Config().get_catalog_config(CATALOG) or {}), "s3.endpoint": seaweedfs.s3_endpoint}
    table = load_catalog(CATALOG, **direct).create_table(
        "requests.pages", schema=Schema(NestedField(1, "id", LongType()), NestedField(2, "price", DoubleType()))
    )
    with table.transaction() as transaction, transaction.update_snapshot().fast_append() as append:
        append.append_data_file(parquet_file_to_data_file(table.io, table.metadata, f"s3://{key}"))
    price_chunk = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata.row_group(0).column(1)
    for position in (0, 123_456, 199_999):
        FOOTER_CACHE.clear()
        manifest_cache().clear()
        proxy.log.reset()
        wanted = int(ids[position])
        result = open_read_session(CATALOG, "requests.pages", row_filter=f"id = {wanted}").to_arrow()
        assert result.to_pylist() == [{"id": wanted, "price": rows.column("price")[position].as_py()}]
        gets = [r for r in proxy.log.reset() if r.method == "GET" and r.path.endswith(key)]
        price_start = price_chunk.data_page_offset
        price_end = price_start + price_chunk.total_compressed_size
        price_reads = [
            r for r in gets if price_start <= _range_start(r) and _range_start(r) + _range_length(r) <= price_end
        ]
        # One page, in one request as the chunk would have been (none when the footer's tail holds it), never the
        # whole chunk.
        assert len(price_reads) == (0 if position == 199_999 else 1), [r.range for r in gets]
        assert sum(_range_length(r) for r in price_reads) < price_chunk.total_compressed_size / 50, [
            r.range for r in gets
        ]
