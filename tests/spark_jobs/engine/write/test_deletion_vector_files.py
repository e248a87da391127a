"""Deletion vector files: the blob frame, the Puffin layout (read back by pyiceberg's Puffin reader and by our
own reader), the described entries the commit turns into manifest entries, and merging with existing deletes."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import DataFileContent
from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile
from pyroaring import BitMap64

from spark_jobs.engine.deletes.deletion_vectors import read_deletion_vector
from spark_jobs.engine.planning.scan_tasks import DeletionVector
from spark_jobs.engine.write.deletion_vector_files import (
    CREATED_BY,
    DELETION_VECTOR_BLOB_TYPE,
    PUFFIN_MAGIC,
    ROW_POSITION_FIELD_ID,
    DeletionVectorTarget,
    merged_positions,
    puffin_file_bytes,
    serialize_blob,
    write_deletion_vectors,
)

FIRST = "file:///warehouse/db/t/data/category=a/00000-a.parquet"
SECOND = "file:///warehouse/db/t/data/category=b/00001-b.parquet"


def test_a_blob_is_length_magic_bitmap_and_crc_of_unique_positions() -> None:
    blob, cardinality = serialize_blob(np.array([7, 3, 7, 1 << 33, 0], dtype=np.int64))
    assert cardinality == 4
    framed_length = int.from_bytes(blob[:4], "big")
    assert framed_length == len(blob) - 8
    framed = blob[4 : 4 + framed_length]
    assert framed[:4] == bytes.fromhex("d1d33964")
    assert int.from_bytes(blob[-4:], "big") == zlib.crc32(framed)
    assert list(BitMap64.deserialize(framed[4:])) == [0, 3, 7, 1 << 33]


def test_an_empty_blob_has_cardinality_zero_and_a_negative_position_is_refused() -> None:
    blob, cardinality = serialize_blob(np.array([], dtype=np.int64))
    assert cardinality == 0 and list(BitMap64.deserialize(blob[8:-4])) == []
    with pytest.raises(ValueError, match="deleted position -1 is negative"):
        serialize_blob(np.array([4, -1]))


def test_a_puffin_file_has_magic_blobs_and_a_footer_with_their_ranges() -> None:
    content, ranges = puffin_file_bytes([(b"abc", {"type": "x"}), (b"defgh", {"type": "y"})])
    assert ranges == [(4, 3), (7, 5)]
    assert content[:4] == PUFFIN_MAGIC and content[4:12] == b"abcdefgh"
    assert content[-4:] == PUFFIN_MAGIC and content[-8:-4] == bytes(4)  # flags: payload not compressed
    footer_size = int.from_bytes(content[-12:-8], "little")
    footer_start = len(content) - 12 - footer_size
    assert content[footer_start - 4 : footer_start] == PUFFIN_MAGIC
    footer = json.loads(content[footer_start : footer_start + footer_size])
    assert footer == {
        "blobs": [{"type": "x", "offset": 4, "length": 3}, {"type": "y", "offset": 7, "length": 5}],
        "properties": {"created-by": CREATED_BY},
    }


def test_written_vectors_are_read_back_the_same_by_pyiceberg_and_our_reader(tmp_path: Path) -> None:
    io = PyArrowFileIO()
    path = f"file://{tmp_path}/dv-0.puffin"
    first = np.array([5, 1, 1 << 32, 1], dtype=np.int64)
    second = np.arange(1000, 6000, dtype=np.int64)  # more than 4096 positions in one chunk: a bitset container
    targets = [
        DeletionVectorTarget(FIRST, 0, ("a",), first),
        DeletionVectorTarget(SECOND, 0, ("b",), second),
    ]
    described = write_deletion_vectors(targets, io, lambda: path)

    data = (tmp_path / "dv-0.puffin").read_bytes()
    puffin = PuffinFile(data)
    assert [blob.type for blob in puffin.footer.blobs] == [DELETION_VECTOR_BLOB_TYPE] * 2
    assert [blob.fields for blob in puffin.footer.blobs] == [[ROW_POSITION_FIELD_ID]] * 2
    assert [blob.properties["cardinality"] for blob in puffin.footer.blobs] == ["3", "5000"]
    by_file = {dv.referenced_data_file: dv.to_vector().to_pylist() for dv in deletion_vectors_from_puffin_file(puffin)}
    assert by_file == {FIRST: [1, 5, 1 << 32], SECOND: list(range(1000, 6000))}

    for entry, expected in zip(described, [[1, 5, 1 << 32], list(range(1000, 6000))], strict=True):
        dv = DeletionVector(
            path=entry["file_path"],
            content_offset=entry["content_offset"],
            content_size_in_bytes=entry["content_size_in_bytes"],
            cardinality=entry["record_count"],
            referenced_data_file=entry["referenced_data_file"],
            data_sequence_number=1,
        )
        assert read_deletion_vector(dv, io=io).tolist() == expected


def test_each_blob_is_described_as_a_position_delete_entry_of_the_one_puffin_file(tmp_path: Path) -> None:
    path = f"file://{tmp_path}/dv-1.puffin"
    targets = [
        DeletionVectorTarget(FIRST, 0, ("a",), np.array([2, 9])),
        DeletionVectorTarget(SECOND, 1, ("b",), np.array([4])),
    ]
    described = write_deletion_vectors(targets, PyArrowFileIO(), lambda: path)
    size = (tmp_path / "dv-1.puffin").stat().st_size
    summary = [
        (
            d["content"],
            d["file_format"],
            d["file_path"],
            d["file_size_in_bytes"],
            d["spec_id"],
            d["partition_values"],
            d["record_count"],
            d["referenced_data_file"],
        )
        for d in described
    ]
    assert summary == [
        (int(DataFileContent.POSITION_DELETES), "PUFFIN", path, size, 0, ("a",), 2, FIRST),
        (int(DataFileContent.POSITION_DELETES), "PUFFIN", path, size, 1, ("b",), 1, SECOND),
    ]
    assert described[0]["content_offset"] == 4
    assert described[1]["content_offset"] == 4 + described[0]["content_size_in_bytes"]


def test_no_targets_write_no_file(tmp_path: Path) -> None:
    def new_path() -> str:
        raise AssertionError("no Puffin file should be named")

    assert write_deletion_vectors([], PyArrowFileIO(), new_path) == []
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "dv.puffin").write_bytes(b"someone else's file")
    target = DeletionVectorTarget(FIRST, 0, ("a",), np.array([1]))
    with pytest.raises(FileExistsError):
        write_deletion_vectors([target], PyArrowFileIO(), lambda: f"file://{tmp_path}/dv.puffin")
    assert (tmp_path / "dv.puffin").read_bytes() == b"someone else's file"


def test_new_positions_merge_with_what_the_file_already_deletes() -> None:
    assert merged_positions(np.array([9, 2, 2]), None).tolist() == [2, 9]
    assert merged_positions(np.array([9, 2]), np.array([], dtype=np.int64)).tolist() == [2, 9]
    assert merged_positions(np.array([9, 2]), np.array([2, 5], dtype=np.int64)).tolist() == [2, 5, 9]
    assert merged_positions(np.array([9, 2]), np.array([2, 5])).dtype == np.int64
