"""Read a Parquet footer with one ranged read (a metadata size hint) and keep parsed footers in a process-wide LRU.

An executor opens the same files again and again (splits of one file, repeated scans), and object stores charge a
round trip per read, so the footer is fetched once and reused:

1. Look up ``(path, file size)`` in the cache; a hit returns the parsed footer without any I/O.
2. On a miss, read the last ``metadata_size_hint`` bytes (64 KiB by default) in one go; check the trailing
   ``PAR1`` magic and the 4-byte little-endian footer length before it.
3. When the footer is longer than what was read, read only the missing head of it.
4. Parse the Thrift ``FileMetaData`` with pyarrow (from the tail buffer alone) and keep the raw footer bytes, which
   the page index stage decodes for the offsets pyarrow does not expose, and the whole tail that was read: bloom
   filters and page indexes are written just before the footer, so on an object store their reads are often
   served from it (``TailedStream``) instead of costing a request each. ``extend_tail`` reads the rest of such an
   index region in one request when it begins before the tail; ``TailedStream.fetch_ranges`` reads scattered small
   ranges (single bloom filter blocks) concurrently, one request each, and serves later reads of them from memory.
5. Insert into the cache, evicting least recently used entries while over the entry or byte budget.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io import FileIO, InputStream

from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.thread_pools import process_thread_pool

if TYPE_CHECKING:  # the dataset module is imported where a fragment is made (``sized_fragment``)
    import pyarrow.dataset as ds

PARQUET_MAGIC = b"PAR1"
DEFAULT_METADATA_SIZE_HINT = 64 * 1024
TRAILER_SIZE = 8  # 4-byte footer length + magic
# Scattered small ranges of one file are read this many at a time: each is a round trip on an object store.
RANGE_READ_THREADS = 8

# A stream's ranged read: ``read_at(length, offset)`` -> the bytes there (pyarrow's ``NativeFile.read_at``).
RangeReader = Callable[[int, int], bytes]


@dataclass
class ParquetFooter:
    """A parsed footer: pyarrow's metadata, the raw Thrift bytes, and values later stages derive from them once."""

    path: str
    file_size: int
    metadata: pq.FileMetaData
    footer_bytes: bytes  # the Thrift-encoded FileMetaData, without length and magic
    # Values derived lazily from the footer (page index locations, file schema), cached with it.
    derived: dict[Hashable, Any] = field(default_factory=dict)
    # The file's last bytes as read from storage: (offset of the first one, the bytes up to the end of the file).
    tail: tuple[int, bytes] = (0, b"")
    # The sized dataset fragment (``sized_fragment``) whose read gave this footer, when Arrow read it: later reads
    # of the file decode through it without opening the file by path.
    fragment: ds.Fragment | None = None

    @property
    def size_in_bytes(self) -> int:
        """Bytes this footer costs the cache (raw bytes; the parsed form is of the same order; the tail kept)."""
        return len(self.footer_bytes) * 2 + len(self.tail[1])


class FooterCache:
    """A thread-safe LRU of parsed footers keyed by (path, file size), bounded by entries and by bytes."""

    def __init__(self, max_entries: int = 512, max_bytes: int = 128 * 1024 * 1024) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, int], ParquetFooter] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, path: str, file_size: int) -> ParquetFooter | None:
        """The cached footer of this file version, marking it recently used; None on a miss."""
        with self._lock:
            footer = self._entries.get((path, file_size))
            if footer is not None:
                self._entries.move_to_end((path, file_size))
            return footer

    def put(self, footer: ParquetFooter) -> None:
        """Insert a footer, evicting the least recently used ones while over budget."""
        key = (footer.path, footer.file_size)
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._bytes -= previous.size_in_bytes
            self._entries[key] = footer
            self._bytes += footer.size_in_bytes
            while len(self._entries) > 1 and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size_in_bytes

    def clear(self) -> None:
        """Drop every entry (tests, or memory pressure)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)


FOOTER_CACHE = FooterCache()


def read_footer(
    stream: InputStream, path: str, file_size: int, metadata_size_hint: int = DEFAULT_METADATA_SIZE_HINT
) -> tuple[ParquetFooter, int]:
    """Read and parse the footer of an open file; return it with the number of bytes read from storage."""
    if file_size < len(PARQUET_MAGIC) + TRAILER_SIZE:
        raise CorruptFileError(f"{path}: {file_size} bytes is too small for a Parquet file")
    tail_size = min(max(metadata_size_hint, TRAILER_SIZE), file_size)
    tail = _read_range(stream, file_size - tail_size, tail_size, path)
    if tail[-4:] != PARQUET_MAGIC:
        raise CorruptFileError(f"{path}: expected Parquet magic PAR1 at the end, found {tail[-4:]!r}")
    footer_length = int.from_bytes(tail[-8:-4], "little")
    needed = footer_length + TRAILER_SIZE
    if needed + len(PARQUET_MAGIC) > file_size:
        raise CorruptFileError(f"{path}: footer length {footer_length} exceeds the file size {file_size}")
    bytes_read = tail_size
    if needed > tail_size:
        head = _read_range(stream, file_size - needed, needed - tail_size, path)
        bytes_read += len(head)
        tail = head + tail
    footer_with_trailer = tail[len(tail) - needed :]
    try:
        metadata = pq.read_metadata(pa.BufferReader(footer_with_trailer))
    except (OSError, pa.ArrowException) as error:
        raise CorruptFileError(f"{path}: cannot parse the Parquet footer: {error}") from error
    footer = ParquetFooter(path, file_size, metadata, footer_with_trailer[:-TRAILER_SIZE])
    footer.tail = (file_size - len(tail), tail)
    return footer, bytes_read


def cached_footer(
    stream: InputStream,
    path: str,
    file_size: int,
    *,
    cache: FooterCache = FOOTER_CACHE,
    metadata_size_hint: int = DEFAULT_METADATA_SIZE_HINT,
) -> tuple[ParquetFooter, bool, int]:
    """The footer of ``path`` from the cache or from storage: (footer, was_cache_hit, bytes_read)."""
    footer = cache.get(path, file_size)
    if footer is not None:
        return footer, True, 0
    footer, bytes_read = read_footer(stream, path, file_size, metadata_size_hint)
    cache.put(footer)
    return footer, False, bytes_read


def extend_tail(stream: InputStream, footer: ParquetFooter, start: int) -> int:
    """Read ``[start, tail start)`` in one request and keep it in the footer's tail; returns the bytes read."""
    tail_start, tail = footer.tail
    if start >= tail_start:
        return 0
    head = _read_range(stream, start, tail_start - start, footer.path)
    footer.tail = (start, head + tail)  # one assignment: readers on other threads see the old or the new tail
    return len(head)


