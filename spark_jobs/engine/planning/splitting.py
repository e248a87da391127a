"""Split large data files on row-group boundaries and pack slices into tasks, as Iceberg Java plans Spark scans.

Splitting (Java: ``OffsetsAwareSplitScanTaskIterator``):

1. A file's ``split_offsets`` (row-group start offsets from the manifest) are used only when strictly ascending
   and inside the file; otherwise, or when absent, the file is one slice.
2. Row group ``i`` spans ``[offsets[i], offsets[i + 1])``, the last one up to the file's end. Consecutive row groups
   join a slice while the slice stays within the split size (a slice always takes at least one row group).
3. Each slice starts at its first row group's offset, except the first slice, which starts at byte 0 (so the
   slices of one file partition ``[0, file_size)`` exactly), and ends where the next slice starts.

Packing (Java: ``TableScanUtil.planTasks`` with ``BinPacking.PackingIterable``, largest bin first):

1. A slice weighs ``max(length + sizes of its delete files, (1 + number of delete files) * open_file_cost)``;
   a deletion vector counts its blob's size, not its whole Puffin file.
2. Slices are taken in order; each goes into the first open bin it fits (bin weight + slice weight <= split
   size), or opens a new bin.
3. When more than ``lookback`` bins are open, the heaviest one (the first of equals) is closed and becomes a task.
4. When the slices run out, the remaining bins become tasks in the order they were opened.

Adaptive split size (after Java's ``SparkScan.adjustSplitSize`` with ``TableScanUtil.adjustSplitSize``): when the
reader knows its parallelism (the task slots that will run the scan), no split size was asked for and the table's
``read.split.adaptive-size.enabled`` is not false, a scan lighter than a full split per slot uses the smallest split
size, between ``max(weight / parallelism, min(16 MiB, split size))`` and the configured one, whose packing needs no
more tasks than slots. Java only adjusts when the scan gives fewer splits than slots, which leaves e.g. 8 files of
20 MiB on 2 slots as tasks of 6 and 2 files: the scan takes as long as the larger task. We measure the scan in the
packer's weights (each file at least its open-file cost), so that a scan of many small files, which the packer
already spreads over many tasks, is not cut into yet more: each Python task has a fixed cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise

from spark_jobs.engine.planning.scan_tasks import DataFileSlice, ScanTask
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.table.properties import int_property

# Table properties and their defaults (Iceberg's TableProperties).
SPLIT_SIZE_PROPERTY = "read.split.target-size"
OPEN_FILE_COST_PROPERTY = "read.split.open-file-cost"
LOOKBACK_PROPERTY = "read.split.planning-lookback"
ADAPTIVE_SPLIT_SIZE_PROPERTY = "read.split.adaptive-size.enabled"
DEFAULT_SPLIT_SIZE = 128 * 1024 * 1024
DEFAULT_OPEN_FILE_COST = 4 * 1024 * 1024
DEFAULT_LOOKBACK = 10
_BYTES = "an integer number of bytes"
MIN_ADAPTIVE_SPLIT_SIZE = 16 * 1024 * 1024
ADAPTIVE_SPLIT_SIZE_STEP = 1024 * 1024  # adaptive split sizes are whole MiB


@dataclass(frozen=True)
class SplitSettings:
    """Target split size, cost of opening a file, and how many open bins the packer keeps (all positive)."""

    split_size: int = DEFAULT_SPLIT_SIZE
    open_file_cost: int = DEFAULT_OPEN_FILE_COST
    lookback: int = DEFAULT_LOOKBACK

    def __post_init__(self) -> None:
        if self.split_size <= 0:
            raise UserInputError(f"split size must be positive, got {self.split_size}")
        if self.open_file_cost < 0:
            raise UserInputError(f"open-file cost must not be negative, got {self.open_file_cost}")
        if self.lookback <= 0:
            raise UserInputError(f"split planning lookback must be positive, got {self.lookback}")

    @classmethod
    def from_table_properties(
        cls,
        properties: Mapping[str, str],
        *,
        split_size: int | None = None,
        open_file_cost: int | None = None,
        lookback: int | None = None,
    ) -> SplitSettings:
        """Settings from the table's read.split.* properties, each overridden by an argument that is not None."""
        return cls(
            split_size=_setting(split_size, properties, SPLIT_SIZE_PROPERTY, DEFAULT_SPLIT_SIZE, _BYTES),
            open_file_cost=_setting(
                open_file_cost, properties, OPEN_FILE_COST_PROPERTY, DEFAULT_OPEN_FILE_COST, _BYTES
            ),
            lookback=_setting(lookback, properties, LOOKBACK_PROPERTY, DEFAULT_LOOKBACK, "an integer number of bins"),
        )


