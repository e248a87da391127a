"""Prune row groups with Parquet split-block bloom filters, for ``=`` and IN predicates.

Per the Parquet spec (BloomFilter.md):

1. A column chunk's filter sits at ``bloom_filter_offset``: a Thrift compact ``BloomFilterHeader`` (numBytes,
   algorithm BLOCK, hash XXHASH, compression UNCOMPRESSED) followed by ``numBytes`` of bitset, 32-byte blocks of
   eight little-endian 32-bit words.
2. A value is hashed as its PLAIN encoding in the file's physical type (int32/int64 little endian, strings as
   UTF-8 bytes without a length, fixed-length bytes as is) with xxHash64, seed 0.
3. The block is ``((hash >> 32) * number_of_blocks) >> 32``; the low 32 bits, multiplied by eight salts, pick one
   bit per word (the top 5 bits of each 32-bit product); the value may be present only if all eight bits are set.
   A probe needs that one block: for a few literals only those blocks are read (``BlockReadingBloomFilter``); for
   many literals the whole bitset is read once. Where the bitset starts needs no header read when the chunk's
   metadata gives the filter's length (``bitset_range``: the header's length is fixed by its four fields). What the
   header alone proves is that the filter is of the one kind the spec defines (split-block, xxHash, uncompressed): a
   probe of a filter of another kind could drop a row group that holds the value. The header read is skipped only
   where that is proven without it (``standard_bitset_range``), when all of these hold:

   a. The file's writer (``created_by``) is one whose every release, up to the version listed, writes a filter only
      with the spec's header (those four fields, nothing else) and a power-of-two numBytes
      (``_STANDARD_BLOOM_WRITERS``: each checked in the writer's code and on files it wrote). An unknown writer, a
      newer version or a build that is not a release has its headers read.
   b. The chunk records ``bloom_filter_length``, and with numBytes the largest power of two <= that length (such a
      writer's filter is numBytes + a header of 15 to 19 bytes, and numBytes >= 32), the length minus numBytes is
      exactly the byte length of the spec's compact-Thrift header for numBytes. An encrypted filter (header and
      bitset each carry a nonce and a tag) or any other layout fails this, and its header is read.

   Otherwise one filter per column of a file still has its header read and checked (the one whose probed block lies
   nearest its header: header and block then come in one short range); the column's other filters are then placed
   by their metadata (one writer wrote them all). A well-formed header of another kind makes its filter unusable,
   as parquet-java treats it: the row group is "may match", never skipped on its account.
4. A leaf predicate ``=``/IN is false for the row group when no literal may be present; other leaves, columns
   without a filter, and literals we cannot encode exactly (floats, booleans, byte-array decimals) are "may match".
5. The predicate tree decides; a row group that cannot match is skipped (``row_groups_pruned_by_bloom_filter``).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import xxhash
from pyiceberg.io import InputStream

from spark_jobs.engine.parquet.access_plan import AccessPlan
from spark_jobs.engine.parquet.file_columns import LeafColumn
from spark_jobs.engine.parquet.predicates import AllOf, AnyOf, ColumnPredicate, FilterNode, might_match_tree
from spark_jobs.engine.parquet.thrift_compact import CompactReader
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.metrics import ScanMetrics

_SALTS = np.array(
    [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31], dtype=np.uint64
)
_BYTES_PER_BLOCK = 32
_HEADER_READ_SIZE = 64  # a BloomFilterHeader is about 15 bytes; read a little more when the length is unknown
# A BloomFilterHeader as the spec's four fields encode it: numBytes (1 + varint), then algorithm, hash and compression
# (each a field holding a struct with one empty struct: 4 bytes), then the stop byte.
_HEADER_BYTES_BESIDES_NUM_BYTES = 1 + 3 * 4 + 1
# Up to this many literals, probes read single 32-byte blocks; more read the whole bitset at once.
_BLOCK_READ_MAX_LITERALS = 32
# When a probed block lies at most this far past its filter's header, the header and the block are fetched as one
# range: a request saved for a few KiB (the filter whose block lies nearest its header is the one checked).
HEADER_FOLD_MAX_BYTES = 32 * 1024
# Writers whose every release up to the version given writes each bloom filter with the spec's header alone
# (numBytes, BLOCK, XXHASH, UNCOMPRESSED; no other kind can be asked for) and a power-of-two numBytes:
# parquet-cpp-arrow (``BlockSplitBloomFilter::WriteTo`` throws for any other kind; sizes rounded up to a power of
# two; bloom filters written by its file writer in recent releases only), parquet-mr / parquet-java
# (``ParquetMetadataConverter.toBloomFilterHeader`` throws for any other kind, checked in 1.13.1 and 1.17.0;
# ``BlockSplitBloomFilter`` rounds to a power of two; 1.13.1 records no filter length, 1.17.0 does), DuckDB
# (``ParquetWriter::Finalize`` sets exactly those fields; its block count is a power of two). A ``created_by`` that is
# not exactly one of these forms (a snapshot or other build, a fork naming itself differently) does not match.
_STANDARD_BLOOM_WRITERS = (
    (re.compile(r"parquet-cpp-arrow version (\d+)\.(\d+)\.(\d+)"), (26, 0, 1)),
    (re.compile(r"parquet-mr version (\d+)\.(\d+)\.(\d+)(?: \(build [0-9a-f]+\))?"), (1, 17, 0)),
    (re.compile(r"DuckDB version v(\d+)\.(\d+)\.(\d+)(?: \(build [0-9a-f]+\))?"), (1, 5, 5)),
)
_INT32_RANGE = (-(2**31), 2**31 - 1)
_INT64_RANGE = (-(2**63), 2**63 - 1)
NOT_IN_COLUMN = object()  # the literal cannot be a value of this column (e.g. out of the physical type's range)


class SplitBlockBloomFilter:
    """A Parquet split-block bloom filter: 32-byte blocks of eight 32-bit words."""

    def __init__(self, bitset: bytes) -> None:
        if not bitset or len(bitset) % _BYTES_PER_BLOCK:
            raise ValueError(f"bloom filter bitset of {len(bitset)} bytes is not a whole number of 32-byte blocks")
        self.words = np.frombuffer(bitset, dtype="<u4").reshape(-1, 8)

    @property
    def number_of_blocks(self) -> int:
        """How many 32-byte blocks the bitset holds."""
        return self.words.shape[0]

    def might_contain_hash(self, value_hash: int) -> bool:
        """False only when the value with this xxHash64 was certainly never inserted."""
        block, masks = _block_and_masks(value_hash, self.number_of_blocks)
        return bool(np.all(self.words[block] & masks))

    def might_contain(self, plain_encoded: bytes) -> bool:
        """False only when the value with this PLAIN encoding was certainly never inserted."""
        return self.might_contain_hash(xxhash.xxh64_intdigest(plain_encoded, seed=0))

    def might_contain_any_hash(self, hashes: np.ndarray) -> bool:
        """False only when no value with one of these xxHash64 values (uint64) was inserted; all probed at once."""
        if not len(hashes):
            return False
        blocks = ((hashes >> np.uint64(32)) * np.uint64(self.number_of_blocks)) >> np.uint64(32)
        keys = hashes & np.uint64(0xFFFFFFFF)
        bit_positions = ((keys[:, None] * _SALTS[None, :]) & np.uint64(0xFFFFFFFF)) >> np.uint64(27)
        masks = np.left_shift(np.uint32(1), bit_positions.astype(np.uint32))
        words = self.words[blocks.astype(np.int64)]
        return bool(np.any(np.all((words & masks) != 0, axis=1)))


class BlockReadingBloomFilter:
    """A split-block bloom filter read lazily: the header once, then only the 32-byte blocks probes land in.

    A lookup needs one block, so probing a few literals reads a few dozen bytes instead of the whole bitset (which is
    ~1 bit per row per 0.5% fpp: 128 KiB for 75k rows at fpp 0.01).
    """

    def __init__(self, stream: InputStream, bitset_offset: int, bitset_length: int, metrics: ScanMetrics) -> None:
        self.stream = stream
        self.bitset_offset = bitset_offset
        self.number_of_blocks = bitset_length // _BYTES_PER_BLOCK
        self.metrics = metrics
        self.blocks: dict[int, np.ndarray] = {}

    @property
    def bitset_range(self) -> tuple[int, int]:
        """(offset, length) of the bitset in the file."""
        return self.bitset_offset, self.number_of_blocks * _BYTES_PER_BLOCK

    def might_contain_hash(self, value_hash: int) -> bool:
        """False only when the value with this xxHash64 was certainly never inserted."""
        block, masks = _block_and_masks(value_hash, self.number_of_blocks)
        words = self.blocks.get(block)
        if words is None:
            self.stream.seek(self.bitset_offset + block * _BYTES_PER_BLOCK)
            words = np.frombuffer(self.stream.read(_BYTES_PER_BLOCK), dtype="<u4")
            self.metrics.bytes_read += _BYTES_PER_BLOCK
            self.blocks[block] = words
        return bool(np.all(words & masks))

    def might_contain(self, plain_encoded: bytes) -> bool:
        """False only when the value with this PLAIN encoding was certainly never inserted."""
        return self.might_contain_hash(xxhash.xxh64_intdigest(plain_encoded, seed=0))


def _block_and_masks(value_hash: int, number_of_blocks: int) -> tuple[int, np.ndarray]:
    """The block a hash selects and the eight word masks that must all be set in it (spec steps 3)."""
    block = ((value_hash >> 32) * number_of_blocks) >> 32
    key = np.uint64(value_hash & 0xFFFFFFFF)
    bit_positions = ((key * _SALTS) & np.uint64(0xFFFFFFFF)) >> np.uint64(27)
    return block, np.left_shift(np.uint32(1), bit_positions.astype(np.uint32))


def parse_bloom_filter(buffer: bytes, source: str) -> tuple[SplitBlockBloomFilter | None, int, int]:
    """Parse header and bitset at the start of ``buffer``: (filter, header length, bitset length); the filter is None
    when the header names a kind other than the spec's (it cannot be probed, module doc 3)."""
    reader = CompactReader(buffer, source=source)
    header = reader.read_struct()
    bitset_length = header.get(1)
    if not isinstance(bitset_length, int) or bitset_length <= 0:
        raise CorruptFileError(f"{source}: bloom filter header without a positive numBytes: {header}")
    start = reader.position
    bitset = bytes(buffer[start : start + bitset_length])
    if len(bitset) != bitset_length:
        raise CorruptFileError(f"{source}: bloom filter bitset has {len(bitset)} bytes, header says {bitset_length}")
    if not _is_split_block_xxhash_uncompressed(header):
        return None, start, bitset_length
    return SplitBlockBloomFilter(bitset), start, bitset_length


