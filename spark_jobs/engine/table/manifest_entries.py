"""Live manifest entries with every field the spec defines, v3 deletion-vector fields included.

pyiceberg 0.12's ``ManifestFile.fetch_manifest_entry`` reads entries with the v2 entry schema, which drops
``referenced_data_file``, ``content_offset`` and ``content_size_in_bytes`` (v3). We read the same Avro files with
pyiceberg's reader and the v3 entry schema (a superset: v1 and v2 manifests read with it too, the new fields None):

1. Read every entry of the manifest with ``MANIFEST_ENTRY_SCHEMAS[3]``; drop DELETED entries (not live).
2. Inherit what the spec says an entry inherits from its manifest (sequence-number inheritance): the snapshot id;
   the data and file sequence numbers of ADDED entries (all entries of v1 manifests, whose sequence number is 0);
   the partition spec id.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.avro.file import AvroFile
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DATA_FILE_TYPE,
    MANIFEST_ENTRY_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.table.snapshots import Snapshot

from spark_jobs.engine.shared.errors import file_error

_V3_DATA_FILE_FIELDS = [field.name for field in DATA_FILE_TYPE[3].fields]
_REFERENCED_DATA_FILE = _V3_DATA_FILE_FIELDS.index("referenced_data_file")
_CONTENT_OFFSET = _V3_DATA_FILE_FIELDS.index("content_offset")
_CONTENT_SIZE_IN_BYTES = _V3_DATA_FILE_FIELDS.index("content_size_in_bytes")


def read_live_entries(manifest: ManifestFile, io: FileIO) -> list[ManifestEntry]:
    """The manifest's ADDED and EXISTING entries, with sequence numbers and spec id inherited from the manifest.

    A manifest that is missing or does not decode raises CorruptFileError naming it.
    """
    try:
        with AvroFile[ManifestEntry](
            io.new_input(manifest.manifest_path),
            MANIFEST_ENTRY_SCHEMAS[3],
            read_types={-1: ManifestEntry, 2: DataFile},
            read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
        ) as reader:
            return [_inherit(entry, manifest) for entry in reader if entry.status != ManifestEntryStatus.DELETED]
    except Exception as error:  # named when it is the file's fault, re-raised as it was otherwise
        raise file_error("manifest", manifest.manifest_path, error) from error


def read_manifest_list(snapshot: Snapshot, io: FileIO) -> list[ManifestFile]:
    """The manifests ``snapshot``'s manifest list names; a missing or damaged list raises CorruptFileError."""
    try:
        return list(snapshot.manifests(io))
    except Exception as error:  # named when it is the file's fault, re-raised as it was otherwise
        raise file_error("manifest list", str(snapshot.manifest_list), error) from error


def referenced_data_file(data_file: DataFile) -> str | None:
    """The one data file all of a delete file's rows refer to (spec field 143), when the writer recorded it."""
    return data_file[_REFERENCED_DATA_FILE] if len(data_file) > _REFERENCED_DATA_FILE else None


def content_offset(data_file: DataFile) -> int | None:
    """Where a deletion vector's blob starts in its Puffin file (spec field 144)."""
    return data_file[_CONTENT_OFFSET] if len(data_file) > _CONTENT_OFFSET else None


def partition_values(content_file: DataFile) -> tuple[Any, ...]:
    """A data or delete file's partition (pyiceberg's ``Record``) as a plain, hashable tuple."""
    partition = content_file.partition
    return tuple(partition[position] for position in range(len(partition))) if partition is not None else ()


def content_size_in_bytes(data_file: DataFile) -> int | None:
    """The byte length of a deletion vector's blob (spec field 145)."""
    return data_file[_CONTENT_SIZE_IN_BYTES] if len(data_file) > _CONTENT_SIZE_IN_BYTES else None


def _inherit(entry: ManifestEntry, manifest: ManifestFile) -> ManifestEntry:
    """Fill what an entry inherits from its manifest (spec: sequence number inheritance) and return it."""
    if entry.snapshot_id is None and manifest.added_snapshot_id is not None:
        entry.snapshot_id = manifest.added_snapshot_id
    inherits_sequence_numbers = manifest.sequence_number == 0 or entry.status == ManifestEntryStatus.ADDED
    if entry.sequence_number is None and inherits_sequence_numbers:
        entry.sequence_number = manifest.sequence_number
    if entry.file_sequence_number is None and inherits_sequence_numbers:
        entry.file_sequence_number = manifest.sequence_number
    entry.data_file.spec_id = manifest.partition_spec_id
    return entry
