"""Footer reads with a metadata size hint, and the LRU footer cache."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.engine.parquet.footer_cache import FooterCache, ParquetFooter, cached_footer, read_footer
from spark_jobs.engine.shared.errors import CorruptFileError


class _CountingFile:
    """A file wrapper that records every read, to check how many round trips a footer costs."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")
        self.reads: list[int] = []

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def read(self, size: int = -1) -> bytes:
        data = self._file.read(size)
        self.reads.append(len(data))
        return data

    def close(self) -> None:
        self._file.close()


def _wide_file(tmp_path: Path, columns: int) -> Path:
    path = tmp_path / f"wide{columns}.parquet"
    pq.write_table(pa.table({f"column_{i}": [i] for i in range(columns)}), path)
    return path


def test_small_footer_takes_one_read(tmp_path: Path) -> None:
    path = _wide_file(tmp_path, 3)
    stream = _CountingFile(path)
    footer, bytes_read = read_footer(stream, str(path), path.stat().st_size)
    assert len(stream.reads) == 1
    assert bytes_read == min(64 * 1024, path.stat().st_size)
    assert footer.metadata.num_columns == 3


def test_footer_larger_than_the_hint_takes_a_second_read(tmp_path: Path) -> None:
    path = _wide_file(tmp_path, 200)
    stream = _CountingFile(path)
    footer, _ = read_footer(stream, str(path), path.stat().st_size, metadata_size_hint=1024)
    assert len(stream.reads) == 2
    assert footer.metadata.num_columns == 200
    assert footer.metadata.equals(pq.read_metadata(path))


def test_bad_magic_is_a_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "not.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 100)
    stream = _CountingFile(path)
    with pytest.raises(CorruptFileError, match=r"not\.parquet"):
        read_footer(stream, str(path), path.stat().st_size)


def test_cache_hits_skip_io_and_key_on_file_size(tmp_path: Path) -> None:
    path = _wide_file(tmp_path, 2)
    cache = FooterCache()
    stream = _CountingFile(path)
    _, hit, _ = cached_footer(stream, str(path), path.stat().st_size, cache=cache)
    _, second_hit, bytes_read = cached_footer(stream, str(path), path.stat().st_size, cache=cache)
    assert (hit, second_hit, bytes_read) == (False, True, 0)
    assert len(stream.reads) == 1
    rewritten = _wide_file(tmp_path, 5)
    rewritten.replace(path)
    _, hit_after_rewrite, _ = cached_footer(_CountingFile(path), str(path), path.stat().st_size, cache=cache)
    assert not hit_after_rewrite


def test_cache_evicts_least_recently_used() -> None:
    metadata = pq.read_metadata(pa.BufferReader(_buffer_of(pa.table({"a": [1]}))))
    cache = FooterCache(max_entries=2)
    for name in ("a", "b"):
        cache.put(ParquetFooter(name, 1, metadata, b"x"))
    assert cache.get("a", 1) is not None  # "a" is now the most recently used
    cache.put(ParquetFooter("c", 1, metadata, b"x"))
    assert cache.get("b", 1) is None
    assert cache.get("a", 1) is not None
    assert len(cache) == 2


def _buffer_of(table: pa.Table) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue()
