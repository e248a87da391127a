"""Manifest entries read with the v3 schema: the deletion-vector fields, and everything else as pyiceberg reads it."""

from __future__ import annotations

import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField

from spark_jobs.engine.commit.manifest_writers import write_entries
from spark_jobs.engine.table.manifest_entries import (
    content_offset,
    content_size_in_bytes,
    first_row_id,
    in_v3_list_layout,
    read_live_entries,
    referenced_data_file,
    set_first_row_id,
)


def _manifests(table):
    return table.current_snapshot().manifests(table.io)


def test_deletion_vector_entries_carry_their_blob_location(conformance_catalog):
    table = conformance_catalog.load_table("corpus.mor_v3_dv")
    dv_entries = [
        entry
        for manifest in _manifests(table)
        for entry in read_live_entries(manifest, table.io)
        if entry.data_file.file_format == FileFormat.PUFFIN
    ]
    assert len(dv_entries) == 280
    for entry in dv_entries:
        data_file = entry.data_file
        assert referenced_data_file(data_file).startswith("file:/tmp/iceberg-conformance/corpus/warehouse/")
        assert content_offset(data_file) >= 4  # after the Puffin magic
        assert 0 < content_size_in_bytes(data_file) < data_file.file_size_in_bytes
        assert content_offset(data_file) + content_size_in_bytes(data_file) <= data_file.file_size_in_bytes


@pytest.mark.parametrize(
    "table_name", ["corpus.v1_cow", "corpus.mor_v2_pos", "corpus.v2_eq_deletes", "corpus.mor_v3_dv"]
)
def test_entries_match_what_pyiceberg_reads(conformance_catalog, table_name):
    table = conformance_catalog.load_table(table_name)
    for manifest in _manifests(table):
        ours = read_live_entries(manifest, table.io)
        theirs = manifest.fetch_manifest_entry(table.io, discard_deleted=True)
        assert [
            (e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number, e.data_file.spec_id) for e in ours
        ] == [(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number, e.data_file.spec_id) for e in theirs]
        for mine, reference in zip(ours, theirs, strict=True):
            assert mine.data_file.file_path == reference.data_file.file_path
            assert mine.data_file.partition == reference.data_file.partition
            assert mine.data_file.equality_ids == reference.data_file.equality_ids
            assert mine.data_file.split_offsets == reference.data_file.split_offsets
            assert mine.data_file.lower_bounds == reference.data_file.lower_bounds


def test_v1_entries_inherit_sequence_number_zero(conformance_catalog):
    table = conformance_catalog.load_table("corpus.v1_cow")
    entries = [entry for manifest in _manifests(table) for entry in read_live_entries(manifest, table.io)]
    assert entries
    assert {(entry.sequence_number, entry.file_sequence_number) for entry in entries} == {(0, 0)}
    assert all(referenced_data_file(entry.data_file) is None for entry in entries)


def _v3_entry(status: ManifestEntryStatus, name: str, record_count: int) -> ManifestEntry:
    data_file = DataFile.from_args(
        _table_format_version=3,
        content=DataFileContent.DATA,
        file_path=f"file:/warehouse/t/data/{name}.parquet",
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=record_count,
        file_size_in_bytes=1000,
    )
    data_file.spec_id = 0
    return ManifestEntry.from_args(
        _table_format_version=3,
        status=status,
        snapshot_id=7,
        sequence_number=3,
        file_sequence_number=3,
        data_file=data_file,
    )


def test_live_data_files_inherit_first_row_ids_in_order_and_deleted_entries_take_none(tmp_path):
    """A manifest's ids cover its added and existing rows: a DELETED entry between them shifts nothing (as Java)."""
    entries = [
        _v3_entry(ManifestEntryStatus.ADDED, "a", 10),
        _v3_entry(ManifestEntryStatus.DELETED, "b", 5),
        _v3_entry(ManifestEntryStatus.EXISTING, "c", 7),
    ]
    manifest = write_entries(
        content=ManifestContent.DATA,
        entries=entries,
        spec=PartitionSpec(spec_id=0),
        schema=Schema(NestedField(1, "id", LongType(), required=False)),
        output_file=PyArrowFileIO().new_output(str(tmp_path / "manifest.avro")),
        snapshot_id=7,
        compression="null",
        format_version=3,
    )
    manifest = in_v3_list_layout(manifest)
    set_first_row_id(manifest, 100)

    live = read_live_entries(manifest, PyArrowFileIO())

    assert [(entry.data_file.file_path.rsplit("/", 1)[-1], first_row_id(entry.data_file)) for entry in live] == [
        ("a.parquet", 100),
        ("c.parquet", 110),
    ]
