"""Java's BinPacking.ListPacker: first fit over a window of open bins, oldest or heaviest bin emitted first."""

import pytest

from spark_jobs.engine.compaction.bin_packing import ListPacker


def _pack(weights: list[int], target: int, lookback: int, largest_bin_first: bool = False) -> list[list[int]]:
    return ListPacker(target, lookback, largest_bin_first).pack(weights, lambda weight: weight)


def test_lookback_one_fills_one_bin_in_order_until_an_item_does_not_fit():
    # 60 | 50 (110 > 100: new bin, [60] emitted) + 40 = 90 | 30 does not fit: [50, 40] emitted | [30] at the end
    assert _pack([60, 50, 40, 30], target=100, lookback=1) == [[60], [50, 40], [30]]


def test_a_wider_lookback_fills_earlier_bins_first():
    # 60 | 50 opens a second bin | 40 joins 60 (=100) | 30 joins 50 (=80)
    assert _pack([60, 50, 40, 30], target=100, lookback=2) == [[60, 40], [50, 30]]


def test_evicts_the_oldest_bin_unless_largest_bin_first():
    # bins 60 and 50+45 open; 70 fits nowhere: a third bin exceeds the lookback of 2, one bin is emitted
    assert _pack([60, 50, 45, 70], target=100, lookback=2) == [[60], [50, 45], [70]]
    assert _pack([60, 50, 45, 70], target=100, lookback=2, largest_bin_first=True) == [[50, 45], [60], [70]]


def test_largest_bin_first_takes_the_first_of_equally_heavy_bins():
    assert _pack([60, 60, 60], target=100, lookback=2, largest_bin_first=True) == [[60], [60], [60]]


def test_an_item_heavier_than_the_target_gets_a_bin_of_its_own():
    assert _pack([10, 250, 20], target=100, lookback=1) == [[10], [250], [20]]
    assert _pack([10, 250, 20], target=100, lookback=5) == [[10, 20], [250]]


def test_exactly_the_target_fits_and_no_items_give_no_bins():
    assert _pack([50, 50, 1], target=100, lookback=1) == [[50, 50], [1]]
    assert _pack([], target=100, lookback=1) == []


def test_lookback_must_be_positive():
    with pytest.raises(ValueError, match="look-back size must be greater than 0"):
        ListPacker(100, 0, False)
