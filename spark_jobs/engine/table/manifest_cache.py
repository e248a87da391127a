"""Manifest lists and live manifest entries, read once per process.

Manifest lists and manifests are immutable, and one process often plans many scans over the same ones (a session
reading a table several times, sensors polling it, time travel), so what was read from each is kept in bounded
caches (``bounded_cache``). Cached entries are shared between scans: callers must not modify them.

Two forms of a manifest's entries are kept, each with its own bound:

1. As Arrow columns (``manifest_columns``), what planning reads: counted by their Arrow bytes (about 430 bytes a
   data file of a three-column table), bounded by ``ICEBERG_MANIFEST_COLUMNS_CACHE_MAX_BYTES`` (256 MiB), so a
   table of about 5 x 10^5 files is planned again from memory. Manifests not cached are decoded on a thread pool
   (DuckDB's decoding releases the GIL) a few at a time, in order, so a plan holds at most a window of decoded
   manifests besides the cache. A plan whose manifests would not fit the bound together caches none of them
   (extrapolated from the first one decoded): they would only evict each other.
2. As pyiceberg objects (``cached_live_entries``), what commits rewrite: bounded by
   ``ICEBERG_MANIFEST_CACHE_MAX_BYTES`` (64 MiB, counted as ten times the file's size).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future

from pyiceberg.io import FileIO
from pyiceberg.manifest import ManifestEntry, ManifestFile
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.types import StructType
from pyiceberg.utils.concurrent import ExecutorFactory

from spark_jobs.engine.shared.bounded_cache import BoundedCache, max_bytes_from_environment
from spark_jobs.engine.shared.thread_pools import process_thread_pool
from spark_jobs.engine.table.manifest_columns import ManifestColumns, decode_manifest, use_duckdb_for
from spark_jobs.engine.table.manifest_entries import manifest_first_row_id, read_live_entries, read_manifest_list

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_BYTES_ENV_VAR = "ICEBERG_MANIFEST_CACHE_MAX_BYTES"
# Python objects decoded from an Avro manifest take about this many times its file size (measured on manifests with
# column statistics; an estimate is enough to bound the cache).
DECODED_BYTES_PER_FILE_BYTE = 10
MANIFEST_LIST_ENTRY_BYTES = 2048  # a ManifestFile object with its partition summaries, roughly

_PROCESS_CACHE = BoundedCache(max_bytes_from_environment(MAX_BYTES_ENV_VAR, DEFAULT_MAX_BYTES))

DEFAULT_COLUMNS_MAX_BYTES = 256 * 1024 * 1024
COLUMNS_MAX_BYTES_ENV_VAR = "ICEBERG_MANIFEST_COLUMNS_CACHE_MAX_BYTES"
_COLUMNS_CACHE = BoundedCache(max_bytes_from_environment(COLUMNS_MAX_BYTES_ENV_VAR, DEFAULT_COLUMNS_MAX_BYTES))
DECODE_THREADS = max(2, min(8, os.cpu_count() or 2))


def manifest_columns_cache() -> BoundedCache:
    """The cache of manifests as columns shared by every plan of this process."""
    return _COLUMNS_CACHE


def manifest_columns(
    manifests: Sequence[ManifestFile], io: FileIO, partition_type_of: Callable[[int], StructType]
) -> Iterator[ManifestColumns]:
    """Each manifest's live entries as columns, in order; cached ones at once, others decoded ahead on threads.

    ``partition_type_of`` gives the partition type of a spec id. DuckDB decodes when the manifests not cached yet
    are large enough to pay for it (``manifest_columns.use_duckdb_for``).
    """
    missing = [m for m in manifests if _entries_key(m) not in _COLUMNS_CACHE]
    use_duckdb = use_duckdb_for(missing)
    admission = _Admission(sum(m.manifest_length for m in missing), _COLUMNS_CACHE.max_bytes)

    def load(manifest: ManifestFile) -> ManifestColumns:
        key = _entries_key(manifest)
        cached = _COLUMNS_CACHE.get(key)
        if cached is not None:
            return cached
        decoded = decode_manifest(manifest, io, partition_type_of(manifest.partition_spec_id), use_duckdb=use_duckdb)
        admission.learn(decoded.nbytes, manifest.manifest_length)
        if admission.admits:  # decided by the first manifest decoded, whichever thread finished it
            _COLUMNS_CACHE.put(key, decoded, decoded.nbytes)
        return decoded

    if len(missing) <= 1:
        for manifest in manifests:
            yield load(manifest)
        return
    pool = process_thread_pool("manifest-decode", DECODE_THREADS)
    window: deque[Future[ManifestColumns]] = deque()
    pending = iter(manifests)
    for manifest in pending:
        window.append(pool.submit(load, manifest))
        if len(window) >= DECODE_THREADS:
            break
    while window:
        decoded = window.popleft().result()
        following = next(pending, None)
        if following is not None:
            window.append(pool.submit(load, following))
        yield decoded


class _Admission:
    """Whether one plan's manifests are worth caching: not when they cannot all stay (each would evict another
    before the next plan asks for it, and the plan would hold the cache's bound on top of what it decodes).

    The decoded size is extrapolated from the first manifest decoded (its columns' bytes per byte of Avro file)."""

    def __init__(self, missing_file_bytes: int, max_bytes: int) -> None:
        self.missing_file_bytes = missing_file_bytes
        self.max_bytes = max_bytes
        self.admits = True
        self.decided = missing_file_bytes == 0

    def learn(self, decoded_bytes: int, file_bytes: int) -> None:
        """Decide from the first decoded manifest (later ones do not change the decision)."""
        if file_bytes > 0 and not self.decided:
            self.admits = decoded_bytes / file_bytes * self.missing_file_bytes <= self.max_bytes
            self.decided = True


def manifest_cache() -> BoundedCache:
    """The manifest cache shared by every scan planned in this process."""
    return _PROCESS_CACHE


def cached_manifests(snapshot: Snapshot, io: FileIO) -> tuple[ManifestFile, ...]:
    """The manifests listed by the snapshot's manifest list."""
    if snapshot.manifest_list is None:
        return tuple(read_manifest_list(snapshot, io))  # v1 snapshots may list manifests inline

    def load() -> tuple[tuple[ManifestFile, ...], int]:
        manifests = tuple(read_manifest_list(snapshot, io))
        return manifests, MANIFEST_LIST_ENTRY_BYTES * max(1, len(manifests))

    return _PROCESS_CACHE.get_or_load(("manifest-list", snapshot.manifest_list), load)


def cached_live_entries(manifests: Sequence[ManifestFile], io: FileIO) -> list[tuple[ManifestEntry, ...]]:
    """Each manifest's live entries (``manifest_entries.read_live_entries``), shared by every scan that reads it.

    Manifests not cached yet are read on pyiceberg's shared thread pool when there are several.
    """
    missing = [index for index, manifest in enumerate(manifests) if _entries_key(manifest) not in _PROCESS_CACHE]
    read_ahead: dict[int, tuple[ManifestEntry, ...]] = {}
    if len(missing) > 1:
        # Kept from the parallel read, not looked up again: a bound too small to hold them must not mean two reads.
        executor = ExecutorFactory.get_or_create()
        read = executor.map(lambda index: _live_entries(manifests[index], io), missing)
        read_ahead = dict(zip(missing, read, strict=True))
    return [
        read_ahead[index] if index in read_ahead else _live_entries(manifest, io)
        for index, manifest in enumerate(manifests)
    ]


def _live_entries(manifest: ManifestFile, io: FileIO) -> tuple[ManifestEntry, ...]:
    def load() -> tuple[tuple[ManifestEntry, ...], int]:
        return tuple(read_live_entries(manifest, io)), manifest.manifest_length * DECODED_BYTES_PER_FILE_BYTE

    return _PROCESS_CACHE.get_or_load(_entries_key(manifest), load)


def _entries_key(manifest: ManifestFile) -> tuple[object, ...]:
    """The path, and what entries inherit from the manifest list (a manifest listed differently is not stale)."""
    return (
        "manifest",
        manifest.manifest_path,
        manifest.manifest_length,
        manifest.sequence_number,
        manifest.added_snapshot_id,
        manifest.partition_spec_id,
        manifest_first_row_id(manifest),
    )
