"""Which delete files a rewrite leaves without a live data file to apply to, so its commit can remove them.

A rewrite folds every delete into the rows it writes; a delete file whose applicable data files are all replaced
deletes nothing afterwards. The usage map is built from every live data file of the snapshot (not only those the
``where`` filter or the size rules chose), so a delete that still applies to a file outside the rewrite is kept:

1. For each data file, the delete files the index attached to it (same rules as a read).
2. A delete file is freed by a rewrite when every data file it applies to is among the replaced files.
3. Delete files are named by location, and a deletion vector by its Puffin file and blob offset, since one Puffin
   file holds the vectors of many data files and each is its own manifest entry. ``freed_locations_by`` gives the
   locations all of whose entries are freed, for a commit that removes delete files by location.
"""

from __future__ import annotations

from collections.abc import Iterable

from spark_jobs.engine.compaction.candidates import RewriteCandidate

# (location, content offset): the offset is None except for deletion vectors.
DeleteKey = tuple[str, int | None]


class DeleteUsage:
    """For each delete file, the data files it applies to."""

    def __init__(self, candidates: Iterable[RewriteCandidate]) -> None:
        self._data_files_by_delete: dict[DeleteKey, set[str]] = {}
        for candidate in candidates:
            for key in delete_keys(candidate):
                self._data_files_by_delete.setdefault(key, set()).add(candidate.path)

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
