"""Remembered rejections: per row group, keyed by file and predicate identity, never without an identity."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest

from spark_jobs.engine.parquet.rejected_rows_cache import FileRejectedRows
from spark_jobs.engine.shared.bounded_cache import BoundedCache


@dataclass(frozen=True)
class _Predicate:
    cache_identity: object
    kind: str = "equality_delete"
    field_ids: frozenset[int] = frozenset({1})

    def keep_mask(self, columns: Mapping[int, pa.Array], num_rows: int) -> np.ndarray:
        raise AssertionError("not evaluated here")


def test_a_run_mask_is_split_into_row_group_positions() -> None:
    file_rows = FileRejectedRows(("a.parquet", 100, 1, None), BoundedCache(1 << 20))
    predicate = _Predicate(("set", 1))
    keep = np.ones(25, dtype=bool)
    keep[[0, 9, 10, 24]] = False

    file_rows.remember([3, 4, 7], [10, 10, 5], predicate, keep)

    assert file_rows.recall(3, predicate).tolist() == [0, 9]
    assert file_rows.recall(4, predicate).tolist() == [0]
    assert file_rows.recall(7, predicate).tolist() == [4]
    assert file_rows.recall(5, predicate) is None  # never evaluated


def test_row_groups_with_nothing_rejected_are_remembered_as_empty() -> None:
    file_rows = FileRejectedRows(("a.parquet", 100, 1, None), BoundedCache(1 << 20))
    predicate = _Predicate(("set", 1))
    file_rows.remember([0], [8], predicate, np.ones(8, dtype=bool))
    recalled = file_rows.recall(0, predicate)
    assert recalled is not None and recalled.size == 0


def test_answers_are_per_file_and_per_predicate_identity() -> None:
    cache = BoundedCache(1 << 20)
    first_file = FileRejectedRows(("a.parquet", 100, 1, None), cache)
    rewritten_file = FileRejectedRows(("a.parquet", 100, 2, None), cache)  # same path and size, other footer
    predicate = _Predicate(("set", 1))
    first_file.remember([0], [4], predicate, np.array([True, False, True, True]))

    assert rewritten_file.recall(0, predicate) is None
    assert first_file.recall(0, _Predicate(("set", 2))) is None
    assert first_file.recall(0, _Predicate(("set", 1))).tolist() == [1]


def test_predicates_without_an_identity_are_not_remembered() -> None:
    cache = BoundedCache(1 << 20)
    file_rows = FileRejectedRows(("a.parquet", 100, 1, None), cache)
    predicate = _Predicate(None, kind="filter")
    file_rows.remember([0], [2], predicate, np.array([True, False]))
    assert file_rows.recall(0, predicate) is None
    assert len(cache) == 0


def test_a_mask_of_the_wrong_length_is_refused() -> None:
    file_rows = FileRejectedRows(("a.parquet", 100, 1, None), BoundedCache(1 << 20))
    with pytest.raises(ValueError, match="keep mask of 5 rows for row groups \\[0, 1\\] of 6"):
        file_rows.remember([0, 1], [3, 3], _Predicate(("set", 1)), np.ones(5, dtype=bool))
