"""Delete attachment: exactly the deletes the spec says apply, on tables Iceberg Java wrote and on edge cases."""

from __future__ import annotations

from collections import Counter

import pytest
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record

from spark_jobs.engine.planning.delete_index import DELETE_FILE_PATH_FIELD_ID, DeleteFileIndex, partition_key
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.table.manifest_entries import read_live_entries


def _live_entries(table):
    snapshot = table.current_snapshot()
    return [entry for manifest in snapshot.manifests(table.io) for entry in read_live_entries(manifest, table.io)]


def _indexed(table):
    entries = _live_entries(table)
    index = DeleteFileIndex(table.specs())
    for entry in entries:
        if entry.data_file.content != DataFileContent.DATA:
            index.add(entry)
    data_entries = [entry for entry in entries if entry.data_file.content == DataFileContent.DATA]
    return index, data_entries, entries


def test_each_deletion_vector_attaches_to_exactly_the_data_file_it_references(conformance_catalog):
    index, data_entries, entries = _indexed(conformance_catalog.load_table("corpus.mor_v3_dv"))
    attached = {entry.data_file.file_path: index.for_data_file(entry) for entry in data_entries}
    dv_entries = [entry for entry in entries if entry.data_file.file_format == FileFormat.PUFFIN]

    attachments = Counter(
        (deletes.deletion_vector.path, deletes.deletion_vector.content_offset)
        for deletes in attached.values()
        if deletes.deletion_vector is not None
    )
    assert len(dv_entries) == 280
    assert len(attachments) == len(dv_entries)
    assert set(attachments.values()) == {1}
    for path, deletes in attached.items():
        assert deletes.position_deletes == ()
        assert deletes.equality_deletes == ()
        if deletes.deletion_vector is not None:
            assert deletes.deletion_vector.referenced_data_file == path
            assert deletes.deletion_vector.content_size_in_bytes > 0


def test_position_delete_files_attach_only_to_data_files_they_can_hold(conformance_catalog):
    index, data_entries, entries = _indexed(conformance_catalog.load_table("corpus.mor_v2_pos"))
    delete_entries = {e.data_file.file_path: e for e in entries if e.data_file.content != DataFileContent.DATA}
    attachments: Counter[str] = Counter()
    for data_entry in data_entries:
        for delete_file in index.for_data_file(data_entry).position_deletes:
            attachments[delete_file.path] += 1
            delete_entry = delete_entries[delete_file.path]
            assert partition_key(delete_entry.data_file) == partition_key(data_entry.data_file)
            assert data_entry.sequence_number <= delete_file.data_sequence_number
            lower = delete_entry.data_file.lower_bounds[DELETE_FILE_PATH_FIELD_ID]
            upper = delete_entry.data_file.upper_bounds[DELETE_FILE_PATH_FIELD_ID]
            assert lower <= data_entry.data_file.file_path.encode() <= upper
    # Every one of the 280 position delete files applies somewhere.
    assert len(attachments) == len(delete_entries) == 280


def test_equality_delete_of_one_partition_never_touches_another(conformance_catalog):
    index, data_entries, entries = _indexed(conformance_catalog.load_table("corpus.v2_eq_deletes_part"))
    (eq_delete,) = [e for e in entries if e.data_file.content == DataFileContent.EQUALITY_DELETES]
    by_partition = {}
    for entry in data_entries:
        applied = index.for_data_file(entry).equality_deletes
        by_partition.setdefault(tuple(partition_key(entry.data_file)[1]), []).append((entry.sequence_number, applied))

    deleted_category = partition_key(eq_delete.data_file)[1]
    assert deleted_category == ("a",)
    for category, files in by_partition.items():
        for sequence_number, applied in files:
            expected = category == deleted_category and sequence_number < eq_delete.sequence_number
            assert bool(applied) == expected, (category, sequence_number)
            if applied:
                assert applied[0].equality_ids == tuple(eq_delete.data_file.equality_ids)
    # The re-inserted file of partition a is newer than the delete: it must not get it.
    assert any(seq > eq_delete.sequence_number for seq, _ in by_partition[("a",)])


def test_global_equality_deletes_apply_by_strict_sequence_number(conformance_catalog):
    index, data_entries, entries = _indexed(conformance_catalog.load_table("corpus.v2_eq_deletes"))
    eq_deletes = [e for e in entries if e.data_file.content == DataFileContent.EQUALITY_DELETES]
    assert len(eq_deletes) == 3
    for data_entry in data_entries:
        applied = {d.path for d in index.for_data_file(data_entry).equality_deletes}
        expected = {e.data_file.file_path for e in eq_deletes if data_entry.sequence_number < e.sequence_number}
        assert applied == expected


