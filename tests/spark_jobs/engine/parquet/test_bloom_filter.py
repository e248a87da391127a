"""Split-block bloom filter probes against filters pyarrow wrote, and row-group pruning with them."""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import EqualTo, In, Or
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, FixedType, LongType, NestedField, StringType, UUIDType

from spark_jobs.engine.parquet.bloom_filter import (
    NOT_IN_COLUMN,
    literal_might_be_present,
    plain_encoded_literal,
    read_bloom_filter,
)
from spark_jobs.engine.parquet.file_columns import file_leaf_columns
from spark_jobs.engine.parquet.opener import read_data_file
from spark_jobs.engine.shared.metrics import ScanMetrics
from tests.spark_jobs.engine.parquet.scan_contexts import scan_context


def _field(name: str, arrow_type: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, arrow_type, metadata={b"PARQUET:field_id": str(field_id).encode()})


def _filters_of(path: Path):
    parquet_file = pq.ParquetFile(path)
    leaves = file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)
    with pa.OSFile(str(path)) as stream:
        filters = [
            read_bloom_filter(stream, parquet_file.metadata.row_group(0).column(leaf.index), str(path))[0]
            for leaf in leaves
        ]
    return leaves, filters


def test_probe_matches_filters_written_by_pyarrow(tmp_path: Path) -> None:
    present = np.arange(0, 4000, 2, dtype=np.int32)  # even numbers
    strings = [f"user-{i}" for i in range(2000)]
    uuids = [uuid.UUID(int=i * 7919) for i in range(2000)]
    decimals = [Decimal(i).scaleb(-2) for i in range(2000)]
    table = pa.table(
        [
            pa.array(present),
            pa.array(present.astype(np.int64) * 3),
            pa.array(strings),
            pa.array([value.bytes for value in uuids], pa.binary(16)),
            pa.array(decimals, pa.decimal128(20, 2)),
        ],
        names=["i32", "i64", "s", "u", "d"],
    )
    path = tmp_path / "bloom.parquet"
    options = {"ndv": 2000, "fpp": 0.01}
    pq.write_table(table, path, bloom_filter_options={name: options for name in table.column_names})
    leaves, filters = _filters_of(path)
    assert all(bloom_filter is not None for bloom_filter in filters)
    columns = {leaf.path: (leaf, bloom_filter) for leaf, bloom_filter in zip(leaves, filters, strict=True)}

    def absent_rate(name: str, absent_values) -> float:
        leaf, bloom_filter = columns[name]
        hits = sum(literal_might_be_present(bloom_filter, value, leaf) for value in absent_values)
        return hits / len(absent_values)

    for name, values in [
        ("i32", present.tolist()),
        ("i64", (present.astype(np.int64) * 3).tolist()),
        ("s", strings),
        ("u", [value.bytes for value in uuids]),
        ("d", decimals),
    ]:
        leaf, bloom_filter = columns[name]
        assert all(literal_might_be_present(bloom_filter, value, leaf) for value in values), name
    assert absent_rate("i32", list(range(1, 4000, 2))) < 0.05
    assert absent_rate("i64", [value * 3 + 1 for value in range(2000)]) < 0.05
    assert absent_rate("s", [f"other-{i}" for i in range(2000)]) < 0.05
    assert absent_rate("u", [uuid.UUID(int=i * 7919 + 1).bytes for i in range(2000)]) < 0.05
    assert absent_rate("d", [Decimal(i).scaleb(-2) + 3000 for i in range(2000)]) < 0.05


def test_literals_that_cannot_be_in_the_column() -> None:
    int32_leaf, fixed_leaf, decimal_leaf = _leaves_of_int_fixed_and_decimal_columns()
    assert plain_encoded_literal(2**40, int32_leaf) is NOT_IN_COLUMN  # a long literal beyond an int file column
    assert plain_encoded_literal(7, int32_leaf) == (7).to_bytes(4, "little")
    assert plain_encoded_literal(b"ab", fixed_leaf) is NOT_IN_COLUMN  # wrong length for fixed[3]
    assert plain_encoded_literal(Decimal("1.005"), decimal_leaf) is NOT_IN_COLUMN  # more digits than scale 2
    assert plain_encoded_literal(1.5, _double_leaf()) is None  # floats are never probed


def _leaves_of_int_fixed_and_decimal_columns():
    schema = pa.schema([pa.field("i", pa.int32()), pa.field("f", pa.binary(3)), pa.field("d", pa.decimal128(9, 2))])
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    parquet_file = pq.ParquetFile(pa.BufferReader(sink.getvalue()))
    return file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)


