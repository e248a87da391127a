"""Live manifest entries with every field the spec defines, v3 deletion-vector fields included.

pyiceberg 0.12's ``ManifestFile.fetch_manifest_entry`` reads entries with the v2 entry schema, which drops
``referenced_data_file``, ``content_offset`` and ``content_size_in_bytes`` (v3). We read the same Avro files with
pyiceberg's reader and the v3 entry schema (a superset: v1 and v2 manifests read with it too, the new fields None):

1. Read every entry of the manifest with ``MANIFEST_ENTRY_SCHEMAS[3]``; drop DELETED entries (not live).
2. Inherit what the spec says an entry inherits from its manifest (sequence-number inheritance): the snapshot id;
   the data and file sequence numbers of ADDED entries (all entries of v1 manifests, whose sequence number is 0);
   the partition spec id; a data file's ``first_row_id`` (v3 row lineage: the manifest's plus the record counts
   of the live data files before it in the manifest that had none; DELETED entries neither take nor use ids, as
   Iceberg Java reads them: the manifest list gave the manifest ids for its added and existing rows only).

Manifest lists are read the same way (``read_manifest_list``, the v3 list schema), so a v3 manifest's
``first_row_id`` survives into the next manifest list a commit writes.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.avro.file import AvroFile
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DATA_FILE_TYPE,
    MANIFEST_ENTRY_SCHEMAS,
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)
from pyiceberg.table.snapshots import Snapshot

from spark_jobs.engine.shared.errors import file_error

_V3_DATA_FILE_FIELDS = [field.name for field in DATA_FILE_TYPE[3].fields]
_REFERENCED_DATA_FILE = _V3_DATA_FILE_FIELDS.index("referenced_data_file")
_CONTENT_OFFSET = _V3_DATA_FILE_FIELDS.index("content_offset")
_CONTENT_SIZE_IN_BYTES = _V3_DATA_FILE_FIELDS.index("content_size_in_bytes")
_FIRST_ROW_ID = _V3_DATA_FILE_FIELDS.index("first_row_id")
_V3_LIST_FIELDS = [field.name for field in MANIFEST_LIST_FILE_SCHEMAS[3].fields]
_MANIFEST_FIRST_ROW_ID = _V3_LIST_FIELDS.index("first_row_id")


def read_manifest_list(snapshot: Snapshot, io: FileIO) -> list[ManifestFile]:
    """The snapshot's manifests, read with the v3 list schema (v1/v2 lists too: v3-only fields are None).

    A v1 snapshot without a list names its manifests inline. A missing or damaged list raises CorruptFileError.
    """
    if not snapshot.manifest_list:
        return list(snapshot.manifests(io))
    try:
        with AvroFile[ManifestFile](
            io.new_input(snapshot.manifest_list),
            MANIFEST_LIST_FILE_SCHEMAS[3],
            read_types={-1: ManifestFile, 508: PartitionFieldSummary},
            read_enums={517: ManifestContent},
        ) as reader:
            return list(reader)
    except Exception as error:  # named when it is the file's fault, re-raised as it was otherwise
        raise file_error("manifest list", str(snapshot.manifest_list), error) from error


def manifest_first_row_id(manifest: ManifestFile) -> int | None:
    """A data manifest's first row id (manifest list field 520, v3), when known."""
    return manifest[_MANIFEST_FIRST_ROW_ID] if len(manifest) > _MANIFEST_FIRST_ROW_ID else None


def set_first_row_id(manifest: ManifestFile, first_row_id: int) -> None:
    """Set field 520 of a manifest in the v3 list layout."""
    manifest[_MANIFEST_FIRST_ROW_ID] = first_row_id


def in_v3_list_layout(manifest: ManifestFile) -> ManifestFile:
    """``manifest`` with every field of the v3 list layout (the v3-only ones None when it had fewer)."""
    missing = len(_V3_LIST_FIELDS) - len(manifest)
    if missing <= 0:
        return manifest
    return ManifestFile(*(manifest[i] for i in range(len(manifest))), *([None] * missing))


def first_row_id(data_file: DataFile) -> int | None:
    """A data file's first row id (field 142, v3), explicit or inherited by ``read_live_entries``."""
    return data_file[_FIRST_ROW_ID] if len(data_file) > _FIRST_ROW_ID else None


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
            entries = [_inherit(entry, manifest) for entry in reader]
    except Exception as error:  # named when it is the file's fault, re-raised as it was otherwise
        raise file_error("manifest", manifest.manifest_path, error) from error
    _inherit_first_row_ids(entries, manifest)
    return [entry for entry in entries if entry.status != ManifestEntryStatus.DELETED]


def _inherit_first_row_ids(entries: list[ManifestEntry], manifest: ManifestFile) -> None:
    """Fill null first row ids of live data files from the manifest's, in manifest order (module doc, step 2)."""
    next_row_id = manifest_first_row_id(manifest)
    if next_row_id is None:
        return
    for entry in entries:
        data_file = entry.data_file
        if entry.status == ManifestEntryStatus.DELETED or data_file.content != DataFileContent.DATA:
            continue
        if data_file[_FIRST_ROW_ID] is None:
            data_file[_FIRST_ROW_ID] = next_row_id
            next_row_id += data_file.record_count


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
