"""Is a change still safe to commit on the branch head it lost a race to? (validated from its starting snapshot)

1. A pure append (data files only, no validation asked) is always safe.
2. Otherwise the starting snapshot must still be an ancestor of the head; the snapshots after it are the concurrent
   commits. Among the entries they ADDED:
   - data files in a partition the change asked to keep free (``no_new_data_in_partitions``; None: any partition);
   - with ``no_new_deletes_for_removed_files``, position deletes or deletion vectors that may apply to a data file
     the change removes (referencing it, or unscoped in its partition);
   - position deletes or deletion vectors referencing a data file in ``no_new_deletes_for_data_files`` (the files
     a v3 delete writes vectors for: each data file keeps at most one live vector)
   make the commit unsafe.
3. Every data file the change removes or depends on must still be live at the head.

Unsafe raises ``CommitConflictError`` naming the concurrent snapshot and what it did.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.table import Table
from pyiceberg.table.refs import MAIN_BRANCH
from pyiceberg.table.snapshots import Snapshot, ancestors_of

from spark_jobs.engine.commit.producer import CommitConflictError
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.table.manifest_cache import cached_live_entries
from spark_jobs.engine.table.manifest_entries import partition_values, referenced_data_file


def validate_concurrent_commits(
    table: Table, change: SnapshotChange, starting_snapshot_id: int | None, *, branch: str = MAIN_BRANCH
) -> None:
    """Raise CommitConflictError when commits after ``starting_snapshot_id`` make ``change`` unsafe (module doc)."""
    if change.is_pure_append:
        return
    name = ".".join(table.name())
    concurrent = list(_snapshots_since(table, starting_snapshot_id, branch))
    removed_partitions = _partitions_of_removed_files(table, change, starting_snapshot_id)
    for snapshot in concurrent:
        for entry in _added_entries(table, snapshot):
            data_file = entry.data_file
            partition = (data_file.spec_id, partition_values(data_file))
            if data_file.content == DataFileContent.DATA and (
                change.no_new_data_in_partitions is None or partition in change.no_new_data_in_partitions
            ):
                operation = snapshot.summary.operation.value if snapshot.summary else "unknown operation"
                raise CommitConflictError(
                    f"table {name}: snapshot {snapshot.snapshot_id} ({operation}) "
                    f"added data file {data_file.file_path} in a partition this commit validated; commit aborted"
                )
            if (
                change.no_new_deletes_for_removed_files
                and data_file.content == DataFileContent.POSITION_DELETES
                and _may_delete_from(data_file, change, partition, removed_partitions)
            ):
                raise CommitConflictError(
                    f"table {name}: snapshot {snapshot.snapshot_id} added position deletes {data_file.file_path} "
                    "for data files this commit removes; commit aborted"
                )
            if (
                data_file.content == DataFileContent.POSITION_DELETES
                and referenced_data_file(data_file) in change.no_new_deletes_for_data_files
            ):
                raise CommitConflictError(
                    f"table {name}: snapshot {snapshot.snapshot_id} added deletes {data_file.file_path} for data file "
                    f"{referenced_data_file(data_file)}, which this commit writes a deletion vector for; commit aborted"
                )
    required = change.data_files_that_must_stay_live
    if required:
        live = set(_live_data_file_paths(table, table.metadata.snapshot_by_name(branch)))
        gone = sorted(required - live)
        if gone:
            raise CommitConflictError(
                f"table {name}: {len(gone)} data file(s) this commit removes or deletes rows from were removed by a "
                f"concurrent commit, e.g. {gone[0]}; commit aborted"
            )


def _snapshots_since(table: Table, starting_snapshot_id: int | None, branch: str) -> Iterator[Snapshot]:
    """The branch's snapshots after the starting one, newest first; the start must still be an ancestor."""
    head = table.metadata.snapshot_by_name(branch)
    for snapshot in ancestors_of(head, table.metadata):
        if snapshot.snapshot_id == starting_snapshot_id:
            return
        yield snapshot
    if starting_snapshot_id is not None:
        raise CommitConflictError(
            f"table {'.'.join(table.name())}: branch {branch} no longer descends from snapshot {starting_snapshot_id} "
            "this commit started from (rolled back or replaced); commit aborted"
        )


def _added_entries(table: Table, snapshot: Snapshot) -> Iterator[ManifestEntry]:
    """Entries ``snapshot`` itself added, data and delete files."""
    for manifest in snapshot.manifests(table.io):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        for entry in _live_entries(manifest, table):
            if entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id == snapshot.snapshot_id:
                yield entry


def _live_data_file_paths(table: Table, snapshot: Snapshot | None) -> Iterator[str]:
    if snapshot is None:
        return
    for manifest in snapshot.manifests(table.io):
        if manifest.content == ManifestContent.DATA:
            yield from (entry.data_file.file_path for entry in _live_entries(manifest, table))


def _live_entries(manifest: ManifestFile, table: Table) -> tuple[ManifestEntry, ...]:
    """A manifest's live entries through the process cache (manifests are immutable; planning read most already)."""
    return cached_live_entries([manifest], table.io)[0]


def _partitions_of_removed_files(
    table: Table, change: SnapshotChange, starting_snapshot_id: int | None
) -> set[tuple[int, tuple[Any, ...]]]:
    if not (change.no_new_deletes_for_removed_files and change.removed_data_file_paths):
        return set()
    start = table.metadata.snapshot_by_id(starting_snapshot_id) if starting_snapshot_id is not None else None
    partitions: set[tuple[int, tuple[Any, ...]]] = set()
    for manifest in start.manifests(table.io) if start else []:
        if manifest.content != ManifestContent.DATA:
            continue
        for entry in _live_entries(manifest, table):
            if entry.data_file.file_path in change.removed_data_file_paths:
                partitions.add((entry.data_file.spec_id, partition_values(entry.data_file)))
    return partitions


def _may_delete_from(
    delete_file: DataFile,
    change: SnapshotChange,
    partition: tuple[int, tuple[Any, ...]],
    removed_partitions: set[tuple[int, tuple[Any, ...]]],
) -> bool:
    target = referenced_data_file(delete_file)
    if target is not None:
        return target in change.removed_data_file_paths
    return partition in removed_partitions
