"""Find and delete orphan files: files under the table location that no metadata references, older than a time.

As Iceberg Java's ``DeleteOrphanFiles`` action, and as safe by default:

0. Refuse when the table's ``gc.enabled`` is false: its files may be shared with other tables (as Java). Refuse
   a table that cannot be read whole (a manifest list or manifest missing or damaged: ``reachable_files.read_whole``),
   before anything is settled, listed or deleted, ``--dry-run`` included.
1. Refuse a cutoff later than 24 hours ago (``MIN_ORPHAN_AGE_MS``) unless short retention is allowed explicitly: a
   write or commit in progress has files no metadata references yet (Java's action refuses the same interval).
2. Settle the table's pending commit records (``commit.pending_commits``); the files of a commit still undecided
   are held, never taken (skipped in a dry run, where nothing is settled and every record's files are held).
3. List every file under the table location recursively with its modification time, leaving out hidden paths:
   a file or directory whose name starts with ``_`` or ``.``, unless it is the directory of a partition field whose
   own name starts so (``_x=...`` for a field ``_x`` of any of the table's specs; Java's
   ``PartitionAwareHiddenPathFilter``). A ``_x=1`` directory of no such field stays hidden, as in Java.
4. Keep the files last modified before ``older_than`` (default: now minus 3 days).
5. Reachable files, from metadata reloaded after the listing: every snapshot's manifest list, manifests and
   their data and delete files (DELETED entries included, to be cautious), the current and previous metadata
   files, statistics files, the version hint.
6. Orphans are the listed files whose normalized location (``reachable_files.normalize_location``) is not
   reachable. Just before deleting them (not in a dry run), reload the metadata once more and drop any orphan that
   a commit made meanwhile references (only manifests new since step 5 are read); delete the rest through the
   table's FileIO.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyarrow.fs import FileSelector, FileType
from pyiceberg.io import FileIO
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata

from spark_jobs.engine.commit.pending_commits import read_pending_records, settle_pending_commits
from spark_jobs.engine.maintenance.expire_snapshots import check_gc_enabled
from spark_jobs.engine.maintenance.file_removal import RemovalOutcome, remove_files
from spark_jobs.engine.maintenance.reachable_files import (
    all_content_file_locations,
    manifests_of,
    metadata_file_locations,
    normalize_location,
    reachable_locations,
    read_whole,
)
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.table.catalog import table_file_system

DEFAULT_ORPHAN_AGE_MS = 3 * 24 * 60 * 60 * 1000
MIN_ORPHAN_AGE_MS = 24 * 60 * 60 * 1000


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
    held_by_pending_commits: list[str] = field(default_factory=list)
    referenced_meanwhile: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The result as the maintain job's JSON."""
        result: dict[str, Any] = {
            "older_than_ms": self.older_than_ms,
            "files_listed": self.files_listed,
            "orphan_files": len(self.orphans),
            "orphan_bytes": sum(orphan.size for orphan in self.orphans),
            "orphan_file_locations": [orphan.location for orphan in self.orphans],
            "files_held_by_pending_commits": self.held_by_pending_commits,
            "files_referenced_meanwhile": self.referenced_meanwhile,
        }
        if self.removal is not None:
            result["deleted_orphan_files"] = len(self.removal.removed)
            result["files_failed"] = self.removal.failed
        return result


