"""The deleted row positions of one data file: what ``deletes`` loads and the Parquet reader drops.

A value type shared by the two layers (like ``row_predicate``): the reader needs the positions and where they came
from (which counter they add to), never the delete files themselves.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np


class DeletedPositionsKind(enum.Enum):
    """Where a data file's deleted positions came from; each kind has its own ``ScanMetrics`` counter."""

    POSITION_DELETES = "position_deletes"
    DELETION_VECTOR = "deletion_vector"


@dataclass(frozen=True)
class DeletedPositions:
    """Sorted unique int64 positions of a data file's deleted rows, and where they came from (None: no deletes).

    ``positions`` is read-only: it may be shared with the process-wide cache.
    """

    positions: np.ndarray
    kind: DeletedPositionsKind | None

    @property
    def count(self) -> int:
        """How many rows of the data file are deleted."""
        return int(self.positions.size)


def read_only(positions: np.ndarray) -> np.ndarray:
    """The array marked read-only, so no caller can change what a cache holds."""
    positions.flags.writeable = False
    return positions


NO_DELETED_POSITIONS = DeletedPositions(read_only(np.empty(0, dtype=np.int64)), None)