def _is_split_block_xxhash_uncompressed(header: dict[int, Any]) -> bool:
    """Does a parsed ``BloomFilterHeader`` name the one kind of filter the spec defines (each union's member 1)?"""
    return all(header.get(field_id) == {1: {}} for field_id in (2, 3, 4))


def read_bloom_filter(
    stream: InputStream, chunk: pq.ColumnChunkMetaData, source: str
) -> tuple[SplitBlockBloomFilter | None, int]:
    """The chunk's bloom filter (None when it has none) and the bytes read for it."""
    offset = chunk.bloom_filter_offset
    if offset is None or offset <= 0:
        return None, 0
    length = chunk.bloom_filter_length
    stream.seek(offset)
    if length is not None and length > 0:
        buffer = stream.read(length)
        return parse_bloom_filter(buffer, source)[0], len(buffer)
    head = stream.read(_HEADER_READ_SIZE)
    bitset_length = CompactReader(head, source=source).read_struct().get(1, 0)
    _, header_length, _ = parse_bloom_filter(head + b"\0" * max(bitset_length, 0), source)  # header length only
    stream.seek(offset)
    buffer = stream.read(header_length + bitset_length)
    return parse_bloom_filter(buffer, source)[0], len(buffer)


def bitset_range(chunk: pq.ColumnChunkMetaData) -> tuple[int, int] | None:
    """(offset, length) of the chunk's bitset, from its filter's offset and length alone; None when unknown.

    The header is ``_HEADER_BYTES_BESIDES_NUM_BYTES`` plus the varint of numBytes; a bitset is whole 32-byte blocks.
    A header of another length (a field the spec does not define) fits no solution, and the header is read instead.
    """
    offset, length = chunk.bloom_filter_offset, chunk.bloom_filter_length
    if not offset or offset <= 0 or not length or length <= 0:
        return None
    for varint_length in range(1, 6):
        bitset_length = length - _HEADER_BYTES_BESIDES_NUM_BYTES - varint_length
        if (
            bitset_length > 0
            and bitset_length % _BYTES_PER_BLOCK == 0
            and _varint_length(bitset_length) == varint_length
        ):
            return offset + length - bitset_length, bitset_length
    return None


