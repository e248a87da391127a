"""Format v2 manifests of either content: DATA (pyiceberg's writer) and DELETES (the same writer, content 1).

pyiceberg 0.12's ``ManifestWriterV2`` always declares ``content = data``; the v2 entry schema it writes already has
every delete-file field (``content``, ``equality_ids``), so a delete manifest differs only in the declared content,
in the manifest-list entry and in the Avro metadata.
"""

from __future__ import annotations

from pyiceberg.avro.codecs import AvroCompressionCodec
from pyiceberg.io import OutputFile
from pyiceberg.manifest import DataFileContent, ManifestContent, ManifestEntry, ManifestFile, ManifestWriterV2
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema


class DeleteManifestWriterV2(ManifestWriterV2):
    """A v2 manifest of delete files (position and equality deletes)."""

    def content(self) -> ManifestContent:
        """Delete manifests declare content DELETES in the manifest list."""
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


def write_entries(
    *,
    content: ManifestContent,
    entries: list[ManifestEntry],
    spec: PartitionSpec,
    schema: Schema,
    output_file: OutputFile,
    snapshot_id: int,
    compression: AvroCompressionCodec,
) -> ManifestFile:
    """Write ``entries`` (statuses and sequence numbers as given) to one v2 manifest and return its list entry."""
    writer_class = DeleteManifestWriterV2 if content == ManifestContent.DELETES else ManifestWriterV2
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
