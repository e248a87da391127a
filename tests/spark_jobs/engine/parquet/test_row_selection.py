"""Keeping selected rows: the numpy fast path and the Arrow filter path give the same rows."""

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
