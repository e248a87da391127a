"""Deleted positions: a count, a kind, and an array nobody can change in place."""

from __future__ import annotations

import numpy as np
import pytest

from spark_jobs.engine.shared.deleted_positions import (
    NO_DELETED_POSITIONS,
    DeletedPositions,
    DeletedPositionsKind,
    read_only,
)


def test_no_deleted_positions_counts_nothing_and_has_no_kind() -> None:
    assert NO_DELETED_POSITIONS.count == 0
    assert NO_DELETED_POSITIONS.kind is None
    assert NO_DELETED_POSITIONS.positions.dtype == np.int64


def test_read_only_positions_refuse_writes() -> None:
    deleted = DeletedPositions(read_only(np.array([1, 5, 9], dtype=np.int64)), DeletedPositionsKind.DELETION_VECTOR)
    assert deleted.count == 3
    with pytest.raises(ValueError, match="read-only"):
        deleted.positions[0] = 2
    assert not NO_DELETED_POSITIONS.positions.flags.writeable