def _varint_length(value: int) -> int:
    """Bytes of a Thrift compact i32 (zigzag varint) holding a non-negative ``value``."""
    zigzag, count = value << 1, 1
    while zigzag >= 0x80:
        zigzag >>= 7
        count += 1
    return count


def writes_standard_bloom_headers(created_by: str | None) -> bool:
    """Is the file's writer one whose every release up to a checked version writes only the spec's filter header
    (``_STANDARD_BLOOM_WRITERS``, module doc 3a)?"""
    for pattern, newest_checked in _STANDARD_BLOOM_WRITERS:
        match = pattern.fullmatch(created_by or "")
        if match is not None:
            return tuple(int(part) for part in match.groups()) <= newest_checked
    return False


def standard_bitset_range(chunk: pq.ColumnChunkMetaData, *, standard_writer: bool) -> tuple[int, int] | None:
    """(offset, length) of the chunk's bitset when its header is proven standard without reading it (module doc 3:
    ``standard_writer`` from ``writes_standard_bloom_headers``, and the recorded length fits that header); else None.
    """
    offset, length = chunk.bloom_filter_offset, chunk.bloom_filter_length
    if not standard_writer or not offset or offset <= 0 or not length or length <= _BYTES_PER_BLOCK:
        return None
    num_bytes = 1 << (length.bit_length() - 1)  # the largest power of two <= length
    if length - num_bytes != _HEADER_BYTES_BESIDES_NUM_BYTES + _varint_length(num_bytes):
        return None
    return offset + length - num_bytes, num_bytes


