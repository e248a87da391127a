"""Which files a table's metadata references, read from its snapshots' manifest lists and manifests.

Manifests are decoded as columns on threads (``manifest_columns.decode_manifest``, DuckDB's avro extension for
large ones), keeping only each entry's location and content: no Python object per entry.

Locations are compared in one normal form (``normalize_location``), because writers spell the same file
differently: Iceberg Java writes ``file:/tmp/t/x``, pyiceberg ``file:///tmp/t/x``, a listing gives ``/tmp/t/x``;
``s3a://`` and ``s3n://`` name the same objects as ``s3://`` (as Java's orphan-file action treats them).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from urllib.parse import urlparse

from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFileContent, ManifestFile
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.types import StructType
from pyiceberg.utils.concurrent import ExecutorFactory

from spark_jobs.engine.shared.thread_pools import process_thread_pool
from spark_jobs.engine.table.manifest_cache import DECODE_THREADS
from spark_jobs.engine.table.manifest_columns import decode_manifest, use_duckdb_for
from spark_jobs.engine.table.manifest_entries import read_manifest_list

_NO_PARTITION = StructType()  # locations and contents only: the partition is not decoded

_SAME_STORE_SCHEMES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}


def normalize_location(location: str) -> str:
    """One spelling per file: local paths without scheme, ``scheme://authority/path`` otherwise."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return os.path.normpath(parsed.path if parsed.scheme else location)
    scheme = _SAME_STORE_SCHEMES.get(parsed.scheme, parsed.scheme)
    return f"{scheme}://{parsed.netloc}{parsed.path}"


def manifests_of(snapshots: Iterable[Snapshot], io: FileIO) -> dict[str, ManifestFile]:
    """Every manifest the snapshots' manifest lists name, by location (lists read in parallel)."""
    snapshot_list = list(snapshots)
    executor = ExecutorFactory.get_or_create()
    manifests: dict[str, ManifestFile] = {}
    for listed in executor.map(lambda snapshot: read_manifest_list(snapshot, io), snapshot_list):
        for manifest in listed:
            manifests.setdefault(manifest.manifest_path, manifest)
    return manifests


def live_content_files(manifests: Iterable[ManifestFile], io: FileIO) -> dict[str, DataFileContent]:
    """Location -> content (data, position or equality deletes) of every live entry of the manifests."""
    files: dict[str, DataFileContent] = {}
    for paths, contents in _paths_and_contents(list(manifests), io, live_only=True):
        files.update(zip(paths, map(DataFileContent, contents), strict=True))
    return files


def all_content_file_locations(manifests: Iterable[ManifestFile], io: FileIO) -> set[str]:
    """Locations of every entry of the manifests, DELETED entries included (a cautious superset for orphans)."""
    locations: set[str] = set()
    for paths, _ in _paths_and_contents(list(manifests), io, live_only=False):
        locations.update(paths)
    return locations


def _paths_and_contents(
    manifests: list[ManifestFile], io: FileIO, *, live_only: bool
) -> Iterator[tuple[list[str], list[int]]]:
    """Each manifest's entry locations and contents, decoded as columns on threads (no object per entry)."""
    use_duckdb = use_duckdb_for(manifests)

    def decode(manifest: ManifestFile) -> tuple[list[str], list[int]]:
        table = decode_manifest(manifest, io, _NO_PARTITION, use_duckdb=use_duckdb, live_only=live_only).table
        return table.column("file_path").to_pylist(), table.column("content").to_pylist()

    if len(manifests) <= 1:
        yield from map(decode, manifests)
        return
    yield from process_thread_pool("manifest-decode", DECODE_THREADS).map(decode, manifests)


def metadata_file_locations(metadata: TableMetadata, metadata_location: str | None) -> set[str]:
    """The current metadata file, the previous ones in its log, statistics files and the Hadoop version hint."""
    locations = {entry.metadata_file for entry in metadata.metadata_log}
    if metadata_location:
        locations.add(metadata_location)
    locations.update(statistics.statistics_path for statistics in metadata.statistics)
    locations.update(statistics.statistics_path for statistics in metadata.partition_statistics)
    locations.add(f"{metadata.location.rstrip('/')}/metadata/version-hint.text")
    return locations


def reachable_locations(metadata: TableMetadata, metadata_location: str | None, io: FileIO) -> set[str]:
    """Normalized locations of every file any snapshot of ``metadata`` or the metadata itself references."""
    snapshots = list(metadata.snapshots)
    manifests = manifests_of(snapshots, io)
    locations = metadata_file_locations(metadata, metadata_location)
    locations.update(snapshot.manifest_list for snapshot in snapshots if snapshot.manifest_list)
    locations.update(manifests)
    locations.update(all_content_file_locations(manifests.values(), io))
    return {normalize_location(location) for location in locations}
