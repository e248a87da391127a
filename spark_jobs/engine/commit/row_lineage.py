"""Row lineage of a v3 commit: the manifest list that assigns first row ids, and the snapshot's share of row ids.

Spec: format/spec.md, "Row Lineage" and "First Row ID Inheritance". Steps, as Iceberg Java's v3 manifest list
writer does them:

1. The snapshot's ``first-row-id`` is the table's ``next-row-id`` (0 for a table that has none yet).
2. Writing the manifest list, a data manifest without ``first_row_id`` (one this commit wrote) gets the next unused
   id, and the next id advances by its added and existing rows; manifests carried from the parent keep theirs, and
   delete manifests have none.
3. The snapshot's ``added-rows`` is the ids this commit used (next id after the list minus ``first-row-id``); the
   catalog update advances the table's ``next-row-id`` by it.
4. Data files added by this commit leave ``first_row_id`` null (inherited from their manifest on read); existing
   and deleted entries a commit rewrites carry the inherited value (``read_live_entries`` fills it).
"""

from __future__ import annotations

from copy import copy

from pyiceberg.avro.codecs import AvroCompressionCodec
from pyiceberg.avro.file import AvroOutputFile
from pyiceberg.io import OutputFile
from pyiceberg.manifest import (
    AVRO_CODEC_KEY,
    MANIFEST_LIST_FILE_SCHEMAS,
    ManifestContent,
    ManifestFile,
    ManifestListWriterV2,
)
from pyiceberg.table.metadata import TableMetadata

from spark_jobs.engine.table.manifest_entries import in_v3_list_layout, manifest_first_row_id, set_first_row_id

FORMAT_VERSION = 3


def first_row_id_of_next_snapshot(metadata: TableMetadata) -> int:
    """The table's ``next-row-id`` (step 1); a table that never assigned one starts at 0."""
    return getattr(metadata, "next_row_id", None) or 0


class ManifestListWriterV3(ManifestListWriterV2):
    """A v3 manifest list (steps 2-3): sequence numbers as in v2, first row ids for this commit's data manifests."""

    def __init__(
        self,
        output_file: OutputFile,
        *,
        snapshot_id: int,
        parent_snapshot_id: int | None,
        sequence_number: int,
        compression: AvroCompressionCodec,
        first_row_id: int,
    ) -> None:
        super().__init__(output_file, snapshot_id, parent_snapshot_id, sequence_number, compression)
        self._format_version = FORMAT_VERSION  # type: ignore[assignment]
        self._meta = {**self._meta, "format-version": str(FORMAT_VERSION), "first-row-id": str(first_row_id)}
        self.next_row_id = first_row_id

    def __enter__(self) -> ManifestListWriterV3:
        """Open the Avro writer with the v3 list schema for both the file and the records."""
        schema = MANIFEST_LIST_FILE_SCHEMAS[FORMAT_VERSION]
        self._writer = AvroOutputFile[ManifestFile](
            output_file=self._output_file,
            record_schema=schema,
            file_schema=schema,
            schema_name="manifest_file",
            metadata={**self._meta, AVRO_CODEC_KEY: self._meta[AVRO_CODEC_KEY]},
        )
        self._writer.__enter__()
        return self

    def prepare_manifest(self, manifest_file: ManifestFile) -> ManifestFile:
        """Sequence numbers as v2 does; a data manifest without a first row id gets the next ones (step 2)."""
        prepared = in_v3_list_layout(super().prepare_manifest(copy(manifest_file)))
        if prepared.content == ManifestContent.DATA and manifest_first_row_id(prepared) is None:
            set_first_row_id(prepared, self.next_row_id)
            self.next_row_id += (prepared.added_rows_count or 0) + (prepared.existing_rows_count or 0)
        return prepared