# Edge cases on manifest entries built in memory (the rules the corpus cannot isolate).

DATA_PATH = "file:/warehouse/t/data/category=a/00000-data.parquet"
OTHER_PATH = "file:/warehouse/t/data/category=a/00001-data.parquet"
PARTITIONED = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"), spec_id=1)
UNPARTITIONED = PartitionSpec(spec_id=0)
SPECS = {0: UNPARTITIONED, 1: PARTITIONED}


def _entry(sequence_number: int, *, spec_id: int = 1, partition: tuple = ("a",), **data_file_fields) -> ManifestEntry:
    data_file = DataFile.from_args(
        _table_format_version=3,
        partition=Record(*partition),
        record_count=10,
        file_size_in_bytes=1000,
        **data_file_fields,
    )
    data_file.spec_id = spec_id
    return ManifestEntry.from_args(
        _table_format_version=3,
        status=ManifestEntryStatus.ADDED,
        snapshot_id=1,
        sequence_number=sequence_number,
        file_sequence_number=sequence_number,
        data_file=data_file,
    )


def _data(sequence_number: int, path: str = DATA_PATH, **kwargs) -> ManifestEntry:
    return _entry(
        sequence_number, content=DataFileContent.DATA, file_path=path, file_format=FileFormat.PARQUET, **kwargs
    )


def _position_deletes(sequence_number: int, path: str, **kwargs) -> ManifestEntry:
    return _entry(
        sequence_number,
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        **kwargs,
    )


def _deletion_vector(sequence_number: int, path: str, target: str = DATA_PATH, **kwargs) -> ManifestEntry:
    return _entry(
        sequence_number,
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format=FileFormat.PUFFIN,
        referenced_data_file=target,
        content_offset=4,
        content_size_in_bytes=40,
        **kwargs,
    )


def _equality_deletes(sequence_number: int, path: str, **kwargs) -> ManifestEntry:
    return _entry(
        sequence_number,
        content=DataFileContent.EQUALITY_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        equality_ids=[1, 7],
        **kwargs,
    )


def _index(*delete_entries: ManifestEntry) -> DeleteFileIndex:
    index = DeleteFileIndex(SPECS)
    for entry in delete_entries:
        index.add(entry)
    return index


def test_position_deletes_apply_at_equal_sequence_number_and_equality_deletes_do_not():
    index = _index(_position_deletes(5, "pos-5.parquet"), _equality_deletes(5, "eq-5.parquet"))
    applied = index.for_data_file(_data(5))
    assert [d.path for d in applied.position_deletes] == ["pos-5.parquet"]
    assert applied.equality_deletes == ()
    older = index.for_data_file(_data(4))
    assert [d.path for d in older.equality_deletes] == ["eq-5.parquet"]
    assert index.for_data_file(_data(6)).position_deletes == ()


def test_deletes_of_another_partition_or_spec_do_not_apply():
    index = _index(
        _position_deletes(5, "pos-b.parquet", partition=("b",)),
        _equality_deletes(5, "eq-b.parquet", partition=("b",)),
        _position_deletes(5, "pos-unpartitioned.parquet", spec_id=0, partition=()),
    )
    applied = index.for_data_file(_data(1))
    assert applied.position_deletes == ()
    assert applied.equality_deletes == ()


def test_equality_deletes_of_an_unpartitioned_spec_apply_in_every_partition_and_spec():
    index = _index(_equality_deletes(5, "eq-global.parquet", spec_id=0, partition=()))
    assert index.for_data_file(_data(5, partition=("z",))).equality_deletes == ()
    assert [d.path for d in index.for_data_file(_data(1, partition=("z",))).equality_deletes] == ["eq-global.parquet"]
    assert [d.equality_ids for d in index.for_data_file(_data(1, spec_id=0, partition=())).equality_deletes] == [(1, 7)]


