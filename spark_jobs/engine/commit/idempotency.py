"""Exactly-once commits: find the snapshot of the branch's history that recorded an idempotency key."""

from __future__ import annotations

from pyiceberg.table import Table
from pyiceberg.table.refs import MAIN_BRANCH
from pyiceberg.table.snapshots import Snapshot, ancestors_of

from spark_jobs.engine.commit.snapshot_change import IDEMPOTENCY_KEY_PROPERTY


def snapshot_with_idempotency_key(table: Table, key: str, *, branch: str = MAIN_BRANCH) -> Snapshot | None:
    """The newest snapshot in ``branch``'s history whose summary carries ``key``, or None."""
    head = table.metadata.snapshot_by_name(branch)
    for snapshot in ancestors_of(head, table.metadata):
        if snapshot.summary is not None and snapshot.summary[IDEMPOTENCY_KEY_PROPERTY] == key:
            return snapshot
    return None
