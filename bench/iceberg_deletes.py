"""Write and commit Iceberg v2 delete files (position and equality) with pyiceberg's metadata model.

pyiceberg 0.12 reads delete files but has no public API to commit them: its manifest writers only write data
manifests and its snapshot producers only add or remove data files. This module does what a Java ``RowDelta``
does, on pyiceberg's own classes: a delete manifest (a ``ManifestWriterV2`` whose content is DELETES), a manifest
list of the parent's manifests plus that one, and a snapshot committed with ``AddSnapshotUpdate`` and
``SetSnapshotRefUpdate`` under an ``AssertRefSnapshotId`` requirement, exactly like ``_SnapshotProducer._commit``.
The new snapshot gets the table's next sequence number, so its deletes apply to the data committed before.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.conversions import to_bytes
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestWriterV2,
    write_manifest_list,
)
from pyiceberg.table import Table
from pyiceberg.table.metadata import _generate_snapshot_id
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, SnapshotSummaryCollector, Summary, update_snapshot_summaries
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, StringType

# Reserved field ids of a position delete file's columns (Iceberg spec, "Position Delete Files").
DELETE_FILE_PATH_FIELD_ID = 2147483546
DELETE_POS_FIELD_ID = 2147483545
AVRO_CODEC = "deflate"
MAIN_BRANCH = "main"


class DeleteManifestWriterV2(ManifestWriterV2):
    """A v2 manifest writer for delete files: same entries, content DELETES in the manifest and its metadata."""

    def content(self) -> ManifestContent:
        """Delete manifests carry ``content = 1`` in the manifest list."""
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


def _field(name: str, arrow_type: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, arrow_type, nullable=False, metadata={b"PARQUET:field_id": str(field_id).encode()})


POSITION_DELETE_SCHEMA = pa.schema(
    [_field("file_path", pa.string(), DELETE_FILE_PATH_FIELD_ID), _field("pos", pa.int64(), DELETE_POS_FIELD_ID)]
)


def write_position_delete_file(path: Path, data_file_uri: str, positions: np.ndarray) -> DataFile:
    """Write the sorted ``positions`` deleted from one data file; bounds on file_path name that single file."""
    positions = np.sort(positions.astype(np.int64))
    table = pa.table(
        [pa.array(np.full(len(positions), data_file_uri, dtype=object), pa.string()), pa.array(positions)],
        schema=POSITION_DELETE_SCHEMA,
    )
    pq.write_table(table, path, compression="zstd")
    path_bytes = to_bytes(StringType(), data_file_uri)
    return _delete_data_file(
        content=DataFileContent.POSITION_DELETES,
        path=path,
        record_count=len(positions),
        lower_bounds={
            DELETE_FILE_PATH_FIELD_ID: path_bytes,
            DELETE_POS_FIELD_ID: to_bytes(LongType(), int(positions[0])),
        },
        upper_bounds={
            DELETE_FILE_PATH_FIELD_ID: path_bytes,
            DELETE_POS_FIELD_ID: to_bytes(LongType(), int(positions[-1])),
        },
        equality_ids=None,
    )


def write_equality_delete_file(path: Path, column: str, field_id: int, values: np.ndarray) -> DataFile:
    """Write one equality delete file on a bigint column (field id ``field_id``), with its value bounds."""
    values = np.sort(values.astype(np.int64))
    table = pa.table([pa.array(values)], schema=pa.schema([_field(column, pa.int64(), field_id)]))
    pq.write_table(table, path, compression="zstd")
    return _delete_data_file(
        content=DataFileContent.EQUALITY_DELETES,
        path=path,
        record_count=len(values),
        lower_bounds={field_id: to_bytes(LongType(), int(values[0]))},
        upper_bounds={field_id: to_bytes(LongType(), int(values[-1]))},
        equality_ids=[field_id],
    )


def _delete_data_file(
    *,
    content: DataFileContent,
    path: Path,
    record_count: int,
    lower_bounds: dict[int, bytes],
    upper_bounds: dict[int, bytes],
    equality_ids: list[int] | None,
) -> DataFile:
    """The manifest entry's data_file struct for a delete file of an unpartitioned table (spec id 0).

    Column sizes and value/null counts are filled like Java's writers do (readers such as pyiceberg's
    ``inspect.entries`` expect them); the columns have no nulls.
    """
    metadata = pq.ParquetFile(path).metadata
    field_ids = [int(f.metadata[b"PARQUET:field_id"]) for f in metadata.schema.to_arrow_schema()]
    column_sizes = {
        field_id: sum(metadata.row_group(g).column(i).total_compressed_size for g in range(metadata.num_row_groups))
        for i, field_id in enumerate(field_ids)
    }
    return DataFile.from_args(
        content=content,
        file_path=f"file://{path.resolve()}",
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=record_count,
        file_size_in_bytes=path.stat().st_size,
        column_sizes=column_sizes,
        value_counts=dict.fromkeys(field_ids, record_count),
        null_value_counts=dict.fromkeys(field_ids, 0),
        nan_value_counts={},
        lower_bounds=lower_bounds,
        upper_bounds=upper_bounds,
        equality_ids=equality_ids,
        spec_id=0,
    )


def commit_delete_files(table: Table, delete_files: list[DataFile]) -> Table:
    """Commit ``delete_files`` as a new snapshot on main (operation ``delete``); returns the refreshed table."""
    metadata = table.metadata
    parent = table.current_snapshot()
    if parent is None:
        raise ValueError(f"table {table.name()} has no snapshot to delete from")
    snapshot_id = _generate_snapshot_id()
    sequence_number = metadata.next_sequence_number()
    commit_uuid = uuid.uuid4()
    locations = table.location_provider()

    manifest_path = locations.new_metadata_location(f"{commit_uuid}-m0.avro")
    with DeleteManifestWriterV2(
        metadata.spec(), metadata.schema(), table.io.new_output(manifest_path), snapshot_id, AVRO_CODEC
    ) as writer:
        for delete_file in delete_files:
            writer.add(
                ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, data_file=delete_file
                )
            )
    manifests = [*parent.manifests(table.io), writer.to_manifest_file()]

    manifest_list_path = locations.new_metadata_location(f"snap-{snapshot_id}-0-{commit_uuid}.avro")
    with write_manifest_list(
        format_version=2,
        output_file=table.io.new_output(manifest_list_path),
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=sequence_number,
        avro_compression=AVRO_CODEC,
    ) as manifest_list:
        manifest_list.add_manifests(manifests)

    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=sequence_number,
        manifest_list=manifest_list_path,
        summary=delete_summary(table, delete_files, parent.summary),
        schema_id=metadata.current_schema_id,
    )
    updates = (
        AddSnapshotUpdate(snapshot=snapshot),
        SetSnapshotRefUpdate(
            ref_name=MAIN_BRANCH,
            type=SnapshotRefType.BRANCH,
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id,
        ),
    )
    requirements = (AssertRefSnapshotId(snapshot_id=parent.snapshot_id, ref=MAIN_BRANCH),)
    transaction = table.transaction()
    transaction._apply(updates, requirements)
    return transaction.commit_transaction()


def delete_summary(table: Table, delete_files: list[DataFile], previous: Summary | None) -> Summary:
    """The snapshot summary Java writes for a delete-only row delta: added delete files and running totals."""
    collector = SnapshotSummaryCollector()
    for delete_file in delete_files:
        collector.add_file(delete_file, schema=table.schema())
    return update_snapshot_summaries(Summary(operation=Operation.DELETE, **collector.build()), previous)