def _double_leaf():
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"x": pa.array([], pa.float64())}), sink)
    parquet_file = pq.ParquetFile(pa.BufferReader(sink.getvalue()))
    return file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)[0]


def test_bloom_filters_prune_row_groups_where_statistics_cannot(write_data_file) -> None:
    # Every row group spans the same range of values (so statistics never prune), with different members.
    values = np.concatenate([np.arange(group, 10_000, 10) for group in range(10)]).astype(np.int32)
    table = pa.table(
        [pa.array(values), pa.array([f"name-{v}" for v in values]), pa.array([b"abc"] * len(values), pa.binary(3))],
        schema=pa.schema([_field("k", pa.int32(), 1), _field("name", pa.string(), 2), _field("f", pa.binary(3), 3)]),
    )
    data_file = write_data_file(
        table, row_group_size=1000, bloom_filter_options={"k": {"ndv": 1000, "fpp": 0.01}, "name": {"ndv": 1000}}
    )
    schema = Schema(
        NestedField(1, "k", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "f", FixedType(3), required=False),
    )
    cases = [
        (EqualTo("k", 4321), [4321]),
        (In("k", [11, 12]), [11, 12]),
        (EqualTo("name", "name-77"), [77]),
        (Or(EqualTo("k", 5), EqualTo("name", "name-9")), [5, 9]),
    ]
    for expression, expected in cases:
        metrics = ScanMetrics()
        batches = read_data_file(data_file, scan_context(schema, [1], expression), metrics=metrics)
        assert sorted(value for batch in batches for value in batch.column(0).to_pylist()) == expected
        assert metrics.row_groups_pruned_by_statistics == 0
        assert metrics.row_groups_pruned_by_bloom_filter >= 10 - len(expected) - 1, expression


def test_uuid_and_decimal_columns_in_read_schema_probe_their_file_encoding(write_data_file) -> None:
    uuids = [uuid.UUID(int=i) for i in range(1, 2001)]
    table = pa.table(
        [
            pa.array([value.bytes for value in uuids], pa.binary(16)),
            pa.array([Decimal(i) for i in range(2000)], pa.decimal128(12, 0)),
        ],
        schema=pa.schema([_field("u", pa.binary(16), 1), _field("d", pa.decimal128(12, 0), 2)]),
    )
    data_file = write_data_file(table, row_group_size=200, bloom_filter_options={"u": {"ndv": 200}, "d": {"ndv": 200}})
    schema = Schema(
        NestedField(1, "u", UUIDType(), required=False), NestedField(2, "d", DecimalType(14, 0), required=False)
    )
    for expression in (EqualTo("u", uuids[10]), In("d", [Decimal(10), Decimal(1999)])):
        metrics = ScanMetrics()
        batches = list(read_data_file(data_file, scan_context(schema, [1, 2], expression), metrics=metrics))
        assert sum(batch.num_rows for batch in batches) >= 1
        assert metrics.row_groups_pruned_by_statistics + metrics.row_groups_pruned_by_bloom_filter >= 8


def test_block_reading_filter_answers_like_the_whole_filter_and_reads_a_block_per_probe(tmp_path: Path) -> None:
    from spark_jobs.engine.parquet.bloom_filter import open_bloom_filter

    values = np.arange(0, 60000, 3, dtype=np.int64)
    path = tmp_path / "blocks.parquet"
    pq.write_table(pa.table({"id": values}), path, bloom_filter_options={"id": {"ndv": 20000, "fpp": 0.01}})
    parquet_file = pq.ParquetFile(path)
    leaf = file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)[0]
    chunk = parquet_file.metadata.row_group(0).column(0)
    metrics = ScanMetrics()
    with pa.OSFile(str(path)) as stream:
        whole, whole_bytes = read_bloom_filter(stream, chunk, str(path))
        lazy = open_bloom_filter(stream, chunk, str(path), metrics)
        probes = [*values[:50].tolist(), *range(1, 300, 3)]
        assert [literal_might_be_present(lazy, v, leaf) for v in probes] == [
            literal_might_be_present(whole, v, leaf) for v in probes
        ]
    assert all(literal_might_be_present(lazy, v, leaf) for v in values[:50].tolist())
    assert metrics.bytes_read <= 64 + 32 * len(probes)
    assert metrics.bytes_read < whole_bytes / 4


