"""The access plan of one Parquet file: per row group, skip it, scan it whole, or scan a selection of its rows.

Every pruning stage refines the same plan and never widens it:

1. The plan starts with every row group scanned whole.
2. A stage may ``skip`` a row group (nothing in it can match) or ``select`` rows of it: a boolean mask over the
   row group's rows, ANDed with any selection already there.
3. A selection that keeps no row turns into a skip; readers then see, per row group, ``None`` (skip),
   ``ALL_ROWS`` (scan whole) or a numpy boolean mask (scan, keep the True rows).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

ALL_ROWS = "all"


class AccessPlan:
    """Per row group: skipped, scanned whole, or scanned with a boolean row selection."""

    def __init__(self, row_group_num_rows: list[int]) -> None:
        self.row_group_num_rows = row_group_num_rows
        self.row_group_first_rows = [0, *np.cumsum(row_group_num_rows, dtype=np.int64).tolist()][:-1]
        self._selections: list[str | np.ndarray | None] = [ALL_ROWS] * len(row_group_num_rows)

    def __len__(self) -> int:
        return len(self._selections)

    def should_scan(self, row_group: int) -> bool:
        """True unless a stage has skipped this row group."""
        return self._selections[row_group] is not None

    def selection(self, row_group: int) -> str | np.ndarray | None:
        """None when skipped, ``ALL_ROWS`` when scanned whole, else a boolean mask of the rows to keep."""
        return self._selections[row_group]

    def skip(self, row_group: int) -> None:
        """Mark a row group as skipped: no row of it is read."""
        self._selections[row_group] = None

    def select(self, row_group: int, keep: np.ndarray) -> None:
        """Keep only rows where ``keep`` is True (ANDed with the current selection); skip when none remain."""
        current = self._selections[row_group]
        if current is None:
            return
        if len(keep) != self.row_group_num_rows[row_group]:
            raise ValueError(
                f"row selection of {len(keep)} rows for row group {row_group} of {self.row_group_num_rows[row_group]}"
            )
        combined = keep if isinstance(current, str) else current & keep
        if not combined.any():
            self._selections[row_group] = None
        elif combined.all():
            self._selections[row_group] = ALL_ROWS
        else:
            self._selections[row_group] = combined

    def scanned_row_groups(self) -> Iterator[int]:
        """Indexes of the row groups still to read, in file order."""
        return (index for index, selection in enumerate(self._selections) if selection is not None)

    def selected_row_count(self, row_group: int) -> int:
        """How many rows of the row group the plan still keeps."""
        selection = self._selections[row_group]
        if selection is None:
            return 0
        if isinstance(selection, str):
            return self.row_group_num_rows[row_group]
        return int(np.count_nonzero(selection))