def remove_orphan_files(
    table: Table,
    *,
    older_than_ms: int | None = None,
    dry_run: bool = False,
    allow_short_retention: bool = False,
) -> OrphanResult:
    """Find orphans older than ``older_than_ms`` (default now minus 3 days) and delete them unless ``dry_run``."""
    check_gc_enabled(table, "remove orphan files")
    now_ms = int(time.time() * 1000)
    cutoff = older_than_ms if older_than_ms is not None else now_ms - DEFAULT_ORPHAN_AGE_MS
    if cutoff > now_ms - MIN_ORPHAN_AGE_MS and not allow_short_retention:
        raise UserInputError(
            f"--older-than {_iso(cutoff)} is less than 24 hours ago: files of writes still in progress on table "
            f"{'.'.join(table.name())} could be deleted; use an older time, or --allow-short-retention if no "
            "write can be running"
        )
    # Read whole before anything is settled or listed: nothing is deleted from a table that cannot be.
    known = read_whole(table.metadata.snapshots, table.io, ".".join(table.name()))
    held = _held_files(table, dry_run=dry_run)
    listed = list_table_files(table)
    table.refresh()  # reachability from metadata read after the listing: a commit made meanwhile counts
    checked = table.metadata
    reachable = reachable_locations(checked, table.metadata_location, table.io, known)
    orphans = [
        listed_file
        for listed_file in listed
        if listed_file.modified_ms < cutoff
        and normalize_location(listed_file.location) not in reachable
        and normalize_location(listed_file.location) not in held
    ]
    orphans.sort(key=lambda orphan: orphan.location)
    held_listed = sorted(f.location for f in listed if normalize_location(f.location) in held)
    if dry_run or not orphans:
        return OrphanResult(cutoff, len(listed), orphans, None if dry_run else RemovalOutcome(), held_listed)
    table.refresh()  # step 6: one more look just before deleting
    now_reachable = _reachable_since(checked, table.metadata, table.metadata_location, table.io)
    meanwhile = sorted(o.location for o in orphans if normalize_location(o.location) in now_reachable)
    orphans = [o for o in orphans if normalize_location(o.location) not in now_reachable]
    removal = remove_files(table.io, [orphan.location for orphan in orphans])
    return OrphanResult(cutoff, len(listed), orphans, removal, held_listed, meanwhile)


def _held_files(table: Table, *, dry_run: bool) -> set[str]:
    """Normalized locations of the files of commits still undecided (every record's, in a dry run)."""
    if dry_run:
        records = read_pending_records(table).values()
        return {normalize_location(path) for record in records for path in record.files}
    return {normalize_location(path) for path in settle_pending_commits(table).held_files}


def _reachable_since(
    before: TableMetadata, after: TableMetadata, metadata_location: str | None, io: FileIO
) -> set[str]:
    """Normalized locations ``after`` references through snapshots or manifests ``before`` did not have."""
    known_snapshots = {snapshot.snapshot_id for snapshot in before.snapshots}
    new_snapshots = [s for s in after.snapshots if s.snapshot_id not in known_snapshots]
    locations = metadata_file_locations(after, metadata_location)
    locations.update(s.manifest_list for s in new_snapshots if s.manifest_list)
    if new_snapshots:
        known_manifests = manifests_of(before.snapshots, io)
        new_manifests = {p: m for p, m in manifests_of(new_snapshots, io).items() if p not in known_manifests}
        locations.update(new_manifests)
        locations.update(all_content_file_locations(new_manifests.values(), io))
    return {normalize_location(location) for location in locations}


def _iso(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat(timespec="seconds")


def list_table_files(table: Table) -> list[ListedFile]:
    """Every file under the table location that is not hidden (step 1), through the table's own file system."""
    location = table.metadata.location.rstrip("/")
    file_system, root = table_file_system(table, location)
    prefix = location[: len(location) - len(root.rstrip("/"))] if location.endswith(root.rstrip("/")) else ""
    selector = FileSelector(root, recursive=True, allow_not_found=True)
    partition_dirs = _hidden_partition_prefixes(table.metadata)
    listed: list[ListedFile] = []
    for info in file_system.get_file_info(selector):
        if info.type != FileType.File:
            continue
        relative = info.path[len(root.rstrip("/")) :].lstrip("/")
        if any(_is_hidden(part, partition_dirs) for part in relative.split("/")):
            continue
        listed.append(ListedFile(prefix + info.path, (info.mtime_ns or 0) // 1_000_000, info.size or 0))
    return listed


def _hidden_partition_prefixes(metadata: TableMetadata) -> tuple[str, ...]:
    """``name=`` of every partition field (any spec) whose name starts with ``_`` or ``.``: its directories count."""
    names = {
        field.name for spec in metadata.partition_specs for field in spec.fields if field.name.startswith(("_", "."))
    }
    return tuple(sorted(f"{name}=" for name in names))


def _is_hidden(name: str, partition_dirs: tuple[str, ...]) -> bool:
    """Java's hidden-path rule: a name starting with ``_`` or ``.``, unless it starts with a ``partition_dirs``."""
    return name.startswith((".", "_")) and not name.startswith(partition_dirs)
