"""Reading a few rows of a column chunk from the pages holding them: the same values as decoding the chunk whole."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.engine.parquet.file_columns import file_leaf_columns
from spark_jobs.engine.parquet.footer_cache import read_footer
from spark_jobs.engine.parquet.page_selection import plan_page_read, read_selected_rows

ROWS = 30_000


def _table() -> pa.Table:
    rng = np.random.default_rng(0)
    nulls = rng.random(ROWS) < 0.2
    values = range(ROWS)
    return pa.table(
        {
            "b": pa.array(rng.random(ROWS) < 0.5, mask=nulls),
            "i": pa.array(rng.integers(0, 1000, ROWS).astype(np.int32), mask=nulls),
            "l": pa.array(rng.integers(0, 2**40, ROWS), mask=nulls),
            "d": pa.array(rng.random(ROWS), mask=nulls),
            "s": pa.array([None if n else f"v{x % 50}" for n, x in zip(nulls, values, strict=True)]),
            "dec": pa.array(
                [None if n else decimal.Decimal(x) / 100 for n, x in zip(nulls, values, strict=True)],
                pa.decimal128(12, 2),
            ),
            "dt": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=x % 999) for x in values]),
            "ts": pa.array(np.arange(ROWS).astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
            "fx": pa.array([x.to_bytes(16, "little") for x in values], pa.binary(16)),
            "nested": pa.array([{"a": x} for x in values]),
        }
    )


@pytest.mark.parametrize(("data_page_version", "use_dictionary"), [("1.0", True), ("2.0", True), ("1.0", False)])
def test_selected_rows_read_from_their_pages_equal_the_whole_chunk(
    tmp_path: Path, data_page_version: str, use_dictionary: bool
) -> None:
    table = _table()
    path = tmp_path / "pages.parquet"
    pq.write_table(
        table,
        path,
        row_group_size=15_000,
        data_page_size=2048,
        data_page_version=data_page_version,
        use_dictionary=use_dictionary,
        write_page_index=True,
        compression="zstd",
    )
    parquet_file = pq.ParquetFile(path)
    leaves = file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)
    flat = {index: leaf for index, leaf in enumerate(leaves) if leaf.path != "nested.a"}
    requests: list[tuple[int, int]] = []
    with path.open("rb") as stream:
        footer, _ = read_footer(stream, str(path), path.stat().st_size, metadata_size_hint=8)
        data = path.read_bytes()

        def read_at(length: int, offset: int) -> bytes:
            requests.append((offset, length))
            return data[offset : offset + length]

        for row_group in range(parquet_file.metadata.num_row_groups):
            whole = parquet_file.read_row_group(row_group)
            for selected in ([0], [14_999], [7_000, 7_001], [123, 14_000]):
                rows = np.array(selected, dtype=np.int64)
                requests.clear()
                # Requests counted free here: every column whose pages save bytes is read by pages.
                columns, bytes_read = read_selected_rows(footer, row_group, flat, rows, read_at, request_cost_bytes=0)
                # Columns of many pages are served by pages; a column of a page or two, or whose dictionary is most
                # of its chunk (distinct doubles), is not worth it.
                served = {leaves[index].path for index in columns}
                assert {"ts", "fx"} <= served and (use_dictionary or {"l", "d"} <= served), (selected, served)
                for index, values in columns.items():
                    expected = whole.column(leaves[index].path).take(pa.array(rows))
                    assert pa.chunked_array([values]).equals(expected), (leaves[index].path, selected)
                assert bytes_read == sum(length for _, length in requests)
                metadata = parquet_file.metadata.row_group(row_group)
                chunk_bytes = sum(metadata.column(index).total_compressed_size for index in columns)
                # Offset indexes, dictionaries and a page or two per column: far less than the chunks.
                assert bytes_read < chunk_bytes / 2, (bytes_read, chunk_bytes)
            # A nested column is never served by pages.
            nested = leaves.index(next(leaf for leaf in leaves if leaf.path == "nested.a"))
            assert (
                plan_page_read(footer, row_group, leaves[nested], np.array([0]), lambda o, n: data[o : o + n]) is None
            )


def test_pages_are_not_read_alone_when_they_would_not_save_enough(tmp_path: Path) -> None:
    path = tmp_path / "few-pages.parquet"
    pq.write_table(_table().select(["l"]), path, row_group_size=ROWS, write_page_index=True)  # one or two pages
    data = path.read_bytes()
    footer, _ = read_footer(pa.BufferReader(data), str(path), len(data))
    leaf = file_leaf_columns(pq.ParquetFile(path).schema, pq.ParquetFile(path).schema_arrow)[0]
    assert plan_page_read(footer, 0, leaf, np.array([5]), lambda o, n: data[o : o + n]) is None
    columns, bytes_read = read_selected_rows(footer, 0, {0: leaf}, np.array([5]), lambda n, o: data[o : o + n])
    assert columns == {} and bytes_read == 0
    # Many small pages, but a dictionary page apart from the page holding the row: a second request would save
    # less than it costs, unless requests were free.
    pq.write_table(_table().select(["i"]), path, row_group_size=ROWS, data_page_size=1024, write_page_index=True)
    data = path.read_bytes()
    footer, _ = read_footer(pa.BufferReader(data), str(path), len(data))
    leaf = file_leaf_columns(pq.ParquetFile(path).schema, pq.ParquetFile(path).schema_arrow)[0]
    assert plan_page_read(footer, 0, leaf, np.array([20_000]), lambda o, n: data[o : o + n]) is None
    free = plan_page_read(footer, 0, leaf, np.array([20_000]), lambda o, n: data[o : o + n], request_cost_bytes=0)
    assert free is not None and len(free.ranges) == 2


def test_an_offset_index_that_does_not_describe_its_chunk_is_not_used(tmp_path: Path) -> None:
    from spark_jobs.engine.parquet.thrift_compact import CompactReader, CompactWriter

    path = tmp_path / "moved.parquet"
    pq.write_table(
        _table().select(["l", "d"]),
        path,
        row_group_size=ROWS,
        data_page_size=1024,
        use_dictionary=False,
        write_page_index=True,
    )
    data = path.read_bytes()
    footer, _ = read_footer(pa.BufferReader(data), str(path), len(data))
    leaf = file_leaf_columns(pq.ParquetFile(path).schema, pq.ParquetFile(path).schema_arrow)[0]

    def read(offset: int, length: int) -> bytes:
        return data[offset : offset + length]

    assert plan_page_read(footer, 0, leaf, np.array([20_000]), read, request_cost_bytes=0) is not None
    # The same offset index with its last page moved into the next column's chunk.
    pages = CompactReader(read(*_offset_index_range(footer))).read_struct()[1]
    pages[-1][1] += pq.ParquetFile(path).metadata.row_group(0).column(0).total_compressed_size
    moved = CompactWriter().struct_list(
        1, [CompactWriter().i64(1, page[1]).i32(2, page[2]).i64(3, page[3]).finish() for page in pages]
    )
    assert (
        plan_page_read(footer, 0, leaf, np.array([20_000]), lambda o, n: moved.finish(), request_cost_bytes=0) is None
    )


def _offset_index_range(footer) -> tuple[int, int]:
    from spark_jobs.engine.parquet.page_index import page_index_locations

    location = page_index_locations(footer)[0][0]
    return location.offset_index_offset, location.offset_index_length
