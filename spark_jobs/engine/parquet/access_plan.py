"""The access plan of one Parquet file: per row group, skip it, scan it whole, or scan a selection of its rows.

Every pruning stage refines the same plan and never widens it:

1. The plan starts with every row group scanned whole.
2. A stage may ``skip`` a row group (nothing in it can match), ``select`` rows of it (a boolean mask over the row
   group's rows, ANDed with any selection already there), or ``delete_rows`` by position (deletes: a few rows out
   of many, kept as sorted positions until a mask is needed, so a scan with 2% deleted rows builds one mask per
   decoded run instead of one per stage and row group).
3. A selection that keeps no row turns into a skip; readers then see, per row group, ``None`` (skip),
   ``ALL_ROWS`` (scan whole) or a numpy boolean mask (scan, keep the True rows); ``run_selection`` gives one mask
   over several row groups decoded together.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np


class WholeRowGroup(enum.Enum):
    """The selection of a row group scanned whole (its one member, ``ALL_ROWS``)."""

    ALL_ROWS = "all rows"


ALL_ROWS = WholeRowGroup.ALL_ROWS
RowSelection: TypeAlias = Literal[WholeRowGroup.ALL_ROWS] | np.ndarray
"""What to read of a scanned row group: ``ALL_ROWS``, or a numpy boolean mask of the rows to keep."""


@dataclass(frozen=True)
class _DeletedRows:
    """Every row of the row group except these sorted, unique positions (at least one row remains)."""

    positions: np.ndarray


_Selection: TypeAlias = RowSelection | _DeletedRows | None


class AccessPlan:
    """Per row group: skipped, scanned whole, or scanned with a row selection."""

    def __init__(self, row_group_num_rows: list[int]) -> None:
        self.row_group_num_rows = row_group_num_rows
        self.row_group_first_rows = [0, *np.cumsum(row_group_num_rows, dtype=np.int64).tolist()][:-1]
        self._selections: list[_Selection] = [ALL_ROWS] * len(row_group_num_rows)

    def __len__(self) -> int:
        return len(self._selections)

    def should_scan(self, row_group: int) -> bool:
        """True unless a stage has skipped this row group."""
        return self._selections[row_group] is not None

    def selection(self, row_group: int) -> RowSelection | None:
        """None when skipped, ``ALL_ROWS`` when scanned whole, else a boolean mask of the rows to keep."""
        selection = self._selections[row_group]
        if isinstance(selection, _DeletedRows):
            return self._mask_of(row_group, selection)
        return selection

    def skip(self, row_group: int) -> None:
        """Mark a row group as skipped: no row of it is read."""
        self._selections[row_group] = None

    def select(self, row_group: int, keep: np.ndarray) -> None:
        """Keep only rows where ``keep`` is True (ANDed with the current selection); skip when none remain."""
        current = self.selection(row_group)
        if current is None:
            return
        if len(keep) != self.row_group_num_rows[row_group]:
            raise ValueError(
                f"row selection of {len(keep)} rows for row group {row_group} of {self.row_group_num_rows[row_group]}"
            )
        combined = keep if current is ALL_ROWS else current & keep
        if not combined.any():
            self._selections[row_group] = None
        elif combined.all():
            self._selections[row_group] = ALL_ROWS
        else:
            self._selections[row_group] = combined

    def delete_rows(self, row_group: int, positions: np.ndarray) -> int:
        """Drop the rows at these sorted, unique positions (relative to the row group); skip when none remain.

        Returns how many rows the plan kept before and no longer keeps (what the deletes counters add).
        """
        current = self._selections[row_group]
        if current is None or not len(positions):
            return 0
        num_rows = self.row_group_num_rows[row_group]
        if positions[0] < 0 or positions[-1] >= num_rows:
            raise ValueError(f"deleted positions outside row group {row_group} of {num_rows} rows")
        rows_before = self.selected_row_count(row_group)
        if isinstance(current, np.ndarray):
            self.select(row_group, self._mask_of(row_group, _DeletedRows(positions)))
        else:
            if isinstance(current, _DeletedRows):
                positions = np.union1d(current.positions, positions)
            self._selections[row_group] = None if len(positions) >= num_rows else _DeletedRows(positions)
        return rows_before - self.selected_row_count(row_group)

    def run_selection(self, row_groups: Sequence[int]) -> RowSelection:
        """The selections of scanned row groups read one after the other: ``ALL_ROWS``, or one mask over them all."""
        selections = [self._selections[row_group] for row_group in row_groups]
        if any(selection is None for selection in selections):
            raise ValueError(f"row groups {list(row_groups)} include a skipped one")
        if all(selection is ALL_ROWS for selection in selections):
            return ALL_ROWS
        mask = np.ones(sum(self.row_group_num_rows[row_group] for row_group in row_groups), dtype=bool)
        offset = 0
        for row_group, selection in zip(row_groups, selections, strict=True):
            num_rows = self.row_group_num_rows[row_group]
            if isinstance(selection, _DeletedRows):
                mask[offset + selection.positions] = False
            elif isinstance(selection, np.ndarray):
                mask[offset : offset + num_rows] = selection
            offset += num_rows
        return mask

    def scanned_row_groups(self) -> Iterator[int]:
        """Indexes of the row groups still to read, in file order."""
        return (index for index, selection in enumerate(self._selections) if selection is not None)

    def selected_row_count(self, row_group: int) -> int:
        """How many rows of the row group the plan still keeps."""
        selection = self._selections[row_group]
        if selection is None:
            return 0
        if selection is ALL_ROWS:
            return self.row_group_num_rows[row_group]
        if isinstance(selection, _DeletedRows):
            return self.row_group_num_rows[row_group] - len(selection.positions)
        return int(np.count_nonzero(selection))

    def _mask_of(self, row_group: int, deleted: _DeletedRows) -> np.ndarray:
        mask = np.ones(self.row_group_num_rows[row_group], dtype=bool)
        mask[deleted.positions] = False
        return mask
