"""The Thrift compact reader against hand-encoded bytes and against real Parquet footers."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.engine.parquet.footer_cache import read_footer
from spark_jobs.engine.parquet.thrift_compact import CompactReader, read_struct
from spark_jobs.engine.shared.errors import CorruptFileError


def test_struct_with_every_scalar_type_and_long_field_delta() -> None:
    encoded = bytes(
        [
            0x15, 0x54,  # field 1, i32, zigzag(42) = 84
            0x16, 0x03,  # field 2, i64, zigzag(-2) = 3
            0x11,  # field 3, bool true
            0x12,  # field 4, bool false
            0x18, 0x03, *b"abc",  # field 5, binary "abc"
            0x05, 0x28, 0x02,  # field 20 (delta 0: zigzag id 40), i32 zigzag(1) = 2
            0x17, *bytes.fromhex("000000000000f83f"),  # field 21, double 1.5
            0x00,
        ]
    )  # fmt: skip
    values, length = read_struct(encoded)
    assert values == {1: 42, 2: -2, 3: True, 4: False, 5: b"abc", 20: 1, 21: 1.5}
    assert length == len(encoded)


def test_lists_of_booleans_structs_and_long_lists() -> None:
    long_list = bytes([0xF5, 20, *([0x02] * 20)])  # 20 i32 elements of zigzag(1)
    encoded = bytes(
        [
            0x19, 0x31, 0x01, 0x02, 0x01,  # field 1: list of 3 bools: true, false, true
            0x19, 0x2C, 0x15, 0x02, 0x00, 0x00,  # field 2: list of 2 structs: {1: 1}, {}
            0x19, *long_list,  # field 3
            0x00,
        ]
    )  # fmt: skip
    values, _ = read_struct(encoded)
    assert values[1] == [True, False, True]
    assert values[2] == [{1: 1}, {}]
    assert values[3] == [1] * 20


def test_truncated_input_raises_with_the_source_name() -> None:
    with pytest.raises(CorruptFileError, match=r"footer of x\.parquet"):
        CompactReader(bytes([0x18, 0x05, 0x61]), source="footer of x.parquet").read_struct()


def test_real_footer_decodes_row_groups_and_page_index_offsets(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    table = pa.table({"a": list(range(1000)), "b": [str(i) for i in range(1000)]})
    pq.write_table(table, path, row_group_size=300, write_page_index=True)
    with pa.OSFile(str(path)) as stream:
        footer, _ = read_footer(stream, str(path), path.stat().st_size)
    file_metadata, _ = read_struct(footer.footer_bytes)
    assert file_metadata[3] == 1000  # FileMetaData.num_rows
    row_groups = file_metadata[4]
    assert [row_group[3] for row_group in row_groups] == [300, 300, 300, 100]
    for index, row_group in enumerate(row_groups):
        for column_index, chunk in enumerate(row_group[1]):
            arrow_chunk = footer.metadata.row_group(index).column(column_index)
            assert chunk[3][9] == arrow_chunk.data_page_offset  # ColumnMetaData.data_page_offset
            assert chunk[6] > 0 and chunk[7] > 0  # column index offset, length
            assert chunk[4] > 0 and chunk[5] > 0  # offset index offset, length
