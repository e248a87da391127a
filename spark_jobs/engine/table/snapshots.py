"""Snapshot choice for a read: current state, a snapshot id, a branch or tag, or the state as of a time.

Time travel follows Iceberg Java (``SnapshotUtil``):

1. ``as_of`` resolves through the snapshot log (the main branch's history), not the snapshot list: the last log
   entry whose timestamp is <= the requested time wins (``snapshotIdAsOfTime``).
2. An expiry removes the log entries of the snapshots it removes (pyiceberg's ``RemoveSnapshotsUpdate``), where
   Java drops every entry before them too, so a time when main was at an expired snapshot would resolve to an
   older entry's snapshot, which never held those rows. As in Java, such a time is an error: an entry at or before
   the time our expiry recorded in ``EXPIRED_LOG_PROPERTY`` (the last expired entry's), or one followed by a new
   commit that is not its child (an expiry that recorded nothing), is no longer history.
3. The schema of a read (``schemaFor``): the table's current schema for a read of the current state, of the main
   branch or of any branch; the snapshot's own schema (``schema-id``) for a snapshot id, a timestamp or a tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import Snapshot, SnapshotLogEntry

from spark_jobs.engine.shared.errors import SnapshotNotFoundError, UserInputError

# The time of the last snapshot-log entry an expiry removed: entries up to it are not history any more (step 2).
EXPIRED_LOG_PROPERTY = "airflow-iceberg-provider.snapshot-log-expired-through-ms"
# How many snapshot ids an error message lists.
_IDS_SHOWN = 5
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class ReadTarget:
    """What a read sees: the snapshot (None for a table without one) and the schema to read it with."""

    snapshot: Snapshot | None
    schema: Schema


def resolve_read_target(
    table: Table, *, snapshot_id: int | str | None = None, ref: str | None = None, as_of: int | str | None = None
) -> ReadTarget:
    """Resolve the snapshot selector and pair it with the schema Iceberg Java reads it with."""
    snapshot = resolve_snapshot(table, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    if snapshot_id is None and as_of is None and ref is None:
        return ReadTarget(snapshot, table.schema())
    return ReadTarget(snapshot, schema_for_snapshot(table, snapshot, ref=ref))


def resolve_snapshot(
    table: Table, *, snapshot_id: int | str | None = None, ref: str | None = None, as_of: int | str | None = None
) -> Snapshot | None:
    """The snapshot selected by at most one of id, ref or as-of time; the current one (or None) without a selector."""
    selectors = {"snapshot_id": snapshot_id, "ref": ref, "as_of": as_of}
    given = [name for name, value in selectors.items() if value is not None]
    if len(given) > 1:
        raise UserInputError(f"choose at most one of snapshot_id, ref, as_of for {_table_name(table)}; got {given}")
    if snapshot_id is not None:
        return _snapshot_by_id(table, _as_snapshot_id(table, snapshot_id))
    if ref is not None:
        return _snapshot_by_ref(table, ref)
    if as_of is not None:
        return _snapshot_as_of(table, parse_as_of(as_of))
    return table.current_snapshot()


def schema_for_snapshot(table: Table, snapshot: Snapshot | None, *, ref: str | None = None) -> Schema:
    """The schema to read ``snapshot`` with: its own for time travel and tags, the current one for branches.

    Pass ``ref`` when the snapshot was chosen by a ref. Without a snapshot (empty table) the current schema applies.
    """
    if ref is not None:
        snapshot_ref = table.metadata.refs.get(ref)
        if ref == MAIN_BRANCH or snapshot_ref is None or snapshot_ref.snapshot_ref_type == SnapshotRefType.BRANCH:
            return table.schema()
        snapshot = table.snapshot_by_id(snapshot_ref.snapshot_id)
    if snapshot is None or snapshot.schema_id is None:
        return table.schema()
    schema = table.schemas().get(snapshot.schema_id)
    if schema is None:
        raise SnapshotNotFoundError(
            f"snapshot {snapshot.snapshot_id} of {_table_name(table)} names schema {snapshot.schema_id}, which the "
            f"table metadata does not hold (schemas: {sorted(table.schemas())})"
        )
    return schema


def parse_as_of(as_of: int | str) -> int:
    """Epoch milliseconds from an int, a string of digits, or ISO-8601 (no zone means UTC)."""
    if isinstance(as_of, bool):
        raise UserInputError(f"time {as_of!r} must be epoch milliseconds or an ISO-8601 timestamp")
    if isinstance(as_of, int):
        return as_of
    text = as_of.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UserInputError(
            f"time {as_of!r} is neither epoch milliseconds nor an ISO-8601 timestamp (e.g. 2024-01-05T10:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _as_snapshot_id(table: Table, snapshot_id: int | str) -> int:
    """A snapshot id given as an int or a string of digits (as job arguments arrive)."""
    if isinstance(snapshot_id, int) and not isinstance(snapshot_id, bool):
        return snapshot_id
    text = str(snapshot_id).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    raise UserInputError(f"snapshot id {snapshot_id!r} for {_table_name(table)} is not an integer")


def _snapshot_by_id(table: Table, snapshot_id: int) -> Snapshot:
    """The snapshot with this id, or an error listing some that exist."""
    snapshot = table.snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise SnapshotNotFoundError(
            f"snapshot id {snapshot_id} not found in {_table_name(table)}; {_existing_snapshots(table)}"
        )
    return snapshot


def _snapshot_by_ref(table: Table, ref: str) -> Snapshot | None:
    """The snapshot a branch or tag points at; ``main`` of a table without snapshots gives None."""
    snapshot_ref = table.metadata.refs.get(ref)
    if snapshot_ref is None:
        if ref == MAIN_BRANCH and not table.metadata.snapshots:
            return None
        refs = ", ".join(f"{name} ({r.snapshot_ref_type.value})" for name, r in sorted(table.metadata.refs.items()))
        raise SnapshotNotFoundError(f"ref {ref!r} not found in {_table_name(table)}; refs: {refs or 'none'}")
    snapshot = table.snapshot_by_id(snapshot_ref.snapshot_id)
    if snapshot is None:
        raise SnapshotNotFoundError(
            f"ref {ref!r} of {_table_name(table)} points at snapshot {snapshot_ref.snapshot_id}, which the table "
            f"metadata does not hold; {_existing_snapshots(table)}"
        )
    return snapshot


def _snapshot_as_of(table: Table, timestamp_ms: int) -> Snapshot:
    """The snapshot that was current at ``timestamp_ms``: the last snapshot-log entry at or before it (step 1)."""
    log = table.metadata.snapshot_log
    chosen_index = None
    for index, entry in enumerate(log):
        if entry.timestamp_ms <= timestamp_ms:
            chosen_index = index
    if chosen_index is None:
        first = f"the first snapshot-log entry is at {_iso(log[0].timestamp_ms)}" if log else "the table has no history"
        raise SnapshotNotFoundError(
            f"no snapshot of {_table_name(table)} as of {_iso(timestamp_ms)} ({timestamp_ms} ms): {first}"
        )
    chosen = log[chosen_index]
    snapshot = table.snapshot_by_id(chosen.snapshot_id)
    gap = _expired_gap_after(table, chosen.snapshot_id, log[chosen_index + 1] if chosen_index + 1 < len(log) else None)
    expired_through = _expired_through(table)
    if gap is None and expired_through is not None and chosen.timestamp_ms <= expired_through:
        gap = f"a snapshot of the history an expiry removed (up to {_iso(expired_through)})"
    if snapshot is None or gap is not None:
        expired = f"snapshot {chosen.snapshot_id}" if snapshot is None else gap
        raise SnapshotNotFoundError(
            f"{_table_name(table)} as of {_iso(timestamp_ms)} was at {expired}, which has expired; "
            f"{_existing_snapshots(table)}"
        )
    return snapshot


def _expired_through(table: Table) -> int | None:
    """The time up to which an expiry removed history (``EXPIRED_LOG_PROPERTY``), when one recorded it."""
    value = table.properties.get(EXPIRED_LOG_PROPERTY)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _expired_gap_after(table: Table, snapshot_id: int, following: SnapshotLogEntry | None) -> str | None:
    """Words for the expired history between a log entry and the next, when the next shows there was some (step 2).

    The next entry records a new commit (its time is the snapshot's own) whose parent is not the entry's snapshot,
    and other commits came between the two (sequence numbers): the main branch was at other snapshots in between,
    whose log entries an expiry removed with them. (A REPLACE TABLE commit has no parent either, but directly
    follows the entry it replaces, so its history stays readable as in Java.)
    """
    if following is None:
        return None
    successor = table.snapshot_by_id(following.snapshot_id)
    if successor is None or successor.timestamp_ms != following.timestamp_ms:
        return None  # a rollback or a move to an older snapshot: the entry's snapshot was current until then
    if successor.parent_snapshot_id == snapshot_id:
        return None
    entry_snapshot = table.snapshot_by_id(snapshot_id)
    if entry_snapshot is None or not entry_snapshot.sequence_number or not successor.sequence_number:
        return None  # format v1: no sequence numbers to tell
    if successor.sequence_number <= entry_snapshot.sequence_number + 1:
        return None
    parent = successor.parent_snapshot_id
    return f"a snapshot before {following.snapshot_id} ({'its parent ' + str(parent) if parent else 'no longer known'})"


def _existing_snapshots(table: Table) -> str:
    """What the table holds, for an error message: snapshot count, a few ids and the time span."""
    snapshots = sorted(table.metadata.snapshots, key=lambda snapshot: snapshot.timestamp_ms)
    if not snapshots:
        return "the table has no snapshots"
    latest_ids = ", ".join(str(snapshot.snapshot_id) for snapshot in snapshots[-_IDS_SHOWN:])
    return (
        f"it has {len(snapshots)} snapshots from {_iso(snapshots[0].timestamp_ms)} to "
        f"{_iso(snapshots[-1].timestamp_ms)}, the latest ids: {latest_ids}"
    )


def _iso(timestamp_ms: int) -> str:
    """Epoch milliseconds as an ISO-8601 UTC string, for messages."""
    return datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


def _table_name(table: Table) -> str:
    """The table's dotted name, for messages."""
    return "table " + ".".join(table.name())
