"""Build one snapshot of a ``SnapshotChange`` on given table metadata: manifests, manifest list, catalog updates.

1. Start from the branch head (the parent). Keep each of its manifests that has live files, unless it holds a file
   the change removes: then rewrite it, kept entries as EXISTING (their snapshot ids and sequence numbers unchanged),
   removed ones as DELETED by the new snapshot. A removed file not found is an error naming it. A manifest the
   change replaces (a manifest rewrite) is dropped, and the change's already written manifests take its place; one
   no longer in the parent is an error too.
2. Write the added data files into DATA manifests and the added delete files into DELETES manifests, one per
   partition spec, as ADDED entries with the change's data sequence number (None: inherited from the snapshot).
3. Write the manifest list (v2) with the next sequence number, and the snapshot with a summary of what was added
   and removed, totals carried from the parent, and the change's properties (idempotency key included).
4. Updates: add the snapshot, point the branch at it, record the idempotency key in the branch's key property
   (``idempotency``), plus the change's extra updates; requirements: the table's uuid and the branch still at the
   parent (plus the change's extra requirements).

Every file written is recorded in ``written_paths`` so a failed attempt can delete it.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from pyiceberg.io import OutputFile
from pyiceberg.manifest import (
    DATA_FILE_TYPE,
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestListWriter,
    write_manifest_list,
)
from pyiceberg.table import Table, TableProperties
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import (
    Operation,
    Snapshot,
    SnapshotSummaryCollector,
    Summary,
    update_snapshot_summaries,
)
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)

from spark_jobs.engine.commit.idempotency import record_key_update
from spark_jobs.engine.commit.manifest_writers import write_entries
from spark_jobs.engine.commit.row_lineage import ManifestListWriterV3, first_row_id_of_next_snapshot
from spark_jobs.engine.commit.snapshot_change import SnapshotChange, removal_key
from spark_jobs.engine.shared.errors import EngineError
from spark_jobs.engine.table.manifest_cache import cached_live_entries
from spark_jobs.engine.table.manifest_entries import content_size_in_bytes, read_manifest_list

log = logging.getLogger(__name__)

# Writes one manifest of the given content and partition spec id holding the entries.
ManifestWrite = Callable[[ManifestContent, int, list[ManifestEntry]], ManifestFile]


class CommitConflictError(EngineError):
    """The table changed in a way that makes this commit unsafe; nothing was committed."""


@dataclass
class BuiltSnapshot:
    """One attempt's snapshot, the catalog updates and requirements that commit it, and the files it wrote."""

    snapshot: Snapshot
    updates: tuple[TableUpdate, ...]
    requirements: tuple[TableRequirement, ...]
    written_paths: list[str] = field(default_factory=list)
    removed_files: list[DataFile] = field(default_factory=list)


