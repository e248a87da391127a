"""Upgrade a table to format v3 with a snapshot of deletion vectors in a Puffin file.

pyiceberg 0.12 reads v3 metadata but writes no v3 table metadata, manifest, manifest list or Puffin file. This
module does what Java's format upgrade and a v3 ``RowDelta`` with deletion vectors do, on pyiceberg's classes:

1. ``write_deletion_vectors``: one Puffin file (spec: format/puffin-spec.md) holding one ``deletion-vector-v1`` blob
   per data file: a 4-byte big-endian length, the magic ``D1 D3 39 64``, the positions as a portable 64-bit Roaring
   bitmap (pyroaring's ``BitMap64`` serializes exactly that layout) and a big-endian CRC-32 of magic and bitmap;
   then the footer (magic, JSON payload listing every blob's offset, length and referenced data file, payload size,
   flags, magic). Each blob becomes a position-delete ``DataFile`` with ``referenced_data_file``,
   ``content_offset`` and ``content_size_in_bytes``.
2. ``commit_deletion_vectors_upgrading_to_v3``: the upgrade of a v2 table to v3 together with a row delta of
   deletion vectors: a v3 delete manifest, a v3 manifest list of the parent's manifests plus that one (data
   manifests get ``first_row_id``, per row lineage), and the snapshot with ``first-row-id`` and ``added-rows``.
"""

from __future__ import annotations

import json
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from iceberg_deletes import AVRO_CODEC, MAIN_BRANCH, delete_summary
from pyiceberg.avro.file import AvroFile, AvroOutputFile
from pyiceberg.catalog import Catalog
from pyiceberg.manifest import (
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestListWriter,
    ManifestWriterV2,
    PartitionFieldSummary,
)
from pyiceberg.table import Table
from pyiceberg.table.metadata import _generate_snapshot_id
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.typedef import Record
from pyiceberg.types import StructType
from pyroaring import BitMap64

FORMAT_VERSION = 3
PUFFIN_MAGIC = b"PFA1"
DELETION_VECTOR_MAGIC = b"\xd1\xd3\x39\x64"
ROW_POSITION_FIELD_ID = 2147483645  # the _pos metadata column, which a deletion vector blob names (as Java writes)


class ManifestWriterV3(ManifestWriterV2):
    """A v3 manifest writer whose entries keep the v3 data file fields (referenced file, content offset and size)."""

    def __init__(self, *args: Any, content: ManifestContent) -> None:
        super().__init__(*args)
        self._content = content

    def content(self) -> ManifestContent:
        """Data or deletes, as given."""
        return self._content

    @property
    def version(self) -> int:  # type: ignore[override]
        """Format version 3."""
        return FORMAT_VERSION

    @property
    def _meta(self) -> dict[str, str]:
        content = "deletes" if self._content == ManifestContent.DELETES else "data"
        return {**super()._meta, "content": content}

    def new_writer(self) -> AvroOutputFile[ManifestEntry]:
        """Records bound to the v3 schema too, so the v3-only data file fields are written."""
        schema = self._with_partition(FORMAT_VERSION)
        return AvroOutputFile[ManifestEntry](
            output_file=self._output_file,
            file_schema=schema,
            record_schema=schema,
            schema_name="manifest_entry",
            metadata=self._meta,
        )


