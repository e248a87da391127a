"""What loading a delete file reads: its footer as stored at the file's end, and the column chunks it decodes."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from spark_jobs.engine.deletes.bytes_read import compressed_bytes_of_columns, footer_bytes


def test_footer_bytes_are_the_footer_and_its_eight_byte_tail(tmp_path: Path) -> None:
    path = tmp_path / "deletes.parquet"
    pq.write_table(pa.table({"file_path": ["a", "b"], "pos": pa.array([1, 2], pa.int64())}), path)
    tail = path.read_bytes()[-8:]
    assert tail[4:] == b"PAR1"
    assert footer_bytes(pq.read_metadata(path)) == struct.unpack("<I", tail[:4])[0] + 8


def test_compressed_bytes_count_the_named_columns_in_the_named_row_groups(tmp_path: Path) -> None:
    path = tmp_path / "nested.parquet"
    rows = pa.table(
        {
            "file_path": [f"s3://b/f{i % 3}" for i in range(300)],
            "pos": pa.array(range(300), pa.int64()),
            "row": pa.array([{"id": i, "name": str(i)} for i in range(300)]),
        }
    )
    pq.write_table(rows, path, row_group_size=100)
    metadata = pq.read_metadata(path)

    def chunk(row_group: int, column: int) -> int:
        return metadata.row_group(row_group).column(column).total_compressed_size

    assert compressed_bytes_of_columns(metadata, [0, 2], {"pos"}) == chunk(0, 1) + chunk(2, 1)
    # a nested top-level column counts every leaf under it (row.id, row.name)
    assert compressed_bytes_of_columns(metadata, [1], {"row"}) == chunk(1, 2) + chunk(1, 3)
    assert compressed_bytes_of_columns(metadata, [], {"pos"}) == 0