class SnapshotProducer:
    """Builds the snapshot of one change; ``build`` may run again on newer metadata after a lost race."""

    def __init__(self, change: SnapshotChange, *, branch: str = MAIN_BRANCH, snapshot_id: int | None = None) -> None:
        self.change = change
        self.branch = branch
        self._snapshot_id = snapshot_id if snapshot_id is not None else change.snapshot_id

    def snapshot_id(self, metadata: TableMetadata) -> int:
        """The new snapshot's id: chosen once and kept across attempts, so a landed attempt can be recognised."""
        if self._snapshot_id is None:
            self._snapshot_id = metadata.new_snapshot_id()
        return self._snapshot_id

    def build(self, table: Table) -> BuiltSnapshot:
        """Write the manifests and manifest list of the change on ``table``'s current metadata."""
        metadata = table.metadata
        format_version = metadata.format_version
        snapshot_id = self.snapshot_id(metadata)
        parent = metadata.snapshot_by_name(self.branch)
        ref = metadata.refs.get(self.branch)
        if ref is not None and ref.snapshot_ref_type != SnapshotRefType.BRANCH:
            raise CommitConflictError(f"{self.branch} of table {_name(table)} is a tag; commits go to branches")
        commit_uuid = uuid.uuid4()
        compression = metadata.properties.get(
            TableProperties.WRITE_AVRO_COMPRESSION, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT
        )
        built = BuiltSnapshot(snapshot=None, updates=(), requirements=())  # type: ignore[arg-type]
        manifest_counter = iter(range(1_000_000))

        def new_output(name: str) -> OutputFile:
            path = table.location_provider().new_metadata_location(name)
            built.written_paths.append(path)
            return table.io.new_output(path)

        def write(content: ManifestContent, spec_id: int, entries: list[ManifestEntry]) -> ManifestFile:
            return write_entries(
                content=content,
                entries=entries,
                spec=metadata.specs()[spec_id],
                schema=metadata.schema(),
                output_file=new_output(f"{commit_uuid}-m{next(manifest_counter)}.avro"),
                snapshot_id=snapshot_id,
                compression=compression,  # type: ignore[arg-type]
                format_version=format_version,
            )

        try:
            manifests = self._carried_manifests(table, parent, snapshot_id, built, write)
            manifests += self._added_manifests(snapshot_id, write)
            manifests += self.change.added_manifests
            sequence_number = metadata.next_sequence_number()
            list_path_output = new_output(f"snap-{snapshot_id}-1-{commit_uuid}.avro")
            first_row_id = first_row_id_of_next_snapshot(metadata) if format_version >= 3 else None
            list_writer: ManifestListWriter
            v3_writer: ManifestListWriterV3 | None = None  # counts the row ids its data manifests assign
            if first_row_id is not None:
                list_writer = v3_writer = ManifestListWriterV3(
                    list_path_output,
                    snapshot_id=snapshot_id,
                    parent_snapshot_id=parent.snapshot_id if parent else None,
                    sequence_number=sequence_number,
                    compression=compression,  # type: ignore[arg-type]
                    first_row_id=first_row_id,
                )
            else:
                list_writer = write_manifest_list(
                    format_version=2,
                    output_file=list_path_output,
                    snapshot_id=snapshot_id,
                    parent_snapshot_id=parent.snapshot_id if parent else None,
                    sequence_number=sequence_number,
                    avro_compression=compression,  # type: ignore[arg-type]
                )
            with list_writer:
                list_writer.add_manifests(manifests)
        except BaseException:
            delete_quietly(table, built.written_paths)
            raise
        built.snapshot = Snapshot(
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            manifest_list=list_path_output.location,
            summary=self._summary(metadata, parent, built.removed_files),
            schema_id=self._schema_id(metadata),
            first_row_id=first_row_id,
            added_rows=None if v3_writer is None or first_row_id is None else v3_writer.next_row_id - first_row_id,
        )
        built.updates = (
            *self.change.extra_updates,
            AddSnapshotUpdate(snapshot=built.snapshot),
            SetSnapshotRefUpdate(
                snapshot_id=snapshot_id,
                parent_snapshot_id=parent.snapshot_id if parent else None,
                ref_name=self.branch,
                type=SnapshotRefType.BRANCH,
                max_ref_age_ms=None,
                max_snapshot_age_ms=None,
                min_snapshots_to_keep=None,
            ),
            *self._key_updates(metadata, snapshot_id),
        )
        built.requirements = (
            AssertTableUUID(uuid=metadata.table_uuid),
            AssertRefSnapshotId(snapshot_id=ref.snapshot_id if ref else None, ref=self.branch),
            *self.change.extra_requirements,
        )
        return built

    def _carried_manifests(
        self, table: Table, parent: Snapshot | None, snapshot_id: int, built: BuiltSnapshot, write: ManifestWrite
    ) -> list[ManifestFile]:
        """The parent's manifests with live files; those holding removed files rewritten (see module doc)."""
        if parent is None:
            missing = (
                self.change.removed_data_file_paths
                | self.change.removed_delete_file_keys
                | self.change.replaced_manifest_paths
            )
            if missing:
                raise CommitConflictError(
                    f"table {_name(table)} has no snapshot, so it has none of the files to remove, "
                    f"e.g. {sorted(missing)[0]}"
                )
            return []
        carried: list[ManifestFile] = []
        found: set[str] = set()
        replaced = self.change.replaced_manifest_paths
        for manifest in read_manifest_list(parent, table.io):
            if manifest.manifest_path in replaced:
                found.add(manifest.manifest_path)
                continue
            if not (manifest.has_added_files() or manifest.has_existing_files()):
                continue
            removed = (
                self.change.removed_data_file_paths
                if manifest.content == ManifestContent.DATA
                else self.change.removed_delete_file_keys
            )
            if not removed:
                carried.append(manifest)
                continue
            # Every field, v3's included; through the process cache (the planner of this change read most of them).
            entries = cached_live_entries([manifest], table.io)[0]
            if not any(self._is_removed(entry.data_file, removed) for entry in entries):
                carried.append(manifest)
                continue
            rewritten = []
            for entry in entries:
                is_removed = self._is_removed(entry.data_file, removed)
                if is_removed:
                    found.update((entry.data_file.file_path, removal_key(entry.data_file)))
                    built.removed_files.append(entry.data_file)
                rewritten.append(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.DELETED if is_removed else ManifestEntryStatus.EXISTING,
                        snapshot_id=snapshot_id if is_removed else entry.snapshot_id,
                        sequence_number=entry.sequence_number,
                        file_sequence_number=entry.file_sequence_number,
                        data_file=entry.data_file,
                    )
                )
            carried.append(write(manifest.content, manifest.partition_spec_id, rewritten))
        missing = (self.change.removed_data_file_paths | self.change.removed_delete_file_keys | replaced) - found
        if missing:
            raise CommitConflictError(
                f"table {_name(table)} at snapshot {parent.snapshot_id} no longer holds {len(missing)} file(s) this "
                f"commit removes, e.g. {sorted(missing)[0]}"
            )
        return carried

    @staticmethod
    def _is_removed(data_file: DataFile, removed: set[str]) -> bool:
        """A file removed by path, or a deletion vector removed by its own key (path and offset)."""
        return data_file.file_path in removed or removal_key(data_file) in removed

    def _added_manifests(self, snapshot_id: int, write: ManifestWrite) -> list[ManifestFile]:
        """ADDED entries for the new data and delete files, one manifest per content and partition spec."""
        groups: dict[tuple[ManifestContent, int], list[ManifestEntry]] = defaultdict(list)
        for content, files in (
            (ManifestContent.DATA, self.change.added_data_files),
            (ManifestContent.DELETES, self.change.added_delete_files),
        ):
            for data_file in files:
                groups[(content, data_file.spec_id)].append(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED,
                        snapshot_id=snapshot_id,
                        sequence_number=self.change.data_sequence_numbers.get(
                            data_file.file_path, self.change.data_sequence_number
                        ),
                        file_sequence_number=None,
                        data_file=data_file,
                    )
                )
        return [write(content, spec_id, entries) for (content, spec_id), entries in groups.items()]

    def _summary(self, metadata: TableMetadata, parent: Snapshot | None, removed: list[DataFile]) -> Summary:
        """What was added and removed, the totals after this snapshot, and the change's own properties."""
        collector = SnapshotSummaryCollector()
        schema = metadata.schema()
        specs = metadata.specs()
        for data_file in [*self.change.added_data_files, *self.change.added_delete_files]:
            collector.add_file(_as_summarized(data_file), schema=schema, partition_spec=specs[data_file.spec_id])
        for data_file in removed:
            collector.remove_file(_as_summarized(data_file), schema=schema, partition_spec=specs[data_file.spec_id])
        # pyiceberg carries totals for append/overwrite/delete only; totals do not depend on the operation.
        totals = update_snapshot_summaries(
            Summary(Operation.OVERWRITE, **collector.build()), parent.summary if parent else None
        )
        properties = {**totals.additional_properties, **self.change.summary_with_key()}
        return Summary(self.change.operation, **properties)

    def _key_updates(self, metadata: TableMetadata, snapshot_id: int) -> tuple[TableUpdate, ...]:
        """The update recording the change's idempotency key for the branch (none without a key)."""
        if self.change.idempotency_key is None:
            return ()
        return (record_key_update(metadata, self.change.idempotency_key, snapshot_id, self.branch),)

    def _schema_id(self, metadata: TableMetadata) -> int:
        """The schema the snapshot is written with: a schema added by the same commit, else the current one."""
        from pyiceberg.table.update import AddSchemaUpdate

        for update in self.change.extra_updates:
            if isinstance(update, AddSchemaUpdate):
                return update.schema_.schema_id
        return metadata.current_schema_id


_FILE_SIZE = [field.name for field in DATA_FILE_TYPE[3].fields].index("file_size_in_bytes")


def _as_summarized(data_file: DataFile) -> DataFile:
    """A deletion vector counts its blob's bytes in the summary sizes, as Java's does, not its whole Puffin file."""
    size = content_size_in_bytes(data_file)
    if size is None:
        return data_file
    copied = DataFile(*(data_file[i] for i in range(len(data_file))))
    copied[_FILE_SIZE] = size
    copied.spec_id = data_file.spec_id
    return copied


def delete_quietly(table: Table, paths: list[str]) -> list[str]:
    """Delete ``paths`` through the table's FileIO; returns (and logs) those that could not be deleted."""
    left = []
    for path in paths:
        try:
            table.io.delete(path)
        except FileNotFoundError:
            continue
        except Exception as error:  # reported to the caller and in the log, so the file is not lost track of
            log.warning("could not delete %s (left behind): %s", path, error)
            left.append(path)
    return left


def _name(table: Table) -> str:
    return ".".join(table.name())
