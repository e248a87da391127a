"""Find and delete orphan files: files under the table location that no metadata references, older than a time.

As Iceberg Java's ``DeleteOrphanFiles`` action:

1. List every file under the table location recursively with its modification time, leaving out hidden paths:
   a file or directory whose name starts with ``_`` or ``.``, unless it is a partition directory (``_x=...``).
2. Keep the files last modified before ``older_than`` (default: now minus 3 days), so files an in-flight write or
   commit is still producing are never taken.
3. Reachable files, from metadata reloaded after the listing: every snapshot's manifest list, manifests and
   their data and delete files (DELETED entries included, to be cautious), the current and previous metadata
   files, statistics files, the version hint.
4. Orphans are the listed files whose normalized location (``reachable_files.normalize_location``) is not
   reachable; they are deleted through the table's FileIO unless it is a dry run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pyarrow.fs import FileSelector, FileSystem, FileType
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import Table

from spark_jobs.engine.errors import UnsupportedFeatureError
from spark_jobs.engine.maintenance.file_removal import RemovalOutcome, remove_files
from spark_jobs.engine.maintenance.reachable_files import normalize_location, reachable_locations

DEFAULT_ORPHAN_AGE_MS = 3 * 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class ListedFile:
    """A file found under the table location: its location as the table's FileIO names it, and its mtime."""

    location: str
    modified_ms: int
    size: int


@dataclass(frozen=True)
class OrphanResult:
    """Orphan files found (and, unless a dry run, what their deletion did)."""

    older_than_ms: int
    files_listed: int
    orphans: list[ListedFile]
    removal: RemovalOutcome | None

    def as_dict(self) -> dict[str, Any]:
        """The result as the maintain job's JSON."""
        result: dict[str, Any] = {
            "older_than_ms": self.older_than_ms,
            "files_listed": self.files_listed,
            "orphan_files": len(self.orphans),
            "orphan_bytes": sum(orphan.size for orphan in self.orphans),
            "orphan_file_locations": [orphan.location for orphan in self.orphans],
        }
        if self.removal is not None:
            result["deleted_orphan_files"] = len(self.removal.removed)
            result["files_failed"] = self.removal.failed
        return result


def remove_orphan_files(table: Table, *, older_than_ms: int | None = None, dry_run: bool = False) -> OrphanResult:
    """Find orphans older than ``older_than_ms`` (default now minus 3 days) and delete them unless ``dry_run``."""
    cutoff = older_than_ms if older_than_ms is not None else int(time.time() * 1000) - DEFAULT_ORPHAN_AGE_MS
    listed = list_table_files(table)
    table.refresh()  # reachability from metadata read after the listing: a commit made meanwhile counts
    reachable = reachable_locations(table.metadata, table.metadata_location, table.io)
    orphans = [
        listed_file
        for listed_file in listed
        if listed_file.modified_ms < cutoff and normalize_location(listed_file.location) not in reachable
    ]
    orphans.sort(key=lambda orphan: orphan.location)
    removal = None if dry_run else remove_files(table.io, [orphan.location for orphan in orphans])
    return OrphanResult(cutoff, len(listed), orphans, removal)


def list_table_files(table: Table) -> list[ListedFile]:
    """Every file under the table location that is not hidden (step 1), through the table's own file system."""
    location = table.metadata.location.rstrip("/")
    file_system, root = _file_system(table, location)
    prefix = location[: len(location) - len(root.rstrip("/"))] if location.endswith(root.rstrip("/")) else ""
    selector = FileSelector(root, recursive=True, allow_not_found=True)
    listed: list[ListedFile] = []
    for info in file_system.get_file_info(selector):
        if info.type != FileType.File:
            continue
        relative = info.path[len(root.rstrip("/")) :].lstrip("/")
        if any(_is_hidden(part) for part in relative.split("/")):
            continue
        listed.append(ListedFile(prefix + info.path, (info.mtime_ns or 0) // 1_000_000, info.size or 0))
    return listed


def _file_system(table: Table, location: str) -> tuple[FileSystem, str]:
    """The pyarrow file system of the table's FileIO (with its credentials) and the location's path in it."""
    io = table.io
    if not isinstance(io, PyArrowFileIO):
        raise UnsupportedFeatureError(
            f"listing files of {'.'.join(table.name())} needs pyiceberg's PyArrowFileIO; the table uses "
            f"{type(io).__name__} (set py-io-impl=pyiceberg.io.pyarrow.PyArrowFileIO in the catalog properties)"
        )
    scheme, netloc, path = io.parse_location(location, io.properties)
    return io.fs_by_scheme(scheme, netloc), path


def _is_hidden(name: str) -> bool:
    """Java's hidden-path rule: a name starting with ``_`` or ``.``, except partition directories (``_x=1``)."""
    return name.startswith((".", "_")) and "=" not in name
