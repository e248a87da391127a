"""Which files a table's metadata references, read from its snapshots' manifest lists and manifests.

Manifests are decoded as columns on threads (``manifest_columns.decode_manifest``, DuckDB's avro extension for
large ones), keeping only each entry's location and content: no Python object per entry.

Locations are compared in one normal form (``normalize_location``), because writers spell the same file
differently: Iceberg Java writes ``file:/tmp/t/x``, pyiceberg ``file:///tmp/t/x``, a listing gives ``/tmp/t/x``;
``s3a://`` and ``s3n://`` name the same objects as ``s3://`` (as Java's orphan-file action treats them).

``read_whole`` reads every manifest list and every manifest of a table's snapshots, each once: a maintenance action
deletes nothing from a table that cannot be read whole, so it reads the table first and fails (``CorruptFileError``,
bad input naming the file and the table) when a list or a manifest is missing or does not decode; what it read is
handed to the later steps (``known``), which do not read those manifests again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFileContent, ManifestEntryStatus, ManifestFile
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.types import StructType
from pyiceberg.utils.concurrent import ExecutorFactory

from spark_jobs.engine.shared.errors import CorruptFileError
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


@dataclass(frozen=True)
class ManifestContents:
    """What one manifest lists: location -> content of its live entries, and the locations of all its entries."""

    live: dict[str, DataFileContent]
    every_location: frozenset[str]


def read_whole(snapshots: Iterable[Snapshot], io: FileIO, table_name: str) -> dict[str, ManifestContents]:
    """Manifest location -> contents, for every manifest of the snapshots (module doc).

    Raises CorruptFileError naming the table and the file when a manifest list or a manifest is missing or damaged.
    """
    try:
        manifests = manifests_of(snapshots, io)
        return dict(zip(manifests, _decoded(list(manifests.values()), io), strict=True))
    except CorruptFileError as error:
        raise CorruptFileError(f"table {table_name} cannot be read whole: {error}") from error


def live_content_files(
    manifests: Iterable[ManifestFile], io: FileIO, known: Mapping[str, ManifestContents] | None = None
) -> dict[str, DataFileContent]:
    """Location -> content (data, position or equality deletes) of every live entry of the manifests (those in
    ``known`` taken from it, the others read)."""
    files: dict[str, DataFileContent] = {}
    for contents in _contents(manifests, io, known or {}):
        files.update(contents.live)
    return files


def all_content_file_locations(
    manifests: Iterable[ManifestFile], io: FileIO, known: Mapping[str, ManifestContents] | None = None
) -> set[str]:
    """Locations of every entry of the manifests, DELETED entries included (a cautious superset for orphans)."""
    locations: set[str] = set()
    for contents in _contents(manifests, io, known or {}):
        locations.update(contents.every_location)
    return locations


def _contents(
    manifests: Iterable[ManifestFile], io: FileIO, known: Mapping[str, ManifestContents]
) -> list[ManifestContents]:
    """The contents of each manifest: from ``known`` when there, else decoded."""
    listed = list(manifests)
    missing = [manifest for manifest in listed if manifest.manifest_path not in known]
    decoded = dict(zip((m.manifest_path for m in missing), _decoded(missing, io), strict=True))
    return [known.get(manifest.manifest_path) or decoded[manifest.manifest_path] for manifest in listed]


def _decoded(manifests: list[ManifestFile], io: FileIO) -> list[ManifestContents]:
    """Each manifest's entries (DELETED ones too), decoded as columns on threads: locations and contents only."""
    use_duckdb = use_duckdb_for(manifests)
    deleted = int(ManifestEntryStatus.DELETED)

    def decode(manifest: ManifestFile) -> ManifestContents:
        table = decode_manifest(manifest, io, _NO_PARTITION, use_duckdb=use_duckdb, live_only=False).table
        paths = table.column("file_path").to_pylist()
        contents = table.column("content").to_pylist()
        statuses = table.column("status").to_pylist()
        live = {
            path: DataFileContent(content)
            for path, content, status in zip(paths, contents, statuses, strict=True)
            if status != deleted
        }
        return ManifestContents(live, frozenset(paths))

    if len(manifests) <= 1:
        return list(map(decode, manifests))
    return list(process_thread_pool("manifest-decode", DECODE_THREADS).map(decode, manifests))


def metadata_file_locations(metadata: TableMetadata, metadata_location: str | None) -> set[str]:
    """The current metadata file, the previous ones in its log, statistics files and the Hadoop version hint."""
    locations = {entry.metadata_file for entry in metadata.metadata_log}
    if metadata_location:
        locations.add(metadata_location)
    locations.update(statistics.statistics_path for statistics in metadata.statistics)
    locations.update(statistics.statistics_path for statistics in metadata.partition_statistics)
    locations.add(f"{metadata.location.rstrip('/')}/metadata/version-hint.text")
    return locations


def reachable_locations(
    metadata: TableMetadata,
    metadata_location: str | None,
    io: FileIO,
    known: Mapping[str, ManifestContents] | None = None,
) -> set[str]:
    """Normalized locations of every file any snapshot of ``metadata`` or the metadata itself references
    (manifests in ``known`` not read again)."""
    snapshots = list(metadata.snapshots)
    manifests = manifests_of(snapshots, io)
    locations = metadata_file_locations(metadata, metadata_location)
    locations.update(snapshot.manifest_list for snapshot in snapshots if snapshot.manifest_list)
    locations.update(manifests)
    locations.update(all_content_file_locations(manifests.values(), io, known))
    return {normalize_location(location) for location in locations}
