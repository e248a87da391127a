"""Has a table gained snapshots since a given one, and what did each change? Metadata only, no Spark.

The sensor's question (``find_new_snapshot``), a walk of the table's metadata file:
1. take the head of the branch (``main`` by default); no head means no snapshot yet;
2. follow parent links from the head back to ``since_snapshot_id`` (exclusive): these are the new snapshots;
   without ``since_snapshot_id``, or when it is no longer an ancestor (expired, or another branch), every ancestor
   counts as new;
3. keep those whose operation and summary match, and report the newest.

The watcher's (``snapshots_since``, ``commit_event``): every snapshot after a cursor, oldest first, each as an
event with what it changed:
1. the cursor is the newest snapshot reported (id, sequence number, commit time); walk back from the head to it;
   when it is no longer an ancestor (expired, rolled back), the ancestors ordered after it count (sequence number,
   else commit time); without a cursor, only the head (as the official watcher's first event);
2. what a snapshot changed is read from the manifests it wrote (``changed_partitions``): the entries it ADDED or
   DELETED, grouped by partition, named by Iceberg's partition path text, with files and rows added and removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote_plus

from pyiceberg.manifest import DataFileContent, ManifestEntryStatus
from pyiceberg.table.snapshots import Snapshot, ancestors_of

DEFAULT_BRANCH = "main"
# At most this many snapshots per poll and table (the rest follow at the next poll), and partitions per event.
MAX_SNAPSHOTS_PER_POLL = 100
MAX_PARTITIONS_LISTED = 1000


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


@dataclass(frozen=True)
class WatchCursor:
    """The newest snapshot a watcher reported: its id, and its order (sequence number, commit time) for when the
    snapshot itself is gone from the table (expired)."""

    snapshot_id: int
    sequence_number: int = 0
    timestamp_ms: int = 0

    @classmethod
    def of(cls, snapshot: Snapshot) -> WatchCursor:
        """The cursor standing at ``snapshot``."""
        return cls(snapshot.snapshot_id, snapshot.sequence_number or 0, snapshot.timestamp_ms)

    @classmethod
    def from_value(cls, value: Any) -> WatchCursor | None:
        """A cursor as stored (a dict of the fields; a bare snapshot id, the official watcher's watermark)."""
        if value is None:
            return None
        if isinstance(value, Mapping):
            return cls(int(value["snapshot_id"]), int(value.get("sequence_number") or 0), int(value["timestamp_ms"]))
        return cls(int(value))

    def as_dict(self) -> dict[str, int]:
        """The cursor as stored (JSON)."""
        return asdict(self)

    @property
    def has_order(self) -> bool:
        """Whether the cursor knows where its snapshot stood (a bare id does not)."""
        return self.timestamp_ms > 0

    def is_before(self, snapshot_or_cursor: Snapshot | WatchCursor) -> bool:
        """Whether a snapshot (or the snapshot of another cursor) was committed after this cursor's."""
        other = snapshot_or_cursor
        if not isinstance(other, WatchCursor):
            other = WatchCursor.of(other)
        if other.snapshot_id == self.snapshot_id:
            return False
        if self.sequence_number and other.sequence_number:
            return other.sequence_number > self.sequence_number
        return other.timestamp_ms > self.timestamp_ms


def snapshots_since(
    table: Any, branch: str, cursor: WatchCursor | None, limit: int = MAX_SNAPSHOTS_PER_POLL
) -> list[Snapshot]:
    """The snapshots of ``branch`` after ``cursor``, oldest first, at most ``limit`` (module doc, the watcher)."""
    metadata = table.metadata
    ref = metadata.refs.get(branch)
    head = metadata.snapshot_by_id(ref.snapshot_id) if ref is not None else None
    if head is None:
        return []
    if cursor is None:
        return [head]
    newer: list[Snapshot] = []
    for snapshot in ancestors_of(head, metadata):
        if snapshot.snapshot_id == cursor.snapshot_id:
            return newer[::-1][:limit]
        newer.append(snapshot)
    if not cursor.has_order:  # a bare id that is no ancestor: where it stood is unknown, so the head alone is new
        return [head]
    return [snapshot for snapshot in newer[::-1] if cursor.is_before(snapshot)][:limit]


def changed_partitions(table: Any, snapshot: Snapshot) -> list[dict[str, Any]]:
    """Every partition ``snapshot`` added or removed a file in, with the counts (module doc, the watcher, step 2).

    Each is ``{"spec_id", "partition", "data_files_added", "data_files_removed", "delete_files_added",
    "delete_files_removed", "rows_added", "rows_removed", "position_deletes_added", "equality_deletes_added"}``
    (``job_contract``'s
    ``PARTITION_CHANGE_FIELDS``, as the ingest job reports them); ``partition`` is ``""`` when unpartitioned.
    """
    io, specs = table.io, table.metadata.specs()
    schema = _schema_of(table, snapshot)
    changes: dict[tuple[int, tuple[Any, ...]], dict[str, Any]] = {}
    for manifest in snapshot.manifests(io):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        spec = specs[manifest.partition_spec_id]
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
            if entry.snapshot_id != snapshot.snapshot_id or entry.status == ManifestEntryStatus.EXISTING:
                continue
            data_file = entry.data_file
            partition = data_file.partition
            values = tuple(partition[i] for i in range(len(partition))) if partition is not None else ()
            change = changes.get((spec.spec_id, values))
            if change is None:
                change = changes[(spec.spec_id, values)] = _new_change(spec, schema, partition)
            _count(change, entry.status == ManifestEntryStatus.ADDED, data_file)
    return sorted(changes.values(), key=lambda c: (c["partition"], c["spec_id"]))


def _new_change(spec: Any, schema: Any, partition: Any) -> dict[str, Any]:
    counts = dict.fromkeys(_CHANGE_COUNTS, 0)
    return {"spec_id": spec.spec_id, "partition": partition_path(spec, schema, partition), **counts}


_CHANGE_COUNTS = (
    "data_files_added",
    "data_files_removed",
    "delete_files_added",
    "delete_files_removed",
    "rows_added",
    "rows_removed",
    "position_deletes_added",
    "equality_deletes_added",
)


def _count(change: dict[str, Any], added: bool, data_file: Any) -> None:
    if data_file.content == DataFileContent.DATA:
        change["data_files_added" if added else "data_files_removed"] += 1
        change["rows_added" if added else "rows_removed"] += data_file.record_count
    elif added:
        change["delete_files_added"] += 1
        kind = "equality" if data_file.content == DataFileContent.EQUALITY_DELETES else "position"
        change[f"{kind}_deletes_added"] += data_file.record_count
    else:
        change["delete_files_removed"] += 1


def partition_path(spec: Any, schema: Any, partition: Any) -> str:
    """A partition as Iceberg names it on storage (``ts_day=2024-01-05/category=a``); ``""`` when unpartitioned."""
    if not spec.fields or partition is None:
        return ""
    try:
        return str(spec.partition_to_path(partition, schema))
    except Exception:  # a source column dropped since: the values as they are, still one name per partition
        values = (partition[i] for i in range(len(partition)))
        return "/".join(
            f"{quote_plus(field.name, safe='')}={quote_plus('null' if value is None else str(value), safe='')}"
            for field, value in zip(spec.fields, values, strict=False)
        )


def _schema_of(table: Any, snapshot: Snapshot) -> Any:
    """The schema the snapshot was written with, else the table's current one."""
    for schema in table.metadata.schemas:
        if snapshot.schema_id is not None and schema.schema_id == snapshot.schema_id:
            return schema
    return table.schema()


def commit_event(table: Any, table_name: str, branch: str, snapshot: Snapshot, previous: int | None) -> dict[str, Any]:
    """A watcher's event for one snapshot (JSON-ready): the official watcher's fields (``table``, ``branch``,
    ``snapshot_id``, ``previous_snapshot_id``) and what the commit did: its operation and summary, the partitions
    it changed (at most ``MAX_PARTITIONS_LISTED``, with the count) and the rows it added and deleted
    (``ROW_COUNTS``), counted from its manifests (``None`` when they cannot be read)."""
    summary = snapshot.summary
    event: dict[str, Any] = {
        "table": table_name,
        "branch": branch,
        "snapshot_id": snapshot.snapshot_id,
        "previous_snapshot_id": previous,
        "parent_snapshot_id": snapshot.parent_snapshot_id,
        "sequence_number": snapshot.sequence_number or 0,
        "timestamp_ms": snapshot.timestamp_ms,
        "operation": summary.operation.value if summary is not None else None,
        "summary": dict(summary.additional_properties) if summary is not None else {},
    }
    try:
        changes = changed_partitions(table, snapshot)
    except Exception as error:  # an event still goes out: the commit happened
        event.update(partitions=None, partition_count=None, partitions_error=f"{type(error).__name__}: {error}")
        event.update(dict.fromkeys(ROW_COUNTS, None))
        return event
    event["partitions"] = [change["partition"] for change in changes[:MAX_PARTITIONS_LISTED]]
    event["partition_count"] = len(changes)
    event.update({name: sum(change[name] for change in changes) for name in ROW_COUNTS})
    return event


# What an event counts of the rows a commit changed: rows of the data files it added and removed, rows it deleted by
# position (position deletes, deletion vectors) and the delete keys it added (equality deletes).
ROW_COUNTS = ("rows_added", "rows_removed", "position_deletes_added", "equality_deletes_added")
