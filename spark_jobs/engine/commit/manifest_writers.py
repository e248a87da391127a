"""Manifests (format v2 and v3) of either content, DATA or DELETES, with the entry schema the spec defines.

pyiceberg 0.12's ``ManifestWriterV2`` always declares ``content = data`` and writes an entry schema that departs from
the spec (format/spec.md, "Data File Fields") in two ways:

1. ``equality_ids`` (135) is ``list<136: long>``; the spec says ``list<136: int>``. The bytes of the values are the
   same zig-zag varints, but the schema in the file header says long, and Iceberg Java reads it as ``Long`` and fails
   with a ``ClassCastException`` in ``ArrayUtil.toIntArray`` when it loads a delete manifest.
2. ``referenced_data_file`` (143, optional in v2) is missing, so a position delete file's single target is lost.

``manifest_entry_schema`` builds the spec's entry schema from pyiceberg's (same fields, ids and order, with those
two corrections), and every writer here uses it; v3 writers declare format-version 3 and write the v3 fields
(``first_row_id``, ``content_offset``, ``content_size_in_bytes``).
"""

from __future__ import annotations

from pyiceberg.avro.codecs import AvroCompressionCodec
from pyiceberg.avro.file import AvroOutputFile
from pyiceberg.io import OutputFile
from pyiceberg.manifest import (
    DATA_FILE_TYPE,
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    ManifestWriterV2,
    data_file_with_partition,
    manifest_entry_schema_with_data_file,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.typedef import TableVersion
from pyiceberg.types import IntegerType, ListType, NestedField, StructType

EQUALITY_IDS_FIELD_ID = 135
REFERENCED_DATA_FILE_FIELD_ID = 143
PARTITION_FIELD_ID = 102
# Entries are handed to the Avro writer in pyiceberg's v3 data file layout, a superset of v2's (v2 fields, then v3's).
RECORD_VERSION: TableVersion = 3


def in_record_layout(data_file: DataFile) -> DataFile:
    """``data_file`` with every field of the v3 layout (a v2-layout record gets the v3-only fields as null)."""
    missing = len(DATA_FILE_TYPE[RECORD_VERSION].fields) - len(data_file)
    if missing <= 0:
        return data_file
    padded = DataFile(*(data_file[i] for i in range(len(data_file))), *([None] * missing))
    if hasattr(data_file, "_spec_id"):
        padded.spec_id = data_file.spec_id
    return padded


def data_file_type(format_version: TableVersion, partition: NestedField | None = None) -> StructType:
    """The spec's ``data_file`` struct of ``format_version`` on pyiceberg's fields (module doc), with ``partition``."""
    fields = []
    for field in DATA_FILE_TYPE[format_version].fields:
        if field.field_id == EQUALITY_IDS_FIELD_ID:
            element = field.field_type
            assert isinstance(element, ListType)
            int_list = ListType(element_id=element.element_id, element_type=IntegerType(), element_required=True)
            fields.append(field.model_copy(update={"field_type": int_list}))
        elif field.field_id == PARTITION_FIELD_ID and partition is not None:
            fields.append(partition)
        else:
            fields.append(field)
    if all(field.field_id != REFERENCED_DATA_FILE_FIELD_ID for field in fields):
        referenced_data_file = DATA_FILE_TYPE[3].field(REFERENCED_DATA_FILE_FIELD_ID)  # same definition in v2 and v3
        assert referenced_data_file is not None  # pyiceberg's v3 data_file struct defines it
        fields.append(referenced_data_file)
    return StructType(*fields)


def manifest_entry_schema(format_version: TableVersion, spec: PartitionSpec, schema: Schema) -> Schema:
    """The manifest entry schema of ``format_version`` for files of ``spec`` (module doc: pyiceberg's, corrected)."""
    with_partition = data_file_with_partition(partition_type=spec.partition_type(schema), format_version=format_version)
    partition = with_partition.field(PARTITION_FIELD_ID)
    return manifest_entry_schema_with_data_file(
        format_version=format_version, data_file=data_file_type(format_version, partition)
    )


class DataManifestWriterV2(ManifestWriterV2):
    """A v2 manifest of data files whose entry schema is the spec's (module doc)."""

    format_version: TableVersion = 2

    @property
    def version(self) -> TableVersion:
        """The manifest's format version."""
        return self.format_version

    def new_writer(self) -> AvroOutputFile[ManifestEntry]:
        """An Avro writer with the spec's v2 file schema over entries in pyiceberg's v3 layout (``prepare_entry``)."""
        return AvroOutputFile[ManifestEntry](
            output_file=self._output_file,
            file_schema=manifest_entry_schema(self.version, self._spec, self._schema),
            record_schema=manifest_entry_schema(RECORD_VERSION, self._spec, self._schema),
            schema_name="manifest_entry",
            metadata=self._meta,
        )

    def prepare_entry(self, entry: ManifestEntry) -> ManifestEntry:
        """pyiceberg's checks, then the data file in the v3 layout (records of either layout are accepted)."""
        entry = super().prepare_entry(entry)
        return ManifestEntry.from_args(
            status=entry.status,
            snapshot_id=entry.snapshot_id,
            sequence_number=entry.sequence_number,
            file_sequence_number=entry.file_sequence_number,
            data_file=in_record_layout(entry.data_file),
        )


class DeleteManifestWriterV2(DataManifestWriterV2):
    """A v2 manifest of delete files (position and equality deletes)."""

    def content(self) -> ManifestContent:
        """Delete manifests declare content DELETES in the manifest list."""
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class DataManifestWriterV3(DataManifestWriterV2):
    """A v3 manifest of data files: the v3 entry schema (first_row_id, deletion vector fields), format-version 3."""

    format_version: TableVersion = 3


class DeleteManifestWriterV3(DeleteManifestWriterV2):
    """A v3 manifest of delete files: deletion vectors (Puffin blobs) and equality deletes."""

    format_version: TableVersion = 3


_WRITERS = {
    (2, ManifestContent.DATA): DataManifestWriterV2,
    (2, ManifestContent.DELETES): DeleteManifestWriterV2,
    (3, ManifestContent.DATA): DataManifestWriterV3,
    (3, ManifestContent.DELETES): DeleteManifestWriterV3,
}


def write_entries(
    *,
    content: ManifestContent,
    entries: list[ManifestEntry],
    spec: PartitionSpec,
    schema: Schema,
    output_file: OutputFile,
    snapshot_id: int,
    compression: AvroCompressionCodec,
    format_version: TableVersion = 2,
) -> ManifestFile:
    """Write ``entries`` (statuses and sequence numbers as given) to one manifest and return its list entry."""
    writer_class = _WRITERS[(format_version, content)]
    for entry in entries:
        is_delete_file = entry.data_file.content != DataFileContent.DATA
        if is_delete_file != (content == ManifestContent.DELETES):
            raise ValueError(
                f"file {entry.data_file.file_path} (content {entry.data_file.content.name}) does not belong in a "
                f"{content.name} manifest"
            )
    with writer_class(spec, schema, output_file, snapshot_id, compression) as writer:
        for entry in entries:
            writer.add_entry(entry)
    return writer.to_manifest_file()
