"""The access plan: stages only narrow it; empty selections become skips."""

from __future__ import annotations

import numpy as np
import pytest

from spark_jobs.engine.parquet.access_plan import ALL_ROWS, AccessPlan


def test_selections_combine_and_collapse() -> None:
    plan = AccessPlan([4, 3, 2])
    assert plan.row_group_first_rows == [0, 4, 7]
    plan.select(0, np.array([True, True, False, True]))
    plan.select(0, np.array([False, True, True, True]))
    assert plan.selection(0).tolist() == [False, True, False, True]
    plan.select(1, np.zeros(3, dtype=bool))
    assert not plan.should_scan(1)
    plan.select(2, np.ones(2, dtype=bool))
    assert plan.selection(2) is ALL_ROWS
    plan.skip(2)
    assert list(plan.scanned_row_groups()) == [0]
    assert plan.selected_row_count(0) == 2
    plan.select(1, np.ones(3, dtype=bool))  # a skipped row group stays skipped
    assert plan.selection(1) is None


def test_selection_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="row group 0"):
        AccessPlan([4]).select(0, np.ones(3, dtype=bool))


def test_deleted_rows_stay_positions_until_a_mask_is_needed() -> None:
    plan = AccessPlan([4, 3, 2])
    assert plan.delete_rows(0, np.array([1, 3])) == 2
    assert plan.selected_row_count(0) == 2
    assert plan.selection(0).tolist() == [True, False, True, False]
    assert plan.delete_rows(0, np.array([0, 3])) == 1  # merged with the earlier positions: 3 was gone already
    assert plan.selection(0).tolist() == [False, False, True, False]
    plan.select(1, np.array([True, False, True]))
    assert plan.delete_rows(1, np.array([0])) == 1  # onto a mask
    assert plan.selection(1).tolist() == [False, False, True]
    assert plan.delete_rows(2, np.array([0, 1])) == 2  # every row deleted: skipped
    assert not plan.should_scan(2)
    assert plan.delete_rows(2, np.array([0])) == 0  # a skipped row group loses nothing more
    plan.select(0, np.array([True, True, True, True]))  # a mask onto positions
    assert plan.selected_row_count(0) == 1


def test_run_selection_is_one_mask_over_the_run() -> None:
    plan = AccessPlan([4, 3, 2])
    assert plan.run_selection([0, 1, 2]) is ALL_ROWS
    plan.delete_rows(0, np.array([2]))
    plan.select(2, np.array([False, True]))
    assert plan.run_selection([0, 1, 2]).tolist() == [True, True, False, True, True, True, True, False, True]
    assert plan.run_selection([1]) is ALL_ROWS
    plan.skip(1)
    with pytest.raises(ValueError, match="skipped"):
        plan.run_selection([0, 1])


def test_deleted_positions_outside_the_row_group_are_refused() -> None:
    with pytest.raises(ValueError, match="outside row group 0"):
        AccessPlan([4]).delete_rows(0, np.array([4]))
