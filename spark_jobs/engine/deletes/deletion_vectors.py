"""Read a v3 deletion vector: one ``deletion-vector-v1`` blob of a Puffin file, as sorted row positions.

Spec: apache/iceberg format/puffin-spec.md ("deletion-vector-v1 blob type"). Steps:

1. Read only the blob's bytes, ``[content_offset, content_offset + content_size_in_bytes)``, never the footer.
2. Check the frame: a 4-byte big-endian length of (magic + bitmap) that matches the blob size, the magic
   ``D1 D3 39 64``, and the trailing 4-byte big-endian CRC-32 of (magic + bitmap).
3. Decode the bitmap, a portable 64-bit Roaring bitmap (8-byte little-endian bucket count, then per bucket a 4-byte
   little-endian key and a portable 32-bit Roaring bitmap), with pyroaring's ``BitMap64`` whose portable
   serialization is exactly this layout.
4. Check that no position has the sign bit set and that the count equals the manifest's cardinality, then return
   the positions as a sorted int64 numpy array (no Python loop over positions).
"""

from __future__ import annotations

import zlib

import numpy as np
from pyiceberg.io import FileIO
from pyroaring import BitMap64

from spark_jobs.engine.planning.scan_tasks import DeletionVector
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.object_ranges import read_object_range

DELETION_VECTOR_MAGIC = b"\xd1\xd3\x39\x64"
_LENGTH_SIZE = 4
_CRC_SIZE = 4
_SMALLEST_BLOB = _LENGTH_SIZE + len(DELETION_VECTOR_MAGIC) + 8 + _CRC_SIZE  # an empty bitmap is 8 bytes


def read_deletion_vector(dv: DeletionVector, *, io: FileIO) -> np.ndarray:
    """The sorted int64 positions deleted by ``dv``, reading only its blob's byte range of the Puffin file."""
    blob = _read_blob_bytes(dv, io)
    return decode_deletion_vector_blob(
        blob,
        puffin_path=dv.path,
        data_file_path=dv.referenced_data_file,
        expected_cardinality=dv.cardinality,
    )


def decode_deletion_vector_blob(
    blob: bytes, *, puffin_path: str, data_file_path: str, expected_cardinality: int | None
) -> np.ndarray:
    """Check a ``deletion-vector-v1`` blob's frame and CRC and return its positions as sorted int64."""
    where = f"deletion vector in {puffin_path} for data file {data_file_path}"
    if len(blob) < _SMALLEST_BLOB:
        raise CorruptFileError(f"{where}: blob is {len(blob)} bytes, smaller than the smallest valid {_SMALLEST_BLOB}")
    framed_length = int.from_bytes(blob[:_LENGTH_SIZE], "big")
    expected_framed_length = len(blob) - _LENGTH_SIZE - _CRC_SIZE
    if framed_length != expected_framed_length:
        raise CorruptFileError(
            f"{where}: length field says {framed_length} bytes of magic and bitmap, "
            f"but the blob of {len(blob)} bytes holds {expected_framed_length}"
        )
    magic_and_bitmap = blob[_LENGTH_SIZE : _LENGTH_SIZE + framed_length]
    magic = magic_and_bitmap[: len(DELETION_VECTOR_MAGIC)]
    if magic != DELETION_VECTOR_MAGIC:
        raise CorruptFileError(f"{where}: magic is {magic.hex()}, expected {DELETION_VECTOR_MAGIC.hex()}")
    stored_crc = int.from_bytes(blob[-_CRC_SIZE:], "big")
    computed_crc = zlib.crc32(magic_and_bitmap)
    if stored_crc != computed_crc:
        raise CorruptFileError(f"{where}: CRC-32 is {stored_crc:08x} in the blob, computed {computed_crc:08x}")
    positions = _decode_portable_bitmap(magic_and_bitmap[len(DELETION_VECTOR_MAGIC) :], where)
    if expected_cardinality is not None and positions.size != expected_cardinality:
        raise CorruptFileError(
            f"{where}: bitmap holds {positions.size} positions, the manifest's cardinality is {expected_cardinality}"
        )
    return positions


def _decode_portable_bitmap(bitmap_bytes: bytes, where: str) -> np.ndarray:
    """The positions of a portable 64-bit Roaring bitmap as sorted int64; negative (sign-bit) positions are corrupt."""
    try:
        bitmap = BitMap64.deserialize(bitmap_bytes)
    except ValueError as error:
        raise CorruptFileError(f"{where}: the 64-bit Roaring bitmap does not decode ({error})") from error
    positions = np.frombuffer(bitmap.to_array(), dtype=np.uint64)
    if positions.size and positions[-1] >= np.uint64(1 << 63):
        raise CorruptFileError(f"{where}: position {int(positions[-1])} has the most significant bit set")
    return positions.astype(np.int64)


def _read_blob_bytes(dv: DeletionVector, io: FileIO) -> bytes:
    """Exactly the blob's bytes: one seek and reads of ``content_size_in_bytes``, failing on a short file."""
    if dv.content_offset < 0 or dv.content_size_in_bytes < 0:
        raise CorruptFileError(
            f"deletion vector in {dv.path} for data file {dv.referenced_data_file}: content_offset "
            f"{dv.content_offset} and content_size_in_bytes {dv.content_size_in_bytes} must be >= 0"
        )
    try:
        blob = read_object_range(io, dv.path, dv.content_offset, dv.content_size_in_bytes)
    except CorruptFileError as error:
        raise CorruptFileError(f"deletion vector for data file {dv.referenced_data_file}: {error}") from error
    if blob is not None:
        return blob  # one ranged GET, no HEAD (S3 through obstore)
    chunks: list[bytes] = []
    remaining = dv.content_size_in_bytes
    with io.new_input(dv.path).open(seekable=True) as stream:
        stream.seek(dv.content_offset)
        while remaining > 0:
            chunk = stream.read(remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    if remaining:
        raise CorruptFileError(
            f"deletion vector in {dv.path} for data file {dv.referenced_data_file}: the file ends "
            f"{remaining} bytes before the blob's end at {dv.content_offset + dv.content_size_in_bytes}"
        )
    return b"".join(chunks)
