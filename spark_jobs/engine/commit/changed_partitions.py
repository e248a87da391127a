"""Which partitions a committed snapshot changed: the files it added and removed, grouped by partition.

Read from the snapshot itself (what the commit holds, not what the job meant to write), as Iceberg Java's
``Snapshot.addedDataFiles`` / ``removedDataFiles`` read it:

1. take the manifests the snapshot wrote (their ``added_snapshot_id`` is the snapshot's);
2. read their entries, deleted ones included, and keep those the snapshot made: ADDED or DELETED with its id;
3. group them by (partition spec id, partition values) and count files and rows per kind;
4. name each partition as Iceberg names it on storage (Java's ``PartitionSpec.partitionToPath``, pyiceberg's
   ``partition_to_path``): ``field=value`` pairs joined by ``/``, each value the transform's human string
   (``2024-01-05`` for a day, ``2024-01-05-10`` for an hour, ``null`` for a null), URL-encoded; an unpartitioned
   table's one partition is ``""``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote_plus

from pyiceberg.manifest import DataFileContent, ManifestEntry, ManifestEntryStatus
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.typedef import Record


@dataclass
class PartitionChange:
    """What one snapshot did to one partition: files and rows added and removed."""

    spec_id: int
    partition: str
    data_files_added: int = 0
    data_files_removed: int = 0
    delete_files_added: int = 0
    delete_files_removed: int = 0
    rows_added: int = 0
    rows_removed: int = 0
    position_deletes_added: int = 0  # rows deleted by position (position delete files and deletion vectors)
    equality_deletes_added: int = 0  # delete keys (each may delete any number of rows)

    def count(self, entry: ManifestEntry) -> None:
        """Count one entry the snapshot made (ADDED or DELETED)."""
        data_file = entry.data_file
        added = entry.status == ManifestEntryStatus.ADDED
        if data_file.content == DataFileContent.DATA:
            if added:
                self.data_files_added += 1
                self.rows_added += data_file.record_count
            else:
                self.data_files_removed += 1
                self.rows_removed += data_file.record_count
        elif added:
            self.delete_files_added += 1
            if data_file.content == DataFileContent.EQUALITY_DELETES:
                self.equality_deletes_added += data_file.record_count
            else:
                self.position_deletes_added += data_file.record_count
        else:
            self.delete_files_removed += 1


def changed_partitions(table: Table, snapshot: Snapshot) -> list[dict[str, Any]]:
    """Every partition ``snapshot`` of ``table`` added or removed a file in (module doc), as JSON-ready dicts."""
    io = table.io
    metadata = table.metadata
    schema = _schema_of(table, snapshot)
    specs = metadata.specs()
    changes: dict[tuple[int, tuple[Any, ...]], PartitionChange] = {}
    for manifest in snapshot.manifests(io):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        spec_id = manifest.partition_spec_id
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
            if entry.snapshot_id != snapshot.snapshot_id or entry.status == ManifestEntryStatus.EXISTING:
                continue
            partition = entry.data_file.partition
            values = tuple(partition[i] for i in range(len(partition))) if partition is not None else ()
            change = changes.get((spec_id, values))
            if change is None:
                path = partition_path(specs[spec_id], schema, partition)
                change = changes[(spec_id, values)] = PartitionChange(spec_id, path)
            change.count(entry)
    return [asdict(change) for change in sorted(changes.values(), key=lambda c: (c.partition, c.spec_id))]


def partition_path(spec: PartitionSpec, schema: Schema, partition: Record | None) -> str:
    """The partition as Iceberg names it on storage (module doc, step 4); ``""`` when unpartitioned."""
    if not spec.fields or partition is None:
        return ""
    try:
        return spec.partition_to_path(partition, schema)
    except Exception:  # a source column dropped since: the values as they are, still one name per partition
        return "/".join(
            f"{quote_plus(field.name, safe='')}={quote_plus('null' if value is None else str(value), safe='')}"
            for field, value in zip(spec.fields, (partition[i] for i in range(len(partition))), strict=False)
        )


def _schema_of(table: Table, snapshot: Snapshot) -> Schema:
    """The schema the snapshot was written with, else the table's current one."""
    if snapshot.schema_id is not None:
        for schema in table.metadata.schemas:
            if schema.schema_id == snapshot.schema_id:
                return schema
    return table.schema()
