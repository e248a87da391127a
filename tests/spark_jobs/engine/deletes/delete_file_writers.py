"""Helpers of the delete tests: Parquet and Puffin writers, a FileIO that records reads, corpus readers."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyroaring import BitMap64

from spark_jobs.engine.deletes.parquet_field_ids import column_at_path, field_id_paths
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, DeletionVector, EqualityDeleteFile, PositionDeleteFile
from tests.support.conformance import ConformanceQuery, load_queries

FIELD_ID_KEY = b"PARQUET:field_id"
FILE_PATH_FIELD_ID = 2147483546
POS_FIELD_ID = 2147483545
ROW_POSITION_FIELD_ID = 2147483645
PUFFIN_MAGIC = b"PFA1"
DV_MAGIC = b"\xd1\xd3\x39\x64"


# ---------------------------------------------------------------------------------------------------------------
# Writers
# ---------------------------------------------------------------------------------------------------------------


def field_with_id(name: str, arrow_type: pa.DataType, field_id: int, nullable: bool = True) -> pa.Field:
    """An Arrow field carrying its Iceberg field id, as Iceberg writers store it in Parquet."""
    return pa.field(name, arrow_type, nullable=nullable, metadata={FIELD_ID_KEY: str(field_id).encode()})


def write_position_delete_file(
    path: Path,
    rows: Sequence[tuple[str, int]],
    *,
    row_group_size: int = 1024,
    names: tuple[str, str] = ("file_path", "pos"),
) -> PositionDeleteFile:
    """A spec position delete file (sorted by file_path, pos) with field ids, and its task description."""
    ordered = sorted(rows)
    schema = pa.schema(
        [
            field_with_id(names[0], pa.string(), FILE_PATH_FIELD_ID, nullable=False),
            field_with_id(names[1], pa.int64(), POS_FIELD_ID, nullable=False),
        ]
    )
    table = pa.table([[r[0] for r in ordered], [r[1] for r in ordered]], schema=schema)
    pq.write_table(table, path, row_group_size=row_group_size)
    return PositionDeleteFile(
        path=str(path), file_size_in_bytes=path.stat().st_size, record_count=len(ordered), data_sequence_number=2
    )


def write_equality_delete_file(path: Path, columns: dict[tuple[str, int], pa.Array]) -> EqualityDeleteFile:
    """An equality delete file whose columns (name, field id) -> values carry field ids."""
    fields = [field_with_id(name, values.type, field_id) for (name, field_id), values in columns.items()]
    table = pa.table(list(columns.values()), schema=pa.schema(fields))
    pq.write_table(table, path)
    return EqualityDeleteFile(
        path=str(path),
        file_size_in_bytes=path.stat().st_size,
        record_count=table.num_rows,
        equality_ids=tuple(field_id for _, field_id in columns),
        data_sequence_number=3,
    )


def deletion_vector_blob(positions: Sequence[int]) -> bytes:
    """A deletion-vector-v1 blob: BE length, magic, portable 64-bit Roaring bitmap, BE CRC-32 of magic + bitmap."""
    bitmap = BitMap64(positions)
    bitmap.run_optimize()
    magic_and_bitmap = DV_MAGIC + bitmap.serialize()
    crc = zlib.crc32(magic_and_bitmap)
    return len(magic_and_bitmap).to_bytes(4, "big") + magic_and_bitmap + crc.to_bytes(4, "big")


def write_puffin_file(
    path: Path,
    blobs: Sequence[tuple[str, Sequence[int]]],
    *,
    blob_bytes: Callable[[Sequence[int]], bytes] | None = None,
) -> list[DeletionVector]:
    """A Puffin file with one deletion vector per (data file, positions), and a DeletionVector for each blob."""
    encode = blob_bytes or deletion_vector_blob
    content = bytearray(PUFFIN_MAGIC)
    blob_metadata = []
    vectors = []
    for data_file_path, positions in blobs:
        blob = encode(positions)
        offset = len(content)
        content += blob
        cardinality = len(set(positions))
        blob_metadata.append(
            {
                "type": "deletion-vector-v1",
                "fields": [ROW_POSITION_FIELD_ID],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": offset,
                "length": len(blob),
                "properties": {"referenced-data-file": data_file_path, "cardinality": str(cardinality)},
            }
        )
        vectors.append(
            DeletionVector(
                path=str(path),
                content_offset=offset,
                content_size_in_bytes=len(blob),
                cardinality=cardinality,
                referenced_data_file=data_file_path,
                data_sequence_number=2,
            )
        )
    payload = json.dumps({"blobs": blob_metadata, "properties": {"created-by": "airflow-iceberg-provider tests"}})
    payload_bytes = payload.encode()
    content += PUFFIN_MAGIC + payload_bytes + len(payload_bytes).to_bytes(4, "little") + bytes(4) + PUFFIN_MAGIC
    path.write_bytes(bytes(content))
    return vectors


def data_file_slice(path: str, record_count: int = 1000, **deletes: Any) -> DataFileSlice:
    """A whole-file slice of a (not necessarily existing) data file with the given deletes."""
    return DataFileSlice(
        path=path, file_size_in_bytes=1, record_count=record_count, spec_id=0, start=0, length=1, **deletes
    )


# ---------------------------------------------------------------------------------------------------------------
# A FileIO that records what is opened and read
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class ReadLog:
    """What a RecordingFileIO saw: files opened, and per read (path, offset, bytes returned)."""

    opened: list[str] = field(default_factory=list)
    reads: list[tuple[str, int, int]] = field(default_factory=list)

    def bytes_read(self, path: str) -> int:
        """Total bytes returned by reads of ``path``."""
        return sum(size for read_path, _, size in self.reads if read_path == path)


class _RecordingStream:
    """A seekable stream that logs each read with its offset."""

    def __init__(self, inner: InputStream, path: str, log: ReadLog) -> None:
        self._inner = inner
        self._path = path
        self._log = log

    def read(self, size: int = -1) -> bytes:
        offset = self._inner.tell()
        data = self._inner.read() if size is None or size < 0 else self._inner.read(size)
        self._log.reads.append((self._path, offset, len(data)))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._inner.seek(offset, whence)

    def tell(self) -> int:
        return self._inner.tell()

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> _RecordingStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class _RecordingInputFile(InputFile):
    """An InputFile whose stream records reads."""

    def __init__(self, inner: InputFile, log: ReadLog) -> None:
        super().__init__(inner.location)
        self._inner = inner
        self._log = log

    def __len__(self) -> int:
        return len(self._inner)

    def exists(self) -> bool:
        return self._inner.exists()

    def open(self, seekable: bool = True) -> InputStream:
        self._log.opened.append(self.location)
        return _RecordingStream(self._inner.open(seekable=seekable), self.location, self._log)


class RecordingFileIO(FileIO):
    """PyArrowFileIO underneath, with every open and read logged."""

    def __init__(self) -> None:
        super().__init__()
        self._inner = PyArrowFileIO()
        self.log = ReadLog()

    def new_input(self, location: str) -> InputFile:
        return _RecordingInputFile(self._inner.new_input(location), self.log)

    def new_output(self, location: str) -> OutputFile:
        return self._inner.new_output(location)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        self._inner.delete(location)


# ---------------------------------------------------------------------------------------------------------------
# The Java-written conformance corpus (extracted by the session fixture ``conformance_catalog``)
# ---------------------------------------------------------------------------------------------------------------


def read_data_file_by_field_id(path: str, field_ids: Sequence[int], io: FileIO) -> dict[int, pa.ChunkedArray]:
    """A corpus data file's columns keyed by field id (tables without schema evolution)."""
    with io.new_input(path).open(seekable=True) as stream:
        parquet_file = pq.ParquetFile(stream)
        paths = field_id_paths(parquet_file.schema_arrow)
        table = parquet_file.read(columns=sorted({paths[field_id][0] for field_id in field_ids}))
    return {field_id: column_at_path(table, paths[field_id]) for field_id in field_ids}


def corpus_query(table_name: str, query_name: str) -> ConformanceQuery:
    """One expected result Java computed."""
    return next(q for q in load_queries() if q.table == f"corpus.{table_name}" and q.name == query_name)