def adaptive_split_size_enabled(properties: Mapping[str, str]) -> bool:
    """The table's ``read.split.adaptive-size.enabled`` (default true); anything but true/false is an error."""
    raw = properties.get(ADAPTIVE_SPLIT_SIZE_PROPERTY, "true").strip().lower()
    if raw not in {"true", "false"}:
        raise UserInputError(f"table property {ADAPTIVE_SPLIT_SIZE_PROPERTY} must be true or false, got {raw!r}")
    return raw == "true"


def adaptive_split_size(slices: Sequence[DataFileSlice], settings: SplitSettings, parallelism: int) -> int:
    """The split size that spreads ``slices`` over ``parallelism`` slots (rule in the module docstring)."""
    scan_weight = sum(slice_weight(data_file, settings.open_file_cost) for data_file in slices)

    def task_count(size: int) -> int:
        pieces = [piece for data_file in slices for piece in split_data_file(data_file, size)]
        return len(pack_slices(pieces, replace(settings, split_size=size)))

    return adaptive_split_size_for(scan_weight, task_count, settings, parallelism)


def adaptive_split_size_for(
    scan_weight: int, task_count: Callable[[int], int], settings: SplitSettings, parallelism: int
) -> int:
    """The adaptive split size of a scan of ``scan_weight`` whose packing at a split size gives ``task_count``."""
    if parallelism <= 0:
        raise UserInputError(f"read parallelism must be positive, got {parallelism}")
    split_size = settings.split_size
    if scan_weight >= parallelism * split_size:
        return split_size
    smallest = max(-(-scan_weight // parallelism), min(MIN_ADAPTIVE_SPLIT_SIZE, split_size))
    if smallest >= split_size:
        return split_size
    if task_count(split_size) > parallelism:
        return split_size  # more tasks than slots even at the configured size: keep it
    # Binary search in steps of ADAPTIVE_SPLIT_SIZE_STEP (a few packings, not one per bit of a byte count).
    low, high = -(-smallest // ADAPTIVE_SPLIT_SIZE_STEP), -(-split_size // ADAPTIVE_SPLIT_SIZE_STEP)
    while low < high:
        middle = (low + high) // 2
        if task_count(middle * ADAPTIVE_SPLIT_SIZE_STEP) <= parallelism:
            high = middle
        else:
            low = middle + 1
    return min(split_size, max(smallest, high * ADAPTIVE_SPLIT_SIZE_STEP))


def split_data_file(data_file: DataFileSlice, split_size: int) -> list[DataFileSlice]:
    """Slices of a whole data file on row-group boundaries, each up to ``split_size`` bytes of row groups."""
    file_size = data_file.file_size_in_bytes
    ranges = split_ranges(usable_split_offsets(data_file.split_offsets, file_size), file_size, split_size)
    if len(ranges) == 1:
        return [data_file if data_file.is_whole_file else replace(data_file, start=0, length=file_size)]
    return [replace(data_file, start=start, length=length) for start, length in ranges]


def split_ranges(offsets: Sequence[int] | None, file_size: int, split_size: int) -> list[tuple[int, int]]:
    """A file's slices as (start, length) on row-group boundaries (``split_data_file``'s rule, on plain values)."""
    if offsets is None or len(offsets) == 1:
        return [(0, file_size)]
    row_group_ends = [*offsets[1:], file_size]
    slice_starts = [0]
    slice_bytes = row_group_ends[0] - offsets[0]
    for row_group_start, row_group_end in zip(offsets[1:], row_group_ends[1:], strict=True):
        row_group_bytes = row_group_end - row_group_start
        if slice_bytes + row_group_bytes <= split_size:
            slice_bytes += row_group_bytes
        else:
            slice_starts.append(row_group_start)
            slice_bytes = row_group_bytes
    slice_ends = [*slice_starts[1:], file_size]
    return [(start, end - start) for start, end in zip(slice_starts, slice_ends, strict=True)]


def pack_weights(weights: Sequence[int], split_size: int, lookback: int) -> list[list[int]]:
    """The positions of ``weights`` packed into bins as ``pack_slices`` packs slices (module doc, packing).

    A bin with less room left than the lightest weight can take nothing more: it stays open (it still counts
    against ``lookback`` and may be closed as the heaviest), but the first-fit search skips it, so that a scan of
    many equal small files costs one comparison per slice, not one per open bin.
    """
    if not weights:
        return []
    lightest = min(weights)
    open_bins: list[_WeightBin] = []  # in the order they were opened
    searched: list[_WeightBin] = []  # the open bins that can still take the lightest weight, in the same order
    packed: list[list[int]] = []
    for position, weight in enumerate(weights):
        for candidate in searched:
            if candidate.weight + weight <= split_size:
                candidate.weight += weight
                candidate.positions.append(position)
                if candidate.weight + lightest > split_size:
                    searched.remove(candidate)
                break
        else:
            opened = _WeightBin(weight, [position])
            open_bins.append(opened)
            if opened.weight + lightest <= split_size:
                searched.append(opened)
            if len(open_bins) > lookback:
                heaviest = max(open_bins, key=_bin_weight)  # the first of equals, as max() picks it
                open_bins.remove(heaviest)
                if heaviest in searched:
                    searched.remove(heaviest)
                packed.append(heaviest.positions)
    packed.extend(b.positions for b in open_bins)
    return packed


@dataclass(eq=False)
class _WeightBin:
    """An open bin of ``pack_weights``: its weight and the positions in it (compared by identity)."""

    weight: int
    positions: list[int]


def _bin_weight(weight_bin: _WeightBin) -> int:
    return weight_bin.weight


def usable_split_offsets(split_offsets: Sequence[int] | None, file_size: int) -> tuple[int, ...] | None:
    """The split offsets when they can be trusted (strictly ascending, within the file), else None."""
    if not split_offsets:
        return None
    if split_offsets[0] < 0 or split_offsets[-1] >= file_size:
        return None
    if any(later <= earlier for earlier, later in pairwise(split_offsets)):
        return None
    return tuple(split_offsets)


def slice_weight(data_file_slice: DataFileSlice, open_file_cost: int) -> int:
    """The packer's weight of a slice: its bytes plus its deletes' bytes, at least one open-file cost per file."""
    delete_sizes = [delete_file.file_size_in_bytes for delete_file in data_file_slice.position_deletes]
    delete_sizes += [delete_file.file_size_in_bytes for delete_file in data_file_slice.equality_deletes]
    if data_file_slice.deletion_vector is not None:
        delete_sizes.append(data_file_slice.deletion_vector.content_size_in_bytes)
    return max(data_file_slice.length + sum(delete_sizes), (1 + len(delete_sizes)) * open_file_cost)


def pack_slices(slices: Iterable[DataFileSlice], settings: SplitSettings) -> list[ScanTask]:
    """Pack slices into tasks of about ``settings.split_size`` weight (steps in the module docstring)."""
    open_bins: list[_Bin] = []
    tasks: list[ScanTask] = []
    for data_file_slice in slices:
        weight = slice_weight(data_file_slice, settings.open_file_cost)
        target = next((b for b in open_bins if b.weight + weight <= settings.split_size), None)
        if target is None:
            target = _Bin()
            open_bins.append(target)
        target.add(data_file_slice, weight)
        if len(open_bins) > settings.lookback:
            heaviest = max(open_bins, key=lambda b: b.weight)
            open_bins.remove(heaviest)
            tasks.append(heaviest.as_task())
    tasks.extend(b.as_task() for b in open_bins)
    return tasks


@dataclass(eq=False)
class _Bin:
    """Slices gathered for one task and their total weight."""

    weight: int = 0
    slices: list[DataFileSlice] = field(default_factory=list)

    def add(self, data_file_slice: DataFileSlice, weight: int) -> None:
        self.weight += weight
        self.slices.append(data_file_slice)

    def as_task(self) -> ScanTask:
        return ScanTask(tuple(self.slices))


def _setting(override: int | None, properties: Mapping[str, str], key: str, default: int, expected: str) -> int:
    """An override, else the table property parsed as an integer, else the default."""
    if override is not None:
        return int(override)
    return int_property(properties, key, default, expected=expected)
