"""Row-group-aligned splitting and Iceberg's bin packing, against hand-computed plans."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_jobs.engine.planning.scan_tasks import DataFileSlice, DeletionVector, EqualityDeleteFile, PositionDeleteFile
from spark_jobs.engine.planning.splitting import (
    DEFAULT_LOOKBACK,
    DEFAULT_OPEN_FILE_COST,
    DEFAULT_SPLIT_SIZE,
    SplitSettings,
    adaptive_split_size,
    adaptive_split_size_enabled,
    pack_slices,
    pack_weights,
    slice_weight,
    split_data_file,
    usable_split_offsets,
)
from spark_jobs.engine.shared.errors import UserInputError


def _file(size: int, offsets: tuple[int, ...] | None = None, path: str = "f.parquet", **kwargs) -> DataFileSlice:
    return DataFileSlice(
        path=path, file_size_in_bytes=size, record_count=1, spec_id=0, length=size, split_offsets=offsets, **kwargs
    )


def _ranges(slices: list[DataFileSlice]) -> list[tuple[int, int]]:
    return [(s.start, s.start + s.length) for s in slices]


def test_row_groups_join_a_slice_while_it_stays_within_the_split_size():
    # Row groups of 96, 100, 100 and 100 bytes.
    data_file = _file(400, (4, 100, 200, 300))
    assert _ranges(split_data_file(data_file, 150)) == [(0, 100), (100, 200), (200, 300), (300, 400)]
    assert _ranges(split_data_file(data_file, 200)) == [(0, 200), (200, 400)]
    assert _ranges(split_data_file(data_file, 296)) == [(0, 300), (300, 400)]
    assert _ranges(split_data_file(data_file, 10_000)) == [(0, 400)]


def test_a_row_group_larger_than_the_split_size_is_a_slice_of_its_own():
    assert _ranges(split_data_file(_file(1000, (4, 900)), 100)) == [(0, 900), (900, 1000)]


@pytest.mark.parametrize(
    "offsets",
    [None, (), (4, 4), (300, 100), (4, 400), (-1, 10)],
    ids=["absent", "empty", "repeated", "descending", "at-file-end", "negative"],
)
def test_missing_or_untrustworthy_split_offsets_give_one_slice(offsets):
    data_file = _file(400, offsets)
    assert usable_split_offsets(offsets, 400) is None
    (whole,) = split_data_file(data_file, 10)
    assert whole.is_whole_file
    assert _ranges([whole]) == [(0, 400)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=500), min_size=1, max_size=12),
    st.integers(min_value=1, max_value=1500),
)
def test_slices_partition_the_file_and_each_row_group_starts_in_exactly_one(row_group_sizes, split_size):
    offsets = [4]
    for size in row_group_sizes[:-1]:
        offsets.append(offsets[-1] + size)
    file_size = offsets[-1] + row_group_sizes[-1] + 8  # footer
    slices = split_data_file(_file(file_size, tuple(offsets)), split_size)

    ranges = _ranges(slices)
    assert ranges[0][0] == 0
    assert ranges[-1][1] == file_size
    assert all(end == next_start for (_, end), (next_start, _) in pairwise(ranges))
    for offset in offsets:
        assert sum(start <= offset < end for start, end in ranges) == 1
    # Every slice starts on a row group, and holds more than one only while within the split size.
    assert all(start in offsets for start, _ in ranges[1:])
    for index, (start, end) in enumerate(ranges):
        starts_inside = [o for o in offsets if start <= o < end]
        slice_end = end if index < len(ranges) - 1 else offsets[-1] + row_group_sizes[-1]
        assert len(starts_inside) == 1 or slice_end - starts_inside[0] <= split_size


def test_slice_weight_counts_deletes_and_at_least_one_open_cost_per_file():
    position_delete = PositionDeleteFile("p.parquet", 500, 3, 2)
    equality_delete = EqualityDeleteFile("e.parquet", 700, 3, (1,), 2)
    deletion_vector = DeletionVector("dv.puffin", 4, 60, 3, "f.parquet", 2)
    assert slice_weight(_file(1000), 10) == 1000
    assert slice_weight(_file(1000), 4000) == 4000
    with_deletes = _file(1000, position_deletes=(position_delete,), equality_deletes=(equality_delete,))
    assert slice_weight(with_deletes, 10) == 2200
    assert slice_weight(with_deletes, 1000) == 3000  # (1 + 2 delete files) * open cost
    # A deletion vector weighs its blob, not its whole Puffin file.
    assert slice_weight(_file(1000, deletion_vector=deletion_vector), 10) == 1060


def _sized(*sizes: int) -> list[DataFileSlice]:
    return [_file(size, path=f"file-{index}-{size}") for index, size in enumerate(sizes)]


def _sizes_per_task(tasks) -> list[list[int]]:
    return [[s.length for s in task.slices] for task in tasks]


def test_packing_puts_each_slice_in_the_first_open_bin_it_fits():
    tasks = pack_slices(_sized(60, 50, 40, 30), SplitSettings(split_size=100, open_file_cost=10, lookback=10))
    assert _sizes_per_task(tasks) == [[60, 40], [50, 30]]


def test_packing_closes_the_heaviest_bin_when_more_than_lookback_are_open():
    tasks = pack_slices(_sized(60, 50, 40, 30), SplitSettings(split_size=100, open_file_cost=10, lookback=1))
    assert _sizes_per_task(tasks) == [[60], [50, 40], [30]]


def test_open_file_cost_limits_small_files_per_task():
    tasks = pack_slices(_sized(*([1] * 10)), SplitSettings(split_size=100, open_file_cost=30, lookback=10))
    assert _sizes_per_task(tasks) == [[1, 1, 1]] * 3 + [[1]]


@settings(max_examples=400, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([1, 2, 3, 5, 8, 13, 25, 40, 60, 99, 100, 150]), max_size=80),
    lookback=st.integers(1, 12),
)
def test_packing_weights_gives_the_bins_packing_slices_gives(sizes: list[int], lookback: int) -> None:
    """The columnar packer skips bins too full for the lightest weight; the bins stay those of the slice packer."""
    slices = _sized(*sizes)
    tasks = pack_slices(slices, SplitSettings(split_size=100, open_file_cost=1, lookback=lookback))
    position_of = {piece.path: index for index, piece in enumerate(slices)}
    expected = [[position_of[piece.path] for piece in task.slices] for task in tasks]
    assert pack_weights(sizes, 100, lookback) == expected


def test_settings_come_from_table_properties_and_arguments_override_them():
    assert SplitSettings.from_table_properties({}) == SplitSettings(
        DEFAULT_SPLIT_SIZE, DEFAULT_OPEN_FILE_COST, DEFAULT_LOOKBACK
    )
    assert (DEFAULT_SPLIT_SIZE, DEFAULT_OPEN_FILE_COST, DEFAULT_LOOKBACK) == (134217728, 4194304, 10)
    properties = {
        "read.split.target-size": "1000",
        "read.split.open-file-cost": "10",
        "read.split.planning-lookback": "3",
    }
    assert SplitSettings.from_table_properties(properties) == SplitSettings(1000, 10, 3)
    assert SplitSettings.from_table_properties(properties, split_size=5, lookback=1) == SplitSettings(5, 10, 1)


def test_bad_settings_are_user_errors():
    with pytest.raises(UserInputError, match=r"read\.split\.target-size must be an integer"):
        SplitSettings.from_table_properties({"read.split.target-size": "128MB"})
    with pytest.raises(UserInputError, match="split size must be positive"):
        SplitSettings(split_size=0)
    with pytest.raises(UserInputError, match="lookback must be positive"):
        SplitSettings(lookback=0)


MIB = 1024 * 1024


MIB_SETTINGS = SplitSettings(split_size=128 * MIB, open_file_cost=4 * MIB, lookback=DEFAULT_LOOKBACK)


def _files(count: int, size: int) -> list[DataFileSlice]:
    return [_file(size, path=f"f{index}.parquet") for index in range(count)]


def _task_weights(slices: list[DataFileSlice], split_size: int) -> list[int]:
    pieces = [piece for data_file in slices for piece in split_data_file(data_file, split_size)]
    tasks = pack_slices(pieces, SplitSettings(split_size, MIB_SETTINGS.open_file_cost, MIB_SETTINGS.lookback))
    return sorted(sum(piece.length for piece in task.slices) for task in tasks)


def test_a_scan_lighter_than_a_split_per_slot_is_balanced_over_the_slots():
    # 8 files of 20 MiB on 2 slots: the configured 128 MiB packs 6 + 2 files (Java keeps that); balanced, 4 + 4.
    files = _files(8, 20 * MIB)
    assert _task_weights(files, 128 * MIB) == [40 * MIB, 120 * MIB]
    size = adaptive_split_size(files, MIB_SETTINGS, 2)
    assert _task_weights(files, size) == [80 * MIB, 80 * MIB]
    assert size == 80 * MIB  # the smallest size that packs into 2 tasks


def test_one_large_file_is_split_over_the_slots_on_row_group_boundaries():
    # 100 MiB in 25 row groups of 4 MiB, 4 slots: Java's rule (a quarter of the scan, 25 MiB) packs 4 tasks.
    data_file = _file(100 * MIB, tuple(range(0, 100 * MIB, 4 * MIB)))
    size = adaptive_split_size([data_file], MIB_SETTINGS, 4)
    assert len(_task_weights([data_file], size)) <= 4
    assert max(_task_weights([data_file], size)) <= 28 * MIB


def test_a_scan_of_a_full_split_per_slot_or_more_keeps_the_configured_size():
    assert adaptive_split_size(_files(20, 20 * MIB), MIB_SETTINGS, 2) == 128 * MIB
    # 2,000 small files weigh their open cost each (8 GB in all): never cut further.
    assert adaptive_split_size(_files(2000, 3_000), MIB_SETTINGS, 2) == 128 * MIB


def test_the_split_size_never_drops_below_16_mib_nor_exceeds_the_configured_one():
    assert adaptive_split_size(_files(4, 2 * MIB), MIB_SETTINGS, 4) == 16 * MIB
    # 3 files of 100 MiB need 3 tasks even at 128 MiB: the configured size stays.
    assert adaptive_split_size(_files(3, 100 * MIB), MIB_SETTINGS, 2) == 128 * MIB


def test_adaptive_split_size_property_defaults_to_true_and_rejects_other_words():
    assert adaptive_split_size_enabled({})
    assert adaptive_split_size_enabled({"read.split.adaptive-size.enabled": "TRUE"})
    assert not adaptive_split_size_enabled({"read.split.adaptive-size.enabled": "false"})
    with pytest.raises(UserInputError, match=r"read\.split\.adaptive-size\.enabled must be true or false, got 'yes'"):
        adaptive_split_size_enabled({"read.split.adaptive-size.enabled": "yes"})
    with pytest.raises(UserInputError, match="parallelism must be positive"):
        adaptive_split_size(_files(1, 10), MIB_SETTINGS, 0)