def probe_block_ranges(
    plan: AccessPlan, node: FilterNode, *, metadata: pq.FileMetaData, leaf_of_field: Callable[[int], LeafColumn | None]
) -> list[tuple[int, int]]:
    """The byte ranges the bloom probes of the scanned row groups will read, so they can be fetched together.

    One 32-byte block per ``=``/IN literal per row group, for chunks whose bitset place is known; plus, per column
    whose filters are not all proven standard without their header, the header of the filter
    ``header_check_row_groups`` picks (the one ``prune_by_bloom_filters`` checks), in one range with that filter's
    blocks when they lie within ``HEADER_FOLD_MAX_BYTES`` of it.
    """
    ranges: set[tuple[int, int]] = set()
    checked = header_check_row_groups(plan, node, metadata=metadata, leaf_of_field=leaf_of_field)
    for leaf_index, row_group, chunk, bitset_offset, blocks, proven in _probed_filters(
        plan, node, metadata, leaf_of_field
    ):
        if not proven and checked.get(leaf_index) == row_group:
            header = chunk.bloom_filter_offset
            span = max([bitset_offset, *(offset + _BYTES_PER_BLOCK for offset in blocks)]) - header
            if span <= HEADER_FOLD_MAX_BYTES:
                ranges.add((header, span))
                continue
            ranges.add((header, bitset_offset - header))
        ranges.update((offset, _BYTES_PER_BLOCK) for offset in blocks)
    return sorted(ranges)


