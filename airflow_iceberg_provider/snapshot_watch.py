"""Has a table gained a snapshot since a given one, optionally of an operation or with summary values?

Metadata only (the table's metadata file through the catalog), no Spark. The walk:
1. take the head of the branch (``main`` by default); no head means no snapshot yet;
2. follow parent links from the head back to ``since_snapshot_id`` (exclusive): these are the new snapshots;
   without ``since_snapshot_id``, or when it is no longer an ancestor (expired, or another branch), every ancestor
   counts as new;
3. keep those whose operation and summary match, and report the newest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.table.snapshots import Snapshot, ancestors_of

DEFAULT_BRANCH = "main"


@dataclass(frozen=True)
class SnapshotCondition:
    """Which new snapshot counts: newer than ``since_snapshot_id`` on ``branch``, of ``operation``, with ``summary``."""

    since_snapshot_id: int | None = None
    operation: str | None = None
    summary: Mapping[str, str] = field(default_factory=dict)
    branch: str = DEFAULT_BRANCH

    def matches(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot``'s operation and summary satisfy the condition."""
        summary = snapshot.summary
        if self.operation is not None and (summary is None or summary.operation.value != self.operation):
            return False
        values = summary.additional_properties if summary is not None else {}
        return all(values.get(key) == str(expected) for key, expected in self.summary.items())


def find_new_snapshot(table: Any, condition: SnapshotCondition) -> dict[str, Any] | None:
    """The newest snapshot of ``table`` (a pyiceberg Table) that is new and matches, as a JSON-ready dict."""
    metadata = table.metadata
    ref = metadata.refs.get(condition.branch)
    if ref is None:
        return None
    head = metadata.snapshot_by_id(ref.snapshot_id)
    for snapshot in ancestors_of(head, metadata):
        if snapshot.snapshot_id == condition.since_snapshot_id:
            return None
        if condition.matches(snapshot):
            return snapshot_description(snapshot, condition)
    return None


def snapshot_description(snapshot: Snapshot, condition: SnapshotCondition) -> dict[str, Any]:
    """What a sensor returns about a snapshot (XCom and trigger events must be JSON-ready)."""
    summary = snapshot.summary
    return {
        "snapshot_id": snapshot.snapshot_id,
        "parent_snapshot_id": snapshot.parent_snapshot_id,
        "sequence_number": snapshot.sequence_number,
        "timestamp_ms": snapshot.timestamp_ms,
        "operation": summary.operation.value if summary is not None else None,
        "summary": dict(summary.additional_properties) if summary is not None else {},
        "branch": condition.branch,
        "since_snapshot_id": condition.since_snapshot_id,
    }


def parse_snapshot_id(value: Any) -> int | None:
    """A snapshot id from an argument or rendered template (``None``, ``""`` and ``"None"`` mean none)."""
    if value is None:
        return None
    text = str(value).strip()
    if text in ("", "None"):
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"snapshot id {value!r} is not an integer") from None
