"""Which delete files a rewrite leaves without a live data file to apply to, so its commit can remove them.

A rewrite folds every delete into the rows it writes; a delete file whose applicable data files are all replaced
deletes nothing afterwards. The usage map is built from every live data file of the snapshot (not only those the
``where`` filter or the size rules chose), so a delete that still applies to a file outside the rewrite is kept:

1. For each data file, the delete files the index attached to it (same rules as a read).
2. A delete file is freed by a rewrite when every data file it applies to is among the replaced files.
3. Delete files are named by location, and a deletion vector by its Puffin file and blob offset, since one Puffin
   file holds the vectors of many data files and each is its own manifest entry. ``freed_locations_by`` gives the
   locations all of whose entries are freed, for a commit that removes delete files by location.

``find_dangling_deletes`` applies the same usage to a whole snapshot after a rewrite (``remove-dangling-deletes``):
delete files that apply to no live data file, removed by their own ``replace`` commit (``dangling_deletes_change``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyiceberg.manifest import DataFileContent, FileFormat, ManifestContent, ManifestEntry
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation, Snapshot

from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.compaction.candidates import RewriteCandidate, list_candidates
from spark_jobs.engine.planning.delete_index import PartitionKey, partition_key
from spark_jobs.engine.table.manifest_entries import content_offset, read_live_entries

# (location, content offset): the offset is None except for deletion vectors.
DeleteKey = tuple[str, int | None]


class DeleteUsage:
    """For each delete file, the data files it applies to."""

    def __init__(self, candidates: Iterable[RewriteCandidate]) -> None:
        self._data_files_by_delete: dict[DeleteKey, set[str]] = {}
        for candidate in candidates:
            for key in delete_keys(candidate):
                self._data_files_by_delete.setdefault(key, set()).add(candidate.path)

    @property
    def used_keys(self) -> set[DeleteKey]:
        """Every delete file (DV: with its offset) that applies to at least one of the data files."""
        return set(self._data_files_by_delete)

    def freed_by(self, replaced_data_files: Iterable[str]) -> set[DeleteKey]:
        """Delete files that apply only to data files among ``replaced_data_files``."""
        replaced = set(replaced_data_files)
        return {key for key, data_files in self._data_files_by_delete.items() if data_files <= replaced}

    def freed_locations_by(self, replaced_data_files: Iterable[str]) -> set[str]:
        """Delete file locations every one of whose entries (every DV of a Puffin file) is freed."""
        freed = self.freed_by(replaced_data_files)
        locations = {location for location, _ in freed}
        still_used = {location for location, offset in self._data_files_by_delete if (location, offset) not in freed}
        return locations - still_used


def delete_keys(candidate: RewriteCandidate) -> list[DeleteKey]:
    """The keys of the delete files that apply to one data file."""
    deletes = candidate.deletes
    keys: list[DeleteKey] = [(d.path, None) for d in deletes.position_deletes]
    keys += [(d.path, None) for d in deletes.equality_deletes]
    if deletes.deletion_vector is not None:
        keys.append((deletes.deletion_vector.path, deletes.deletion_vector.content_offset))
    return keys


@dataclass(frozen=True)
class DanglingDeletes:
    """Delete files of a snapshot that apply to no live data file, and where a commit removing them must look."""

    locations: frozenset[str]  # whole files; a Puffin file only when none of its deletion vectors applies
    entries: int  # delete file entries among them (each deletion vector is one)
    partitions: frozenset[PartitionKey] | None  # partitions of the removed files; None: a global equality delete


def find_dangling_deletes(table: Table, snapshot: Snapshot | None) -> DanglingDeletes:
    """The snapshot's live delete files that apply to none of its live data files (Java's remove_dangling_deletes).

    Java removes a delete file older than every data file of its partition (position deletes: older; equality
    deletes: not newer) and a deletion vector whose data file is gone. Asking the delete index which deletes apply
    to each live data file finds those, and also a file whose rows name only data files that are gone.
    """
    if snapshot is None:
        return DanglingDeletes(frozenset(), 0, frozenset())
    delete_entries = [
        entry
        for manifest in snapshot.manifests(table.io)
        if manifest.content == ManifestContent.DELETES
        for entry in read_live_entries(manifest, table.io)
    ]
    used = DeleteUsage(list_candidates(table, snapshot)).used_keys
    unused_keys: dict[str, list[DeleteKey]] = {}
    all_keys: dict[str, int] = {}
    partitions: set[PartitionKey] = set()
    is_global = False
    by_location: dict[str, list[ManifestEntry]] = {}
    for entry in delete_entries:
        key = _entry_key(entry)
        all_keys[key[0]] = all_keys.get(key[0], 0) + 1
        by_location.setdefault(key[0], []).append(entry)
        if key not in used:
            unused_keys.setdefault(key[0], []).append(key)
    locations = frozenset(location for location, keys in unused_keys.items() if len(keys) == all_keys[location])
    for location in locations:
        for entry in by_location[location]:
            delete_file = entry.data_file
            if (
                delete_file.content == DataFileContent.EQUALITY_DELETES
                and table.specs()[delete_file.spec_id].is_unpartitioned()
            ):
                is_global = True
            partitions.add(partition_key(delete_file))
    entries = sum(all_keys[location] for location in locations)
    return DanglingDeletes(locations, entries, None if is_global else frozenset(partitions))


def dangling_deletes_change(dangling: DanglingDeletes) -> SnapshotChange:
    """The ``replace`` change removing dangling delete files; data added meanwhile in their partitions conflicts."""
    return SnapshotChange(
        Operation.REPLACE,
        removed_delete_file_paths=set(dangling.locations),
        summary_properties={"airflow-iceberg-provider.job": "remove-dangling-deletes"},
        no_new_data_in_partitions=None if dangling.partitions is None else set(dangling.partitions),
    )


def _entry_key(entry: ManifestEntry) -> DeleteKey:
    delete_file = entry.data_file
    if delete_file.file_format == FileFormat.PUFFIN:
        return delete_file.file_path, content_offset(delete_file)
    return delete_file.file_path, None