def test_path_bounds_skip_position_delete_files_that_cannot_hold_the_path():
    index = _index(
        _position_deletes(
            5,
            "far.parquet",
            lower_bounds={DELETE_FILE_PATH_FIELD_ID: b"file:/warehouse/t/data/category=a/5"},
            upper_bounds={DELETE_FILE_PATH_FIELD_ID: b"file:/warehouse/t/data/category=a/6"},
        ),
        _position_deletes(
            5,
            "near.parquet",
            lower_bounds={DELETE_FILE_PATH_FIELD_ID: b"file:/warehouse/t/data/category=a/0"},
            upper_bounds={DELETE_FILE_PATH_FIELD_ID: b"file:/warehouse/t/data/category=a/1"},
        ),
    )
    assert [d.path for d in index.for_data_file(_data(1)).position_deletes] == ["near.parquet"]


def test_position_deletes_naming_the_path_in_another_partition_are_corrupt_metadata_naming_both_files():
    index = _index(_position_deletes(5, "pos.parquet", referenced_data_file=DATA_PATH, partition=("b",)))
    with pytest.raises(
        CorruptFileError, match=r"partition tuples: delete file pos\.parquet .*\['b'\].* names data file "
    ):
        index.for_data_file(_data(1))
    assert len(index.for_data_file(_data(1, partition=("b",))).position_deletes) == 1
    # older than the data file: it cannot apply, so its partition is not checked (as Iceberg Java)
    assert index.for_data_file(_data(6)).position_deletes == ()


def test_a_deletion_vector_of_another_partition_or_spec_is_corrupt_metadata_naming_both_files():
    index = _index(_deletion_vector(4, "dv.puffin", partition=("b",)))
    with pytest.raises(CorruptFileError) as raised:
        index.for_data_file(_data(2))
    message = str(raised.value)
    assert "dv.puffin" in message and DATA_PATH in message and "partition tuples" in message
    assert "metadata is corrupted" in message
    other_spec = _index(_deletion_vector(4, "dv.puffin", spec_id=2))
    with pytest.raises(CorruptFileError, match=r"mismatched partition specs: delete file dv\.puffin \(spec 2"):
        other_spec.for_data_file(_data(2))


def test_referenced_data_file_and_single_path_bounds_target_one_data_file():
    single_path = {DELETE_FILE_PATH_FIELD_ID: OTHER_PATH.encode()}
    index = _index(
        _position_deletes(5, "for-data.parquet", referenced_data_file=DATA_PATH),
        _position_deletes(5, "for-other.parquet", lower_bounds=single_path, upper_bounds=single_path),
    )
    assert [d.path for d in index.for_data_file(_data(1)).position_deletes] == ["for-data.parquet"]
    (for_other,) = index.for_data_file(_data(1, OTHER_PATH)).position_deletes
    assert for_other.referenced_data_file == OTHER_PATH


def test_a_deletion_vector_replaces_position_delete_files_for_its_data_file():
    index = _index(
        _position_deletes(3, "pos.parquet", referenced_data_file=DATA_PATH),
        _deletion_vector(4, "dv.puffin"),
        _equality_deletes(4, "eq.parquet"),
    )
    applied = index.for_data_file(_data(2))
    assert applied.deletion_vector.path == "dv.puffin"
    assert (applied.deletion_vector.content_offset, applied.deletion_vector.content_size_in_bytes) == (4, 40)
    assert applied.position_deletes == ()
    assert [d.path for d in applied.equality_deletes] == ["eq.parquet"]
    # A data file newer than the DV keeps no DV.
    assert index.for_data_file(_data(5)).deletion_vector is None


def test_two_live_deletion_vectors_for_one_data_file_are_corrupt_metadata():
    index = _index(_deletion_vector(4, "dv-1.puffin"), _deletion_vector(5, "dv-2.puffin"))
    with pytest.raises(CorruptFileError, match=r"00000-data.parquet has 2 live deletion vectors: dv-1.puffin, dv-2"):
        index.for_data_file(_data(1))


def test_a_deletion_vector_without_its_v3_fields_is_corrupt_metadata():
    entry = _deletion_vector(4, "dv.puffin")
    entry.data_file[17] = None  # referenced_data_file
    with pytest.raises(CorruptFileError, match=r"dv\.puffin lacks referenced_data_file"):
        _index(entry)


def test_files_of_a_nan_partition_share_their_deletes():
    nan = float("nan")
    index = _index(_position_deletes(5, "pos-nan.parquet", partition=(nan,)))
    assert partition_key(_data(1, partition=(nan,)).data_file) == partition_key(_data(2, partition=(nan,)).data_file)
    assert [d.path for d in index.for_data_file(_data(1, partition=(nan,))).position_deletes] == ["pos-nan.parquet"]
