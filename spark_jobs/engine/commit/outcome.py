"""Decide from the table itself whether a commit whose catalog call gave no answer landed.

A catalog call that raises anything but ``CommitFailedException`` (a connection reset, a timeout, a 5xx from a REST
catalog, an interrupt) may have been applied or not. Its outcome is never guessed:

1. Reload the table through the catalog, up to ``commit.status-check.num-retries`` more times (3), waiting
   ``commit.status-check.min-wait-ms`` (1 s) doubling up to ``commit.status-check.max-wait-ms`` (60 s), for at most
   ``commit.status-check.total-timeout-ms`` (30 min): Iceberg Java's status check and its defaults.
2. LANDED when the reloaded table shows the snapshot the commit made: among its snapshots, as the parent of one
   (the snapshot itself may have been expired meanwhile), in the snapshot log, as the target of a ref, or recorded
   with the commit's idempotency key.
3. NOT_LANDED when it shows none of that and the commit's requirements can no longer hold: the branch no longer
   points at the snapshot the commit asserted as its parent, or the table is another table (new uuid). The request
   cannot be applied later, so the files it wrote can be deleted.
4. IN_FLIGHT when it shows none of that but the branch still points at the asserted parent: the request may still
   be applied. The caller sends the same request again: both assert the same branch head, so at most one lands.
5. A reload that never succeeds leaves the outcome unknown (``ReloadFailedError``): the caller deletes nothing.
6. Before deleting the files of a commit decided NOT_LANDED, the caller checks that none of them is live at the
   branch head (``files_live_at``): a snapshot expired right after it landed loses its id from the table (pyiceberg
   also clears its children's parent id), but its files live on in its descendants.
"""

from __future__ import annotations

import enum
import logging
import time
from dataclasses import dataclass

from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata

from spark_jobs.engine.table.properties import int_property

log = logging.getLogger(__name__)

STATUS_CHECK_RETRIES_PROPERTY = "commit.status-check.num-retries"
STATUS_CHECK_MIN_WAIT_PROPERTY = "commit.status-check.min-wait-ms"
STATUS_CHECK_MAX_WAIT_PROPERTY = "commit.status-check.max-wait-ms"
STATUS_CHECK_TIMEOUT_PROPERTY = "commit.status-check.total-timeout-ms"


class CommitOutcome(enum.Enum):
    """What the reloaded table says about a commit (module doc, steps 2-4)."""

    LANDED = "landed"
    NOT_LANDED = "not landed"
    IN_FLIGHT = "in flight"


class ReloadFailedError(Exception):
    """The table could not be reloaded within the status check's bounds; ``__cause__`` is the last failure."""


@dataclass(frozen=True)
class StatusCheck:
    """How often and how long to reload the table to decide a commit's outcome (Java's property names)."""

    retries: int = 3
    min_wait_ms: int = 1000
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 30 * 60 * 1000

    @classmethod
    def of(cls, properties: dict[str, str]) -> StatusCheck:
        """The status check the table's properties configure (Java's defaults otherwise)."""
        default = cls()
        return cls(
            retries=max(0, int_property(properties, STATUS_CHECK_RETRIES_PROPERTY, default.retries)),
            min_wait_ms=max(0, int_property(properties, STATUS_CHECK_MIN_WAIT_PROPERTY, default.min_wait_ms)),
            max_wait_ms=max(0, int_property(properties, STATUS_CHECK_MAX_WAIT_PROPERTY, default.max_wait_ms)),
            total_timeout_ms=max(0, int_property(properties, STATUS_CHECK_TIMEOUT_PROPERTY, default.total_timeout_ms)),
        )

    def waits_seconds(self) -> list[float]:
        """The pauses before each retry of the reload, within the total timeout."""
        waits, total = [], 0
        for retry in range(self.retries):
            wait = min(self.max_wait_ms, self.min_wait_ms * 2**retry)
            if total + wait > self.total_timeout_ms:
                break
            waits.append(wait / 1000)
            total += wait
        return waits


@dataclass(frozen=True)
class PendingCommit:
    """What identifies one commit request in the table: its snapshot, the branch and head it asserted, its key."""

    table_uuid: str
    snapshot_id: int
    branch: str
    asserted_parent_id: int | None
    idempotency_key: str | None = None


def reload_with_retries(table: Table, check: StatusCheck) -> None:
    """Refresh ``table`` from the catalog (module doc, step 1); raises ReloadFailedError when every try failed."""
    last_error: Exception | None = None
    for wait in [0.0, *check.waits_seconds()]:
        if wait:
            time.sleep(wait)
        try:
            table.refresh()
            return
        except Exception as error:  # any failure to reload is retried, then reported as the cause
            last_error = error
            log.warning("reloading table %s to decide a commit's outcome failed: %s", ".".join(table.name()), error)
    raise ReloadFailedError(f"{type(last_error).__name__}: {last_error}") from last_error


def outcome_in_table(metadata: TableMetadata, pending: PendingCommit) -> CommitOutcome:
    """What ``metadata`` (freshly loaded) says about the commit ``pending`` (module doc, steps 2-4)."""
    if snapshot_landed(metadata, pending.snapshot_id, pending.idempotency_key):
        return CommitOutcome.LANDED
    if str(metadata.table_uuid) != str(pending.table_uuid):
        return CommitOutcome.NOT_LANDED
    ref = metadata.refs.get(pending.branch)
    head = ref.snapshot_id if ref is not None else None
    return CommitOutcome.IN_FLIGHT if head == pending.asserted_parent_id else CommitOutcome.NOT_LANDED


def snapshot_landed(metadata: TableMetadata, snapshot_id: int, idempotency_key: str | None = None) -> bool:
    """Whether the table shows snapshot ``snapshot_id``, even if expired since (module doc, step 2)."""
    from spark_jobs.engine.commit.idempotency import recorded_snapshot_id

    if metadata.snapshot_by_id(snapshot_id) is not None:
        return True
    if any(snapshot.parent_snapshot_id == snapshot_id for snapshot in metadata.snapshots):
        return True
    if any(entry.snapshot_id == snapshot_id for entry in metadata.snapshot_log):
        return True
    if any(ref.snapshot_id == snapshot_id for ref in metadata.refs.values()):
        return True
    return idempotency_key is not None and recorded_snapshot_id(metadata, idempotency_key) == snapshot_id


def files_live_at(table: Table, branch: str, paths: list[str]) -> set[str]:
    """Which of ``paths`` the head of ``branch`` references as live data or delete files (module doc, step 6)."""
    from spark_jobs.engine.table.manifest_entries import read_live_entries

    head = table.metadata.snapshot_by_name(branch)
    wanted = set(paths)
    if head is None or not wanted:
        return set()
    live: set[str] = set()
    for manifest in head.manifests(table.io):
        live.update(
            e.data_file.file_path for e in read_live_entries(manifest, table.io) if e.data_file.file_path in wanted
        )
    return live
