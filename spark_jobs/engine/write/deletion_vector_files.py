"""Write v3 deletion vectors: one Puffin file holding one ``deletion-vector-v1`` blob per data file.

Spec: apache/iceberg format/puffin-spec.md and format/spec.md ("Deletion Vectors"). Steps:

1. Per data file, the deleted positions (the new ones merged with what its current deletion vector or position
   delete files already delete: ``merged_positions``) as a portable 64-bit Roaring bitmap, serialized by
   pyroaring's ``BitMap64`` (that layout exactly).
2. The blob: a 4-byte big-endian length of (magic + bitmap), the magic ``D1 D3 39 64``, the bitmap, and the
   big-endian CRC-32 of (magic + bitmap). Uncompressed, as the spec requires for this blob type.
3. The file: magic ``PFA1``, the blobs, then the footer: magic, the JSON payload (per blob: type, the ``_pos`` field
   id, snapshot id and sequence number -1 (assigned at commit), offset, length, properties
   ``referenced-data-file`` and ``cardinality``; file property ``created-by``), the payload size (4-byte
   little-endian), 4 bytes of flags (0: payload not compressed), magic.
4. Each blob is described like any written file (``file_entries.describe_file``): content POSITION_DELETES, format
   PUFFIN, the data file's partition, ``record_count`` = cardinality, ``referenced_data_file``, ``content_offset``
   and ``content_size_in_bytes`` = the blob's offset and length, ``file_size_in_bytes`` = the Puffin file's size.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFileContent
from pyroaring import BitMap64

from spark_jobs.engine.deletes.deletion_vectors import DELETION_VECTOR_MAGIC
from spark_jobs.engine.write.file_entries import WrittenFile, describe_file

PUFFIN_MAGIC = b"PFA1"
DELETION_VECTOR_BLOB_TYPE = "deletion-vector-v1"
ROW_POSITION_FIELD_ID = 2147483645  # the _pos metadata column, the field a deletion vector blob is computed from
CREATED_BY = "airflow-iceberg-provider"


@dataclass(frozen=True)
class DeletionVectorTarget:
    """The data file a deletion vector belongs to: its path, partition (spec id and values) and positions."""

    data_file_path: str
    spec_id: int
    partition_values: tuple[Any, ...]
    positions: np.ndarray  # every deleted position of the data file (sorted or not, duplicates allowed)


def serialize_blob(positions: np.ndarray) -> tuple[bytes, int]:
    """A ``deletion-vector-v1`` blob of ``positions`` (module doc, step 2) and its cardinality."""
    values = np.unique(np.asarray(positions, dtype=np.int64))
    if values.size and values[0] < 0:
        raise ValueError(f"deleted position {int(values[0])} is negative")
    bitmap = BitMap64(values.astype(np.uint64))
    framed = DELETION_VECTOR_MAGIC + bitmap.serialize()
    return len(framed).to_bytes(4, "big") + framed + zlib.crc32(framed).to_bytes(4, "big"), int(values.size)


def puffin_file_bytes(blobs: list[tuple[bytes, dict[str, Any]]]) -> tuple[bytes, list[tuple[int, int]]]:
    """A Puffin file of ``(payload, metadata)`` blobs (module doc, step 3) and each blob's (offset, length)."""
    content = bytearray(PUFFIN_MAGIC)
    footer_blobs, ranges = [], []
    for payload, metadata in blobs:
        ranges.append((len(content), len(payload)))
        footer_blobs.append({**metadata, "offset": len(content), "length": len(payload)})
        content += payload
    footer = json.dumps({"blobs": footer_blobs, "properties": {"created-by": CREATED_BY}}).encode("utf-8")
    content += PUFFIN_MAGIC + footer + len(footer).to_bytes(4, "little") + bytes(4) + PUFFIN_MAGIC
    return bytes(content), ranges


def write_deletion_vectors(
    targets: list[DeletionVectorTarget], io: FileIO, new_path: Callable[[], str]
) -> list[WrittenFile]:
    """One Puffin file with a deletion vector per target (a data file); the described blobs (module doc, step 4)."""
    blobs = []
    for target in targets:
        payload, cardinality = serialize_blob(target.positions)
        metadata = {
            "type": DELETION_VECTOR_BLOB_TYPE,
            "fields": [ROW_POSITION_FIELD_ID],
            "snapshot-id": -1,
            "sequence-number": -1,
            "properties": {"referenced-data-file": target.data_file_path, "cardinality": str(cardinality)},
        }
        blobs.append((payload, metadata, cardinality))
    if not blobs:
        return []
    content, ranges = puffin_file_bytes([(payload, metadata) for payload, metadata, _ in blobs])
    path = new_path()
    with io.new_output(path).create(overwrite=False) as stream:
        stream.write(content)
    described: list[WrittenFile] = []
    for target, (_, _, cardinality), (offset, length) in zip(targets, blobs, ranges, strict=True):
        entry = describe_file(
            content=DataFileContent.POSITION_DELETES,
            file_path=path,
            file_size_in_bytes=len(content),
            spec_id=target.spec_id,
            partition_values=list(target.partition_values),
            statistics={"record_count": cardinality},
            referenced_data_file=target.data_file_path,
        )
        described.append(replace(entry, file_format="PUFFIN", content_offset=offset, content_size_in_bytes=length))
    return described


def merged_positions(new_positions: np.ndarray, existing: np.ndarray | None) -> np.ndarray:
    """The new deleted positions together with those the data file's current deletes already remove."""
    if existing is None or existing.size == 0:
        return np.unique(np.asarray(new_positions, dtype=np.int64))
    return np.union1d(np.asarray(new_positions, dtype=np.int64), existing)
