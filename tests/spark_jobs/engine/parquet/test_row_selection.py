"""Keeping selected rows: every type, sliced and chunked columns, any mask length and share of kept rows."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from spark_jobs.engine.parquet.row_selection import select_rows

KEEP = np.array([True, False, True, True, False])


@pytest.mark.parametrize(
    "column",
    [
        pa.array([1, 2, 3, 4, 5], pa.int32()),
        pa.array([1, 2, 3, 4, 5], pa.int64()),
        pa.array([0.5, 1.5, float("nan"), -0.0, 2.0]),
        pa.array([1, 2, 3, 4, 5], pa.timestamp("us", tz="UTC")),
        pa.array([datetime.date(2024, 1, day) for day in range(1, 6)]),
        pa.array([1, None, 3, None, 5], pa.int64()),
        pa.array(["a", "b", None, "d", "e"]),
        pa.array([True, False, True, False, True]),
        pa.array([[1], [2], None, [4], []]),
        pa.array([0, 1, 2, 3, 4, 5, 6], pa.int64()).slice(2),  # a sliced array: the offset must be honoured
    ],
)
def test_selected_rows_match_python_selection(column: pa.Array) -> None:
    selected = select_rows(column, KEEP)
    assert selected.type == column.type
    expected = [value for value, keep in zip(column.to_pylist(), KEEP, strict=True) if keep]
    assert [repr(value) for value in selected.to_pylist()] == [repr(value) for value in expected]


def test_chunked_columns_are_selected_chunk_by_chunk() -> None:
    column = pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3, 4, 5], pa.int64())])
    selected = select_rows(column, KEEP)
    assert isinstance(selected, pa.ChunkedArray)
    assert selected.to_pylist() == [1, 3, 4]


@pytest.mark.parametrize("length", [1, 7, 8, 9, 63, 64, 65, 1000, 65_537])
@pytest.mark.parametrize("kept_share", [0.0, 0.02, 0.5, 0.98, 1.0])
def test_masks_of_any_length_and_density_keep_exactly_the_selected_rows(length: int, kept_share: float) -> None:
    rng = np.random.default_rng(length)
    values = rng.integers(-(2**62), 2**62, length + 3)
    column = pa.array(values).slice(3)  # an offset that is not a multiple of 8
    keep = rng.random(length) < kept_share
    selected = select_rows(column, keep)
    assert selected.to_pylist() == values[3:][keep].tolist()


def test_a_strided_mask_and_a_dictionary_column() -> None:
    wide = np.array([True, True, False, False, True, True, True, False, True, True])
    keep = wide[::2]  # not contiguous: True, False, True, True, True
    column = pa.array(["x", "y", "x", None, "z"]).dictionary_encode()
    selected = select_rows(column, keep)
    assert selected.type == column.type
    assert selected.to_pylist() == ["x", "x", None, "z"]


def test_a_mask_crossing_chunk_boundaries_of_uneven_chunks() -> None:
    chunks = [pa.array(range(start, start + size), pa.int64()) for start, size in ((0, 3), (3, 13), (16, 1), (17, 9))]
    keep = np.arange(26) % 3 != 1
    selected = select_rows(pa.chunked_array(chunks), keep)
    assert selected.to_pylist() == [value for value in range(26) if value % 3 != 1]


def test_a_mask_of_another_length_is_refused() -> None:
    with pytest.raises(ValueError, match="selection of 4 rows for a column of 5"):
        select_rows(pa.array([1, 2, 3, 4, 5]), KEEP[:4])
