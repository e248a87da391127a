"""Read the footers of the data files a read opens next on I/O threads, all at once, instead of one per file opened.

A cold read of many files on an object store pays a round trip per footer before each file can decode, and a read
opening a few files at a time pays them a few at a time, with the cores idle while the first ones come back. The
footers' places are known from the manifests (the recorded file size), so:

1. ``footers_read_ahead(io, files)`` starts, for each file whose footer the process cache does not hold and that
   lies on an object store, Arrow's footer read through a fragment sized by the manifest (``sized_fragment``: one
   ranged GET, no HEAD) on a process-wide pool of ``FOOTER_READ_AHEAD_THREADS``, in the order given, for at most
   ``FOOTER_READ_AHEAD_FILES`` files.
2. ``take_footer_read_ahead(path, size)`` hands a reader the pending read of its file (once): the reader waits for
   it and counts its bytes as its own footer read, so counters read the same as without reading ahead. A failed
   read raises in the reader, as its own read would have.
3. When the read ends, reads nobody took are dropped (cancelled when not started).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager

import pyarrow.dataset as ds
from pyiceberg.io import FileIO

from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE, FooterCache, ParquetFooter
from spark_jobs.engine.parquet.sized_fragment import read_fragment_footer, sized_fragment
from spark_jobs.engine.shared.thread_pools import process_thread_pool

# Footer reads in flight at once: each is one small ranged GET, so the threads mostly wait.
FOOTER_READ_AHEAD_THREADS = 8
# Files of one read whose footers are read ahead (the first ones it opens): bounds the footers held before use.
FOOTER_READ_AHEAD_FILES = 64

_PENDING: dict[tuple[str, int], Future[tuple[ParquetFooter, int]]] = {}
_LOCK = threading.Lock()


def fragment_footer(fragment: ds.ParquetFileFragment, path: str, size: int) -> tuple[ParquetFooter, int]:
    """The footer of ``path`` read by Arrow through its sized ``fragment`` (kept with it), and the bytes read."""
    metadata, footer_bytes, bytes_read = read_fragment_footer(fragment, path, size)
    return ParquetFooter(path, size, metadata, footer_bytes, tail=(size, b""), fragment=fragment), bytes_read


@contextmanager
def footers_read_ahead(
    io: FileIO, files: Iterable[tuple[str, int]], *, cache: FooterCache = FOOTER_CACHE
) -> Iterator[None]:
    """Within the block, the footers of ``files`` ((path, recorded size), in the order they will be opened) are read
    ahead, as the module doc says."""
    registered: list[tuple[tuple[str, int], Future[tuple[ParquetFooter, int]]]] = []
    pool = process_thread_pool("footer-read-ahead", FOOTER_READ_AHEAD_THREADS)
    for path, size in dict.fromkeys(files):
        if len(registered) >= FOOTER_READ_AHEAD_FILES:
            break
        if cache.get(path, size) is not None:
            continue
        fragment = sized_fragment(io, path, size)  # None for a local file or a FileIO without Arrow file system
        if fragment is None:
            continue
        key = (path, size)
        with _LOCK:
            if key in _PENDING:  # another read of this process reads it already
                continue
            future: Future[tuple[ParquetFooter, int]] = pool.submit(fragment_footer, fragment, path, size)
            _PENDING[key] = future
        registered.append((key, future))
    try:
        yield
    finally:
        with _LOCK:
            for key, future in registered:
                if _PENDING.get(key) is future:
                    del _PENDING[key]
                    future.cancel()


def take_footer_read_ahead(path: str, size: int) -> Future[tuple[ParquetFooter, int]] | None:
    """The pending read-ahead of this file version's footer, now the caller's to wait for; None when there is none."""
    with _LOCK:
        return _PENDING.pop((path, size), None)
