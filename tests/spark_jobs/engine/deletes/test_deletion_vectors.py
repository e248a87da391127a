"""Deletion vectors: Puffin blobs written here by the spec, and the ones Iceberg Java wrote in the corpus."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile
from pyroaring import BitMap64

from spark_jobs.engine.deletes.deletion_vectors import read_deletion_vector
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.errors import CorruptFileError
from tests.spark_jobs.engine.deletes.delete_file_writers import (
    DV_MAGIC,
    RecordingFileIO,
    deletion_vector_blob,
    write_puffin_file,
)

DATA_FILE = "file:/warehouse/db/t/data/00000-a.parquet"
TWO_BUCKET_POSITIONS = [0, 1, 2, 7, 4095, 4096, 65536, 70000, (1 << 32) - 1, 1 << 32, (1 << 32) + 5, (1 << 33) + 9]


def test_positions_in_two_buckets_decode_sorted(tmp_path: Path, io) -> None:
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_FILE, TWO_BUCKET_POSITIONS)])

    positions = read_deletion_vector(dv, io=io)

    assert positions.dtype == np.int64
    assert positions.tolist() == sorted(TWO_BUCKET_POSITIONS)


def test_run_and_bitset_containers_decode(tmp_path: Path, io) -> None:
    dense = list(range(10_000, 30_000))  # a run container after run_optimize
    sparse_bitset = list(range(100_000, 200_000, 3))  # > 4096 values in one 16-bit chunk: a bitset container
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_FILE, dense + sparse_bitset)])

    assert np.array_equal(read_deletion_vector(dv, io=io), np.array(dense + sparse_bitset, dtype=np.int64))


def test_reads_only_the_blob_byte_range_of_the_right_blob(tmp_path: Path, recording_io: RecordingFileIO) -> None:
    other_file = "file:/warehouse/db/t/data/00001-b.parquet"
    vectors = write_puffin_file(tmp_path / "dv.puffin", [(other_file, [1, 2, 3]), (DATA_FILE, TWO_BUCKET_POSITIONS)])
    dv = vectors[1]

    positions = read_deletion_vector(dv, io=recording_io)

    assert positions.tolist() == sorted(TWO_BUCKET_POSITIONS)
    reads = recording_io.log.reads
    assert reads, "the blob must be read through the FileIO"
    blob_end = dv.content_offset + dv.content_size_in_bytes
    assert all(dv.content_offset <= offset and offset + size <= blob_end for _, offset, size in reads)
    assert recording_io.log.bytes_read(dv.path) == dv.content_size_in_bytes


def test_written_file_is_a_puffin_file_that_pyiceberg_reads_the_same(tmp_path: Path, io) -> None:
    blobs = [("file:/a.parquet", [5, 6, 1 << 32]), (DATA_FILE, TWO_BUCKET_POSITIONS)]
    vectors = write_puffin_file(tmp_path / "dv.puffin", blobs)

    puffin = PuffinFile((tmp_path / "dv.puffin").read_bytes())
    by_data_file = {dv.referenced_data_file: dv.to_vector() for dv in deletion_vectors_from_puffin_file(puffin)}

    for dv in vectors:
        assert read_deletion_vector(dv, io=io).tolist() == by_data_file[dv.referenced_data_file].to_pylist()


def test_empty_deletion_vector(tmp_path: Path, io) -> None:
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_FILE, [])])

    assert read_deletion_vector(dv, io=io).size == 0


def _with_bad_magic(positions: Sequence[int]) -> bytes:
    blob = bytearray(deletion_vector_blob(positions))
    blob[4:8] = b"\xd1\xd3\x39\x65"
    # A CRC that matches the wrong magic, so the magic check itself is what fails.
    blob[-4:] = zlib.crc32(bytes(blob[4:-4])).to_bytes(4, "big")
    return bytes(blob)


def _with_bad_crc(positions: Sequence[int]) -> bytes:
    blob = bytearray(deletion_vector_blob(positions))
    blob[-1] ^= 0xFF
    return bytes(blob)


def _with_flipped_bitmap_bit(positions: Sequence[int]) -> bytes:
    blob = bytearray(deletion_vector_blob(positions))
    blob[20] ^= 0x01
    return bytes(blob)


def _with_wrong_length(positions: Sequence[int]) -> bytes:
    blob = bytearray(deletion_vector_blob(positions))
    blob[:4] = (int.from_bytes(blob[:4], "big") + 1).to_bytes(4, "big")
    return bytes(blob)


def _with_negative_position(positions: Sequence[int]) -> bytes:
    magic_and_bitmap = DV_MAGIC + BitMap64([*positions, 1 << 63]).serialize()
    crc = zlib.crc32(magic_and_bitmap).to_bytes(4, "big")
    return len(magic_and_bitmap).to_bytes(4, "big") + magic_and_bitmap + crc


@pytest.mark.parametrize(
    ("encode", "complaint"),
    [
        (_with_bad_magic, "magic is d1d33965, expected d1d33964"),
        (_with_bad_crc, "CRC-32"),
        (_with_flipped_bitmap_bit, "CRC-32"),
        (_with_wrong_length, "length field says"),
        (_with_negative_position, "most significant bit"),
    ],
    ids=["magic", "crc", "bitmap-bit", "length", "sign-bit"],
)
def test_corrupt_blob_names_puffin_and_data_file(
    tmp_path: Path, io, encode: Callable[[Sequence[int]], bytes], complaint: str
) -> None:
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_FILE, TWO_BUCKET_POSITIONS)], blob_bytes=encode)
    dv = replace(dv, cardinality=len(TWO_BUCKET_POSITIONS) + (encode is _with_negative_position))

    with pytest.raises(CorruptFileError) as raised:
        read_deletion_vector(dv, io=io)

    message = str(raised.value)
    assert complaint in message
    assert str(tmp_path / "dv.puffin") in message
    assert DATA_FILE in message


def test_cardinality_other_than_the_manifest_is_corrupt(tmp_path: Path, io) -> None:
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_FILE, TWO_BUCKET_POSITIONS)])

    with pytest.raises(CorruptFileError, match=r"holds 12 positions, the manifest's cardinality is 13"):
        read_deletion_vector(replace(dv, cardinality=13), io=io)


def test_blob_range_past_the_end_of_the_file_is_corrupt(tmp_path: Path, io) -> None:
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_FILE, TWO_BUCKET_POSITIONS)])
    file_size = (tmp_path / "dv.puffin").stat().st_size

    with pytest.raises(CorruptFileError, match="the file ends"):
        read_deletion_vector(replace(dv, content_offset=file_size - 10), io=io)


def test_every_java_written_deletion_vector_decodes(
    corpus_data_files: Callable[[str], list[DataFileSlice]], io
) -> None:
    with_vectors = [data_file for data_file in corpus_data_files("mor_v3_dv") if data_file.deletion_vector]
    assert len(with_vectors) > 10

    for data_file in with_vectors:
        dv = data_file.deletion_vector
        assert dv is not None and dv.referenced_data_file == data_file.path
        positions = read_deletion_vector(dv, io=io)  # checks frame, CRC and the manifest's cardinality
        assert positions.size == dv.cardinality
        assert positions[-1] < data_file.record_count
        assert np.all(np.diff(positions) > 0)


def test_java_written_vectors_match_pyiceberg_reading_whole_puffin_files(
    corpus_data_files: Callable[[str], list[DataFileSlice]], io
) -> None:
    vectors = [data_file.deletion_vector for data_file in corpus_data_files("mor_v3_dv") if data_file.deletion_vector]
    puffin_path = vectors[0].path
    with io.new_input(puffin_path).open() as stream:
        puffin = PuffinFile(stream.read())
    expected = {dv.referenced_data_file: dv.to_vector().to_pylist() for dv in deletion_vectors_from_puffin_file(puffin)}

    in_this_file = [dv for dv in vectors if dv.path == puffin_path]
    assert in_this_file
    for dv in in_this_file:
        assert read_deletion_vector(dv, io=io).tolist() == expected[dv.referenced_data_file]