def header_check_row_groups(
    plan: AccessPlan, node: FilterNode, *, metadata: pq.FileMetaData, leaf_of_field: Callable[[int], LeafColumn | None]
) -> dict[int, int]:
    """Per probed column (leaf index), the scanned row group whose filter header is checked: the one whose furthest
    probed block lies nearest its header, so that header and blocks come in one short range. Filters proven standard
    without their header (``standard_bitset_range``) are never chosen; a column with only those has none.
    """
    chosen: dict[int, tuple[int, int]] = {}
    for leaf_index, row_group, chunk, bitset_offset, blocks, proven in _probed_filters(
        plan, node, metadata, leaf_of_field
    ):
        if proven:
            continue
        span = max([bitset_offset, *blocks]) - chunk.bloom_filter_offset
        if leaf_index not in chosen or span < chosen[leaf_index][1]:
            chosen[leaf_index] = (row_group, span)
    return {leaf_index: row_group for leaf_index, (row_group, _) in chosen.items()}


def _probed_filters(
    plan: AccessPlan, node: FilterNode, metadata: pq.FileMetaData, leaf_of_field: Callable[[int], LeafColumn | None]
) -> Iterator[tuple[int, int, pq.ColumnChunkMetaData, int, list[int], bool]]:
    """Per block-probed column and scanned row group whose filter is placed by its metadata: (leaf index, row group,
    chunk, bitset offset, offsets of the blocks the column's exactly encodable literals land in, whether the filter
    is proven standard without its header)."""
    standard_writer = writes_standard_bloom_headers(metadata.created_by)
    for predicate in _bloom_leaves(node):
        leaf = leaf_of_field(predicate.field_id)
        if leaf is None or leaf.is_repeated:
            continue
        hashes = [
            xxhash.xxh64_intdigest(encoded, seed=0)
            for encoded in (plain_encoded_literal(value, leaf) for value in predicate.literals)
            if isinstance(encoded, bytes)
        ]
        for row_group in plan.scanned_row_groups():
            chunk = metadata.row_group(row_group).column(leaf.index)
            proven = standard_bitset_range(chunk, standard_writer=standard_writer)
            place = proven or bitset_range(chunk)
            if place is None:
                continue
            bitset_offset, bitset_length = place
            blocks = [
                bitset_offset + _block_and_masks(value_hash, bitset_length // _BYTES_PER_BLOCK)[0] * _BYTES_PER_BLOCK
                for value_hash in hashes
            ]
            yield leaf.index, row_group, chunk, bitset_offset, blocks, proven is not None


def bloom_bytes(plan: AccessPlan, node: FilterNode, *, metadata: pq.FileMetaData, leaf_indexes: set[int]) -> int:
    """Bytes of the bloom filters of ``leaf_indexes`` in the scanned row groups (0 without ``=``/IN leaves)."""
    if not any(True for _ in _bloom_leaves(node)):
        return 0
    return sum(
        metadata.row_group(row_group).column(index).bloom_filter_length or 0
        for row_group in plan.scanned_row_groups()
        for index in leaf_indexes
    )


def _bloom_leaves(node: FilterNode) -> Iterator[ColumnPredicate]:
    """The ``=``/IN leaves of the tree that probes read single blocks for."""
    if isinstance(node, ColumnPredicate):
        if node.operation in ("eq", "in") and len(node.literals) <= _BLOCK_READ_MAX_LITERALS:
            yield node
    elif isinstance(node, (AllOf, AnyOf)):
        for child in node.children:
            yield from _bloom_leaves(child)


def open_bloom_filter(
    stream: InputStream, chunk: pq.ColumnChunkMetaData, source: str, metrics: ScanMetrics, *, check_header: bool = True
) -> BlockReadingBloomFilter | None:
    """The chunk's bloom filter, ready to read single blocks (None when the chunk has none, or one of another kind).

    Without ``check_header``, a chunk whose bitset place follows from its metadata (``bitset_range``) reads nothing
    here; otherwise its header is read and checked.
    """
    offset = chunk.bloom_filter_offset
    if offset is None or offset <= 0:
        return None
    place = bitset_range(chunk)
    if not check_header and place is not None:
        return BlockReadingBloomFilter(stream, place[0], place[1], metrics)
    if place is not None:  # read the header alone; a header that is not what the metadata implies is read again
        try:
            return _read_header(stream, offset, place[0] - offset, source, metrics)
        except CorruptFileError:
            pass
    return _read_header(stream, offset, _HEADER_READ_SIZE, source, metrics)


def _read_header(
    stream: InputStream, offset: int, size: int, source: str, metrics: ScanMetrics
) -> BlockReadingBloomFilter | None:
    """Read and check the header at ``offset`` from its first ``size`` bytes; None for a filter of another kind."""
    stream.seek(offset)
    head = stream.read(size)
    metrics.bytes_read += len(head)
    reader = CompactReader(head, source=source)
    header = reader.read_struct()
    bitset_length = header.get(1)
    if not isinstance(bitset_length, int) or bitset_length <= 0 or bitset_length % _BYTES_PER_BLOCK:
        raise CorruptFileError(f"{source}: bloom filter header without a valid numBytes: {header}")
    if not _is_split_block_xxhash_uncompressed(header):
        return None
    return BlockReadingBloomFilter(stream, offset + reader.position, bitset_length, metrics)


def plain_encoded_literal(value: Any, leaf: LeafColumn) -> bytes | object | None:
    """The PLAIN bytes the file would hash for ``value``; ``NOT_IN_COLUMN`` if impossible; None if unsupported."""
    physical, logical = leaf.physical_type, leaf.logical_type
    if leaf.is_unsigned:
        return None
    if logical == "DECIMAL":
        unscaled = _unscaled_decimal(value, leaf.scale)
        if unscaled is None:
            return NOT_IN_COLUMN
        if physical == "INT32":
            return _pack_int(unscaled, "<i", _INT32_RANGE)
        if physical == "INT64":
            return _pack_int(unscaled, "<q", _INT64_RANGE)
        if physical == "FIXED_LEN_BYTE_ARRAY":
            try:
                return unscaled.to_bytes(leaf.type_length, "big", signed=True)
            except OverflowError:
                return NOT_IN_COLUMN
        return None  # BYTE_ARRAY decimals: writers may use any length
    if logical in ("TIME", "TIMESTAMP"):
        if leaf.time_unit == "milliseconds":
            if value % 1000:
                return NOT_IN_COLUMN
            value //= 1000
        elif leaf.time_unit == "nanoseconds":
            value *= 1000
        elif leaf.time_unit != "microseconds":
            return None
    if physical == "INT32" and isinstance(value, int) and not isinstance(value, bool):
        return _pack_int(value, "<i", _INT32_RANGE)
    if physical == "INT64" and isinstance(value, int) and not isinstance(value, bool):
        return _pack_int(value, "<q", _INT64_RANGE)
    if physical == "BYTE_ARRAY":
        if isinstance(value, str):
            return value.encode("utf-8")
        return bytes(value) if isinstance(value, (bytes, bytearray)) else None
    if physical == "FIXED_LEN_BYTE_ARRAY":
        encoded = value.bytes if hasattr(value, "bytes") else value
        if not isinstance(encoded, (bytes, bytearray)):
            return None
        return bytes(encoded) if len(encoded) == leaf.type_length else NOT_IN_COLUMN
    return None  # BOOLEAN, FLOAT, DOUBLE (signed zeros), INT96


def _pack_int(value: int, fmt: str, value_range: tuple[int, int]) -> bytes | object:
    if not value_range[0] <= value <= value_range[1]:
        return NOT_IN_COLUMN
    return struct.pack(fmt, value)


def _unscaled_decimal(value: Any, scale: int) -> int | None:
    scaled = Decimal(value).scaleb(scale)
    if scaled != scaled.to_integral_value():
        return None
    return int(scaled)


def literal_might_be_present(
    bloom_filter: SplitBlockBloomFilter | BlockReadingBloomFilter, value: Any, leaf: LeafColumn
) -> bool:
    """False only when ``value`` certainly is not in the column chunk the filter describes."""
    encoded = plain_encoded_literal(value, leaf)
    if encoded is NOT_IN_COLUMN:
        return False
    if encoded is None:
        return True
    return bloom_filter.might_contain(encoded)  # type: ignore[arg-type]


class _RowGroupBloomProbe:
    """Answers "might match" for the leaves of one row group, reading each column's filter at most once."""

    def __init__(
        self,
        stream: InputStream,
        row_group: pq.RowGroupMetaData,
        leaf_of_field: Callable[[int], LeafColumn | None],
        source: str,
        metrics: ScanMetrics,
        *,
        headers_checked: set[int],
        standard_writer: bool,
    ) -> None:
        self.stream = stream
        self.row_group = row_group
        self.leaf_of_field = leaf_of_field
        self.source = source
        self.metrics = metrics
        self.headers_checked = headers_checked
        self.standard_writer = standard_writer
        self.filters: dict[int, SplitBlockBloomFilter | BlockReadingBloomFilter | None] = {}

    def might_match(self, predicate: ColumnPredicate) -> bool:
        """False only for ``=``/IN leaves whose literals are all certainly absent from the row group."""
        if predicate.operation not in ("eq", "in"):
            return True
        leaf = self.leaf_of_field(predicate.field_id)
        if leaf is None or leaf.is_repeated:
            return True
        if leaf.index not in self.filters:
            chunk = self.row_group.column(leaf.index)
            proven = standard_bitset_range(chunk, standard_writer=self.standard_writer)
            if len(predicate.literals) <= _BLOCK_READ_MAX_LITERALS and proven is not None:
                self.filters[leaf.index] = BlockReadingBloomFilter(self.stream, *proven, self.metrics)
            elif len(predicate.literals) <= _BLOCK_READ_MAX_LITERALS:
                check_header = leaf.index not in self.headers_checked
                opened = open_bloom_filter(self.stream, chunk, self.source, self.metrics, check_header=check_header)
                if check_header and opened is not None and bitset_range(chunk) == opened.bitset_range:
                    self.headers_checked.add(leaf.index)  # the header agrees with the metadata's placement
                self.filters[leaf.index] = opened
            else:  # many literals touch many blocks: one read of the whole bitset is cheaper
                whole_filter, bytes_read = read_bloom_filter(self.stream, chunk, self.source)
                self.metrics.bytes_read += bytes_read
                self.filters[leaf.index] = whole_filter
        bloom_filter = self.filters[leaf.index]
        if bloom_filter is None:
            return True
        return any(literal_might_be_present(bloom_filter, value, leaf) for value in predicate.literals)


def prune_by_bloom_filters(
    plan: AccessPlan,
    node: FilterNode,
    *,
    metadata: pq.FileMetaData,
    leaf_of_field: Callable[[int], LeafColumn | None],
    stream: InputStream,
    source: str,
    metrics: ScanMetrics,
) -> None:
    """Skip scanned row groups where some ``=``/IN literal set is certainly absent and the tree needs it.

    A filter proven standard without its header (``standard_bitset_range``) reads only the blocks probed. Per column
    with other filters, one filter has its header read first (``header_check_row_groups``); when it agrees with the
    placement its chunk's metadata implies (``bitset_range``), the column's other filters in the file (one writer
    wrote them all) are placed by their metadata alone, else each header is read.
    """
    standard_writer = writes_standard_bloom_headers(metadata.created_by)
    headers_checked: set[int] = set()
    for leaf_index, row_group in header_check_row_groups(
        plan, node, metadata=metadata, leaf_of_field=leaf_of_field
    ).items():
        chunk = metadata.row_group(row_group).column(leaf_index)
        checked = open_bloom_filter(stream, chunk, source, metrics, check_header=True)
        if checked is not None and bitset_range(chunk) == checked.bitset_range:
            headers_checked.add(leaf_index)
    for row_group in list(plan.scanned_row_groups()):
        probe = _RowGroupBloomProbe(
            stream,
            metadata.row_group(row_group),
            leaf_of_field,
            source,
            metrics,
            headers_checked=headers_checked,
            standard_writer=standard_writer,
        )
        if not might_match_tree(node, probe.might_match):
            plan.skip(row_group)
            metrics.row_groups_pruned_by_bloom_filter += 1
