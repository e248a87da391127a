"""What one commit does, independent of the table metadata it lands on (so a lost race can rebuild it).

A caller (ingest, and later compaction) chooses the operation, the data and delete files added, the data and delete
files removed, the data sequence number of added entries (None: the new snapshot's; compaction's ``replace`` pins the
starting one), the summary properties, and what a concurrent commit must not have done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyiceberg.manifest import DataFile, DataFileContent, ManifestFile
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update import TableRequirement, TableUpdate

# Snapshot summary property under which a commit records the caller's idempotency key.
IDEMPOTENCY_KEY_PROPERTY = "airflow-iceberg-provider.idempotency-key"

# A partition as (spec id, partition values): the unit conflict validation scopes to.
PartitionKey = tuple[int, tuple[Any, ...]]


@dataclass
class SnapshotChange:
    """The files one snapshot adds and removes, and the rules for committing it after a lost race."""

    operation: Operation
    added_data_files: list[DataFile] = field(default_factory=list)
    added_delete_files: list[DataFile] = field(default_factory=list)
    removed_data_file_paths: set[str] = field(default_factory=set)
    removed_delete_file_paths: set[str] = field(default_factory=set)
    # Deletion vectors removed, by (Puffin file path, content offset): one Puffin file holds several.
    removed_deletion_vectors: set[tuple[str, int]] = field(default_factory=set)
    # Data sequence number of every added entry; None lets it inherit the new snapshot's.
    data_sequence_number: int | None = None
    # Per added file (by path), a data sequence number other than ``data_sequence_number`` (a delete file rewrite
    # keeps the newest sequence number of the files each new file replaces).
    data_sequence_numbers: dict[str, int] = field(default_factory=dict)
    summary_properties: dict[str, str] = field(default_factory=dict)
    idempotency_key: str | None = None
    # Conflict rules, checked against every snapshot committed after the change was planned:
    # data files added in these partitions make the commit unsafe (None: any partition; empty set: never).
    no_new_data_in_partitions: set[PartitionKey] | None = field(default_factory=set)
    # new position deletes for a removed data file make the commit unsafe (compaction sets this).
    no_new_deletes_for_removed_files: bool = False
    # data files this change writes deletion vectors for: a concurrent delete for one of them (a deletion vector or
    # position deletes) would leave two live vectors, or one that misses rows, so it makes the commit unsafe.
    no_new_deletes_for_data_files: set[str] = field(default_factory=set)
    # data files this change depends on (e.g. the targets of its position deletes): removed meanwhile = conflict.
    required_data_file_paths: set[str] = field(default_factory=set)
    # A manifest rewrite: the parent's manifests these replace (all must still be there), and the manifests, already
    # written with ``snapshot_id`` as their adding snapshot, that take their place.
    replaced_manifest_paths: set[str] = field(default_factory=set)
    added_manifests: list[ManifestFile] = field(default_factory=list)
    # The new snapshot's id, when files were written naming it before the commit (None: chosen by the producer).
    snapshot_id: int | None = None
    # Extra catalog updates and requirements committed atomically with the snapshot (e.g. a schema change).
    extra_updates: tuple[TableUpdate, ...] = ()
    extra_requirements: tuple[TableRequirement, ...] = ()

    @property
    def removed_delete_file_keys(self) -> set[str]:
        """The removal keys (``removal_key``) of every delete file and deletion vector this change removes."""
        return set(self.removed_delete_file_paths) | {
            _dv_key(path, offset) for path, offset in self.removed_deletion_vectors
        }

    @property
    def written_file_paths(self) -> list[str]:
        """Every file the job wrote for this change: deleted when the commit fails for good."""
        paths = (
            [f.file_path for f in self.added_data_files]
            + [f.file_path for f in self.added_delete_files]
            + [m.manifest_path for m in self.added_manifests]
        )
        return list(dict.fromkeys(paths))  # a Puffin file holds several deletion vectors

    @property
    def data_files_that_must_stay_live(self) -> set[str]:
        """Removed data files and the data files position deletes point at: gone meanwhile means a conflict."""
        referenced = {
            path
            for f in self.added_delete_files
            if f.content == DataFileContent.POSITION_DELETES and (path := _referenced_data_file(f)) is not None
        }
        return set(self.removed_data_file_paths) | set(self.required_data_file_paths) | referenced

    @property
    def is_pure_append(self) -> bool:
        """Adds data files only and asks no validation: safe to retry on any newer metadata."""
        return (
            not self.added_delete_files
            and not self.removed_data_file_paths
            and not self.removed_delete_file_paths
            and not self.required_data_file_paths
            and not self.replaced_manifest_paths
            and not self.removed_deletion_vectors
            and self.no_new_data_in_partitions is not None
            and not self.no_new_data_in_partitions
            and not self.extra_requirements
        )

    def summary_with_key(self) -> dict[str, str]:
        """The summary properties, with the idempotency key when there is one."""
        properties = dict(self.summary_properties)
        if self.idempotency_key is not None:
            properties[IDEMPOTENCY_KEY_PROPERTY] = self.idempotency_key
        return properties


def _referenced_data_file(data_file: DataFile) -> str | None:
    from spark_jobs.engine.table.manifest_entries import referenced_data_file

    return referenced_data_file(data_file)


def removal_key(data_file: DataFile) -> str:
    """What identifies a manifest entry to remove: the file path, plus the blob offset for a deletion vector."""
    from spark_jobs.engine.table.manifest_entries import content_offset

    offset = content_offset(data_file) if data_file.content == DataFileContent.POSITION_DELETES else None
    return data_file.file_path if offset is None else _dv_key(data_file.file_path, offset)


def _dv_key(path: str, offset: int) -> str:
    return f"{path}#offset={offset}"