def _probed_block(chunk: pq.ColumnChunkMetaData, value: int) -> int:
    """The offset of the block an int64 ``value`` lands in, in the chunk's filter (computed here from the spec)."""
    import struct

    import xxhash

    from spark_jobs.engine.parquet.bloom_filter import bitset_range

    place = bitset_range(chunk)
    assert place is not None
    value_hash = xxhash.xxh64_intdigest(struct.pack("<q", value), seed=0)
    return place[0] + (((value_hash >> 32) * (place[1] // 32)) >> 32) * 32


def _with_created_by(path: Path, created_by: bytes) -> None:
    """Rewrite the file's ``created_by`` in place, padded to the same length so that every offset and the footer's
    length stay valid."""
    data = path.read_bytes()
    written = pq.ParquetFile(path).metadata.created_by.encode()
    created_by = created_by.ljust(len(written))
    assert len(created_by) == len(written) and data.count(written) == 1
    path.write_bytes(data.replace(written, created_by))


def _prune_reads(path: Path, node, leaf) -> tuple[list[int], int]:
    """The row groups bloom filters keep for ``node`` and the bytes their probes read from the file."""
    from spark_jobs.engine.parquet.access_plan import AccessPlan
    from spark_jobs.engine.parquet.bloom_filter import prune_by_bloom_filters

    metadata = pq.ParquetFile(path).metadata
    plan = AccessPlan([metadata.row_group(index).num_rows for index in range(metadata.num_row_groups)])
    metrics = ScanMetrics()
    with pa.OSFile(str(path)) as stream:
        prune_by_bloom_filters(
            plan,
            node,
            metadata=metadata,
            leaf_of_field=lambda _: leaf,
            stream=stream,
            source=str(path),
            metrics=metrics,
        )
    return list(plan.scanned_row_groups()), metrics.bytes_read


def test_writers_whose_bloom_headers_are_proven_standard_without_reading_them() -> None:
    from spark_jobs.engine.parquet.bloom_filter import writes_standard_bloom_headers

    for known in (
        "parquet-cpp-arrow version 26.0.1",
        "parquet-cpp-arrow version 14.0.2",
        "parquet-mr version 1.17.0 (build fac0c746532e133beb928a7f6a7e57b510b477a1)",
        "parquet-mr version 1.16.0 (build 402c3810c372d29603e181771acebfecc71bef61)",
        "DuckDB version v1.5.5 (build d8cdaa33fd)",
    ):
        assert writes_standard_bloom_headers(known), known
    for unknown in (
        None,
        "",
        "parquet-cpp-arrow version 26.0.2",  # newer than checked
        "parquet-cpp-arrow version 27.0.0-SNAPSHOT",  # not a release
        "parquet-mr version 1.18.0 (build 0123abc)",
        "parquet-mr-trino version 1.13.1",  # another writer
        "DuckDB version v1.6.0 (build 0123456789)",
        "parquet-rs version 57.0.0",  # not checked
        "impala version 4.4.0",
        "parquet-cpp-arrow version 26.0.1 and more",
    ):
        assert not writes_standard_bloom_headers(unknown), unknown


def test_bitset_place_follows_from_the_chunk_metadata_and_probes_then_read_no_header(tmp_path: Path) -> None:
    from pyiceberg.expressions import EqualTo as Eq

    from spark_jobs.engine.parquet.access_plan import AccessPlan
    from spark_jobs.engine.parquet.bloom_filter import (
        HEADER_FOLD_MAX_BYTES,
        bitset_range,
        open_bloom_filter,
        probe_block_ranges,
        standard_bitset_range,
    )
    from spark_jobs.engine.parquet.predicates import translate_filter

    values = np.random.default_rng(3).permutation(40_000).astype(np.int64)
    path = tmp_path / "placed.parquet"
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    node = translate_filter(Eq("id", int(values[5])).bind(schema))
    # As pyarrow wrote it (a writer whose headers are proven standard), then as if an unknown writer or a newer
    # release had written the same bytes.
    for created_by in (None, b"parquet-cpp-arrow version 99.0.1", b"another-parquet-writer version 1"):
        for ndv in (10, 3_000, 200_000):  # one-, two- and three-byte varints of numBytes in the header
            pq.write_table(
                pa.table({"id": values}),
                path,
                row_group_size=10_000,
                bloom_filter_options={"id": {"ndv": ndv, "fpp": 0.01}},
            )
            if created_by is not None:
                _with_created_by(path, created_by)
            parquet_file = pq.ParquetFile(path)
            leaf = file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)[0]
            metadata = parquet_file.metadata
            chunks = [metadata.row_group(index).column(0) for index in range(metadata.num_row_groups)]
            with pa.OSFile(str(path)) as stream:
                for row_group, chunk in enumerate(chunks):
                    checked = open_bloom_filter(stream, chunk, str(path), ScanMetrics())
                    assert checked is not None and bitset_range(chunk) == checked.bitset_range, ndv
                    proven = standard_bitset_range(chunk, standard_writer=True)
                    assert proven == checked.bitset_range, ndv
                    metrics = ScanMetrics()
                    placed = open_bloom_filter(stream, chunk, str(path), metrics, check_header=False)
                    probes = [*values[row_group * 10_000 : row_group * 10_000 + 20].tolist(), -1, -2, 50_000]
                    assert [literal_might_be_present(placed, v, leaf) for v in probes] == [
                        literal_might_be_present(checked, v, leaf) for v in probes
                    ]
                    assert metrics.bytes_read == 32 * len(placed.blocks)  # blocks only, no header
            plan = AccessPlan([metadata.row_group(index).num_rows for index in range(metadata.num_row_groups)])
            ranges = probe_block_ranges(plan, node, metadata=metadata, leaf_of_field=lambda _, found=leaf: found)
            # One block per row group for one literal, each inside exactly one range.
            probed = [_probed_block(chunk, int(values[5])) for chunk in chunks]
            for block in probed:
                assert len([r for r in ranges if r[0] <= block and block + 32 <= r[0] + r[1]]) == 1, (ndv, ranges)
            kept, bytes_read = _prune_reads(path, node, leaf)
            holding = int(np.flatnonzero(values == values[5])[0]) // 10_000
            assert holding in kept and (ndv < 200_000 or kept == [holding]), (ndv, kept)  # small filters: all full
            headers = [r for r in ranges if r[0] in {chunk.bloom_filter_offset for chunk in chunks}]
            if created_by is None:  # no header is read at all: the blocks alone
                assert headers == [] and ranges == sorted((block, 32) for block in probed), (ndv, ranges)
                assert bytes_read == 32 * len(chunks)
                continue
            # Else one filter's header is read too, the one whose block lies nearest it, in the same range as that
            # block when it is near enough.
            nearest = min(range(len(chunks)), key=lambda index: probed[index] - chunks[index].bloom_filter_offset)
            assert [r[0] for r in headers] == [chunks[nearest].bloom_filter_offset], (ndv, ranges)
            folded = probed[nearest] + 32 - chunks[nearest].bloom_filter_offset <= HEADER_FOLD_MAX_BYTES
            assert len(ranges) == len(chunks) + (0 if folded else 1), (ndv, ranges)
            assert ndv > 10 or folded  # a small filter comes whole with its header
            assert bytes_read > 32 * len(chunks)


def test_a_filter_of_another_kind_from_an_unknown_writer_is_read_and_never_prunes(tmp_path: Path) -> None:
    from pyiceberg.expressions import EqualTo as Eq

    from spark_jobs.engine.parquet.predicates import translate_filter
    from spark_jobs.engine.planning.scan_tasks import DataFileSlice

    values = np.random.default_rng(4).permutation(20_000).astype(np.int64)
    table = pa.table([pa.array(values)], schema=pa.schema([_field("id", pa.int64(), 1)]))
    path = tmp_path / "other-kind.parquet"
    pq.write_table(table, path, row_group_size=5_000, bloom_filter_options={"id": {"ndv": 5_000, "fpp": 0.01}})
    _with_created_by(path, b"some-other-writer version 26.0")
    # Each header's algorithm now names union member 2 (no such kind today; same length, so the metadata agrees).
    data = bytearray(path.read_bytes())
    metadata = pq.ParquetFile(path).metadata
    for row_group in range(metadata.num_row_groups):
        offset = metadata.row_group(row_group).column(0).bloom_filter_offset
        algorithm = data.index(b"\x1c\x1c\x00\x00", offset)
        assert algorithm - offset <= 6  # right after numBytes
        data[algorithm + 1] = 0x2C
    path.write_bytes(bytes(data))
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    leaf = file_leaf_columns(pq.ParquetFile(path).schema, pq.ParquetFile(path).schema_arrow)[0]
    absent = 20_000 + 7  # in no row group: a filter of the spec's kind would rule every row group out
    node = translate_filter(Eq("id", absent).bind(schema))
    kept, bytes_read = _prune_reads(path, node, leaf)
    assert kept == [0, 1, 2, 3] and bytes_read > 0  # headers read; filters of an unknown kind prune nothing
    data_file = DataFileSlice(f"file:{path}", path.stat().st_size, table.num_rows, 0, length=path.stat().st_size)
    for wanted in (int(values[17]), int(values[12_345]), absent):
        metrics = ScanMetrics()
        batches = read_data_file(data_file, scan_context(schema, [1], Eq("id", wanted)), metrics=metrics)
        assert [v for batch in batches for v in batch.column(0).to_pylist()] == ([] if wanted == absent else [wanted])
        assert metrics.row_groups_pruned_by_bloom_filter == 0