class ManifestListWriterV3(ManifestListWriter):
    """A v3 manifest list: sequence numbers as in v2, and ``first_row_id`` assigned to data manifests without one."""

    def __init__(
        self, output_file: Any, snapshot_id: int, parent_snapshot_id: int, sequence_number: int, first_row_id: int
    ) -> None:
        super().__init__(
            format_version=FORMAT_VERSION,
            output_file=output_file,
            meta={
                "snapshot-id": str(snapshot_id),
                "parent-snapshot-id": str(parent_snapshot_id) if parent_snapshot_id is not None else "null",
                "sequence-number": str(sequence_number),
                "first-row-id": str(first_row_id),
                "format-version": str(FORMAT_VERSION),
                "avro.codec": AVRO_CODEC,
            },
        )
        schema = MANIFEST_LIST_FILE_SCHEMAS[FORMAT_VERSION]
        self._writer = AvroOutputFile[ManifestFile](
            output_file=output_file,
            record_schema=schema,
            file_schema=schema,
            schema_name="manifest_file",
            metadata=self._meta,
        )
        self._snapshot_id = snapshot_id
        self._sequence_number = sequence_number
        self.next_row_id = first_row_id

    def prepare_manifest(self, manifest_file: ManifestFile) -> ManifestFile:
        """The manifest bound to the v3 list schema, with this commit's sequence number and row ids filled in."""
        values = _values_by_name(manifest_file, MANIFEST_LIST_FILE_SCHEMAS[FORMAT_VERSION].as_struct())
        if values["sequence_number"] == -1:
            values["sequence_number"] = self._sequence_number
        if values["min_sequence_number"] == -1:
            values["min_sequence_number"] = self._sequence_number
        if values["first_row_id"] is None and values["content"] == ManifestContent.DATA:
            values["first_row_id"] = self.next_row_id
            self.next_row_id += (values["added_rows_count"] or 0) + (values["existing_rows_count"] or 0)
        return ManifestFile.from_args(_table_format_version=FORMAT_VERSION, **values)


def _values_by_name(record: Record, struct: StructType) -> dict[str, Any]:
    """A positional record's values by field name; fields past its end (a record of an older schema) are None."""
    return {field.name: record[i] if i < len(record) else None for i, field in enumerate(struct.fields)}


def read_manifests_v3(table: Table, snapshot: Snapshot) -> list[ManifestFile]:
    """A snapshot's manifest list read with the v3 schema, so ``first_row_id`` survives into the next list."""
    with AvroFile[ManifestFile](
        table.io.new_input(snapshot.manifest_list),
        MANIFEST_LIST_FILE_SCHEMAS[FORMAT_VERSION],
        read_types={-1: ManifestFile, 508: PartitionFieldSummary},
        read_enums={517: ManifestContent},
    ) as reader:
        return list(reader)


def write_deletion_vectors(path: Path, positions_by_data_file: dict[str, np.ndarray]) -> list[DataFile]:
    """One Puffin file with a deletion vector per data file; the manifest's DataFile of each blob."""
    content = bytearray(PUFFIN_MAGIC)
    blobs: list[dict[str, Any]] = []
    for data_file_uri, positions in positions_by_data_file.items():
        bitmap = BitMap64(np.unique(positions).astype(np.uint64).tolist())
        framed = DELETION_VECTOR_MAGIC + bitmap.serialize()
        blob = len(framed).to_bytes(4, "big") + framed + zlib.crc32(framed).to_bytes(4, "big")
        blobs.append(
            {
                "type": "deletion-vector-v1",
                "fields": [ROW_POSITION_FIELD_ID],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": len(content),
                "length": len(blob),
                "properties": {"referenced-data-file": data_file_uri, "cardinality": str(len(bitmap))},
            }
        )
        content += blob
    payload = json.dumps({"blobs": blobs, "properties": {"created-by": "airflow-iceberg-provider bench"}}).encode()
    content += PUFFIN_MAGIC + payload + len(payload).to_bytes(4, "little") + (0).to_bytes(4, "little") + PUFFIN_MAGIC
    path.write_bytes(bytes(content))
    puffin_uri = f"file://{path.resolve()}"
    return [
        DataFile.from_args(
            _table_format_version=FORMAT_VERSION,
            content=DataFileContent.POSITION_DELETES,
            file_path=puffin_uri,
            file_format=FileFormat.PUFFIN,
            partition=Record(),
            record_count=int(blob["properties"]["cardinality"]),
            file_size_in_bytes=len(content),
            referenced_data_file=blob["properties"]["referenced-data-file"],
            content_offset=blob["offset"],
            content_size_in_bytes=blob["length"],
            spec_id=0,
        )
        for blob in blobs
    ]