class TailedStream:
    """``seek``/``read`` over a file whose last bytes are in a footer's tail: reads inside it make no request.

    ``bytes_from_tail`` counts what was served from memory, so callers can count storage bytes exactly. The file is
    opened (``open_stream``) only when a read is not served from memory: opening costs an object store a request.
    """

    def __init__(self, open_stream: Callable[[], InputStream], footer: ParquetFooter) -> None:
        self._open_stream = open_stream
        self._footer = footer
        self._position = 0
        self.bytes_from_tail = 0
        self._ranges: dict[int, bytes] = {}  # fetched ranges by offset

    def seek(self, offset: int, whence: int = 0) -> int:
        """Move to ``offset`` (only absolute positions are used by the index readers)."""
        if whence != 0:
            raise ValueError("TailedStream supports absolute seeks only")
        self._position = offset
        return offset

    def tell(self) -> int:
        """The current position."""
        return self._position

    def read(self, size: int = -1) -> bytes:
        """``size`` bytes from the current position, from the tail when it holds them all."""
        tail_start, tail = self._footer.tail
        end = self._footer.file_size if size < 0 else self._position + size
        fetched = self._fetched_range_holding(self._position, end)
        if tail_start <= self._position and end <= tail_start + len(tail):
            data = tail[self._position - tail_start : end - tail_start]
            self.bytes_from_tail += len(data)
        elif fetched is not None:
            start, held = fetched
            data = held[self._position - start : end - start]
            self.bytes_from_tail += len(data)
        else:
            stream = self._open_stream()
            stream.seek(self._position)
            data = stream.read(size) if size >= 0 else stream.read()
        self._position += len(data)
        return bytes(data)

    def _fetched_range_holding(self, start: int, end: int) -> tuple[int, bytes] | None:
        """A fetched range (offset, bytes) holding all of ``[start, end)``, if any (a few ranges per file)."""
        for offset, data in self._ranges.items():
            if offset <= start and end <= offset + len(data):
                return offset, data
        return None

    def fetch_ranges(self, ranges: list[tuple[int, int]]) -> int:
        """Read ``(offset, length)`` ranges not in the tail, concurrently when the file allows it; returns the bytes
        read. Later ``read`` calls inside one of those ranges are served from memory (``bytes_from_tail``).
        """
        tail_start = self._footer.tail[0]
        wanted = [(offset, length) for offset, length in ranges if offset < tail_start and offset not in self._ranges]
        if not wanted:
            return 0
        stream = self._open_stream()
        read_at = getattr(stream, "read_at", None)
        if read_at is None or len(wanted) == 1:  # Python file objects: one position, so one range at a time
            results = [_read_range(stream, offset, length, self._footer.path) for offset, length in wanted]
        else:
            path = self._footer.path
            results = list(_range_read_pool().map(lambda r: _read_at(read_at, r[0], r[1], path), wanted))
        for (offset, _), data in zip(wanted, results, strict=True):
            self._ranges[offset] = data
        return sum(len(data) for data in results)


def _range_read_pool() -> ThreadPoolExecutor:
    """The process's range-reading threads (one round trip each on an object store)."""
    return process_thread_pool("parquet-range-read", RANGE_READ_THREADS)


def _read_at(read_at: RangeReader, offset: int, length: int, path: str) -> bytes:
    data = read_at(length, offset)
    if len(data) != length:
        raise CorruptFileError(f"{path}: expected {length} bytes at offset {offset}, got {len(data)}")
    return bytes(data)


def open_input(io: FileIO, path: str) -> InputStream:
    """Open a data file for random access through the table's FileIO."""
    return io.new_input(path).open(seekable=True)


def _read_range(stream: InputStream, offset: int, length: int, path: str) -> bytes:
    stream.seek(offset)
    data = stream.read(length)
    if len(data) != length:
        raise CorruptFileError(f"{path}: expected {length} bytes at offset {offset}, got {len(data)}")
    return bytes(data)