def commit_deletion_vectors_upgrading_to_v3(
    catalog: Catalog, identifier: str, table: Table, dv_files: list[DataFile]
) -> Table:
    """Upgrade a v2 table to v3 and commit ``dv_files`` in one new snapshot on main; returns the reloaded table.

    pyiceberg 0.12 refuses to serialize v3 table metadata, so the new metadata file is the current one's JSON with
    ``format-version`` 3, ``next-row-id``, the snapshot and main moved to it, written here and registered in the
    catalog in place of the v2 table (a SQL catalog's drop removes only its row; no file is deleted).
    """
    metadata = table.metadata
    parent = table.current_snapshot()
    if metadata.format_version != 2 or parent is None:
        raise ValueError(f"table {identifier} must be a v2 table with a snapshot, got v{metadata.format_version}")
    snapshot_id = _generate_snapshot_id()
    sequence_number = metadata.next_sequence_number()
    commit_uuid = uuid.uuid4()
    locations = table.location_provider()

    manifest_path = locations.new_metadata_location(f"{commit_uuid}-m0.avro")
    with ManifestWriterV3(
        metadata.spec(),
        metadata.schema(),
        table.io.new_output(manifest_path),
        snapshot_id,
        AVRO_CODEC,
        content=ManifestContent.DELETES,
    ) as writer:
        for dv_file in dv_files:
            writer.add_entry(
                ManifestEntry.from_args(
                    _table_format_version=FORMAT_VERSION,
                    status=ManifestEntryStatus.ADDED,
                    snapshot_id=snapshot_id,
                    sequence_number=None,
                    data_file=dv_file,
                )
            )
    manifests = [*read_manifests_v3(table, parent), writer.to_manifest_file()]

    first_row_id = 0  # an upgraded table's row ids start at 0; existing data manifests get theirs in this list
    manifest_list_path = locations.new_metadata_location(f"snap-{snapshot_id}-0-{commit_uuid}.avro")
    with ManifestListWriterV3(
        table.io.new_output(manifest_list_path), snapshot_id, parent.snapshot_id, sequence_number, first_row_id
    ) as manifest_list:
        manifest_list.add_manifests(manifests)

    now_ms = int(time.time() * 1000)
    summary = delete_summary(table, dv_files, parent.summary)
    document = json.loads(metadata.model_dump_json())
    document["format-version"] = FORMAT_VERSION
    document["next-row-id"] = manifest_list.next_row_id
    document["last-sequence-number"] = sequence_number
    document["last-updated-ms"] = now_ms
    document["snapshots"].append(
        {
            "snapshot-id": snapshot_id,
            "parent-snapshot-id": parent.snapshot_id,
            "sequence-number": sequence_number,
            "timestamp-ms": now_ms,
            "manifest-list": manifest_list_path,
            "summary": {"operation": summary.operation.value, **summary.additional_properties},
            "schema-id": metadata.current_schema_id,
            "first-row-id": first_row_id,
            "added-rows": manifest_list.next_row_id - first_row_id,
        }
    )
    document["current-snapshot-id"] = snapshot_id
    document["refs"] = {**document.get("refs", {}), MAIN_BRANCH: {"snapshot-id": snapshot_id, "type": "branch"}}
    document["snapshot-log"] = [*document.get("snapshot-log", []), {"snapshot-id": snapshot_id, "timestamp-ms": now_ms}]
    document["metadata-log"] = [
        *document.get("metadata-log", []),
        {"metadata-file": table.metadata_location, "timestamp-ms": metadata.last_updated_ms},
    ]
    metadata_location = locations.new_metadata_location(f"00002-{commit_uuid}.metadata.json")
    with table.io.new_output(metadata_location).create(overwrite=False) as out:
        out.write(json.dumps(document).encode())
    catalog.drop_table(identifier)
    return catalog.register_table(identifier, metadata_location)
