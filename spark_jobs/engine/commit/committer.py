"""Commit a ``SnapshotChange`` once, safely: asserted branch head, retries when safe, no guessed outcome.

1. Refuse tables we cannot write (format other than v2/v3, v3 features we do not write: ``format_v3``), and a
   change whose deletion vectors or file-scoped position deletes name a data file of another partition
   (``delete_partitions``).
2. With an idempotency key already committed to the branch (``idempotency``): commit nothing, delete the files the
   job wrote, and report that snapshot.
3. Build the snapshot on the current metadata (one snapshot id for every attempt, so a landed attempt is
   recognised) and send it through the catalog, asserting the branch head. The catalog's answer is the table's new
   state: no reload follows a landed commit.
4. ``CommitFailedException`` (the catalog refused the request): delete this attempt's manifests, reload the table;
   if the snapshot or the idempotency key landed meanwhile, report it; otherwise validate the commits since the
   start (``conflicts``) and try again (``commit.retry.num-retries`` times, with backoff).
5. Any other failure of the catalog call leaves the outcome unknown; it is decided from the reloaded table
   (``outcome``): landed is reported; not landed is step 4's lost race; in flight sends the same request again
   (at most one of the two can land). When the table cannot be reloaded, nothing is deleted: the files the change
   wrote are listed in a record beside the table (``pending_commits``) and ``CommitOutcomeUnknownError`` names the
   table, the snapshot id and the record. A retry with the same idempotency key settles it.
6. On any other failure (nothing sent, or every request certainly refused), delete every file the change added and
   every manifest written; a file that cannot be deleted is named in the error.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import Table, TableProperties
from pyiceberg.table.refs import MAIN_BRANCH
from pyiceberg.table.snapshots import Snapshot

from spark_jobs.engine.commit.conflicts import validate_concurrent_commits
from spark_jobs.engine.commit.delete_partitions import check_delete_partitions
from spark_jobs.engine.commit.format_v3 import check_writable
from spark_jobs.engine.commit.idempotency import CommittedKey, committed_snapshot_for_key
from spark_jobs.engine.commit.outcome import (
    CommitOutcome,
    PendingCommit,
    ReloadFailedError,
    StatusCheck,
    files_live_at,
    outcome_in_table,
    reload_with_retries,
)
from spark_jobs.engine.commit.pending_commits import new_record, settled_quietly, write_pending_record
from spark_jobs.engine.commit.producer import BuiltSnapshot, CommitConflictError, SnapshotProducer, delete_quietly
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.shared.errors import EngineError
from spark_jobs.engine.table.manifest_entries import read_live_entries
from spark_jobs.engine.table.properties import int_property

log = logging.getLogger(__name__)
_MAX_BACKOFF_SECONDS = 2.0


class CommitError(EngineError):
    """The commit did not happen; the message says why and which written files could not be removed."""


class CommitOutcomeUnknownError(CommitError):
    """The catalog did not say whether the commit landed and the table could not be reloaded to find out.

    Nothing was deleted; ``record_location`` names the record listing the files the commit wrote (None when it
    could not be written: then the files are in the log).
    """

    def __init__(self, message: str, *, snapshot_id: int, record_location: str | None) -> None:
        super().__init__(message)
        self.snapshot_id = snapshot_id
        self.record_location = record_location


@dataclass(frozen=True)
class CommitResult:
    """What the commit did: the snapshot now holding the change, whether it was already there, how many tries,
    the snapshot's sequence number and how long the commit took (``None`` where not known)."""

    snapshot_id: int
    operation: str
    already_committed: bool
    attempts: int
    summary: dict[str, Any]
    sequence_number: int | None = None
    seconds: float | None = None


def require_writable_format(table: Table) -> None:
    """Writes support format v2 and v3 tables, v3 without the features we do not write (``format_v3``)."""
    check_writable(table)


def commit_change(
    table: Table,
    change: SnapshotChange,
    *,
    starting_snapshot_id: int | str | None = "current",
    branch: str = MAIN_BRANCH,
    job: str = "commit",
) -> CommitResult:
    """Commit ``change`` to ``table``'s ``branch`` (module doc); ``table`` holds the committed state afterwards.

    ``starting_snapshot_id`` is the branch head the change was planned on ("current": the table's head now);
    ``job`` names the writer in a pending commit record.
    """
    start = table.metadata.snapshot_by_name(branch) if starting_snapshot_id == "current" else None
    start_id = start.snapshot_id if starting_snapshot_id == "current" and start else starting_snapshot_id
    committer = _Committer(table, change, branch, start_id, job)  # type: ignore[arg-type]
    earlier: CommittedKey | None = None
    started = time.perf_counter()
    try:
        require_writable_format(table)
        check_delete_partitions(table, change, branch)
        if change.idempotency_key is not None:
            earlier = committed_snapshot_for_key(table, change.idempotency_key, branch=branch)
        if earlier is not None:
            _delete_unreferenced(table, change, earlier)
            result = already_committed_result(earlier)
        else:
            result = committer.commit()
    except CommitOutcomeUnknownError:
        raise
    except BaseException as error:
        if committer.undecided is not None:
            unknown = committer.unknown(error, None)
            if not isinstance(error, Exception):  # an interrupt stays an interrupt, after the record is written
                log.error("%s", unknown)
                raise
            raise unknown from error
        if earlier is not None:  # the key committed; which of the change's files it holds is not known here
            raise
        left = _delete_written(table, change)
        if left:
            raise CommitError(
                f"commit to table {'.'.join(table.name())} failed ({error}); these written files could not be "
                f"deleted: {', '.join(left)}"
            ) from error
        raise
    settled_quietly(table)
    return dataclasses.replace(result, seconds=time.perf_counter() - started)


class _Committer:
    """The attempts of one commit, and the request whose outcome is still undecided (if any)."""

    def __init__(self, table: Table, change: SnapshotChange, branch: str, start_id: int | None, job: str) -> None:
        self.table, self.change, self.branch, self.start_id, self.job = table, change, branch, start_id, job
        self.producer = SnapshotProducer(change, branch=branch)
        self.table_uuid = str(table.metadata.table_uuid)
        self.undecided: BuiltSnapshot | None = None  # sent, answer unknown, not yet decided from the table
        properties = table.metadata.properties
        self.retries = max(0, int_property(properties, TableProperties.COMMIT_NUM_RETRIES, 4))
        self.min_wait = max(0, int_property(properties, TableProperties.COMMIT_MIN_RETRY_WAIT_MS, 100)) / 1000
        self.status_check = StatusCheck.of(properties)

    def commit(self) -> CommitResult:
        """Build, send, and settle lost races or unknown answers (module doc, steps 3-5)."""
        for attempt in range(1, self.retries + 2):
            built = self.producer.build(self.table)
            try:
                return self._send(built, attempt)
            except CommitFailedException as error:
                refused = error
            # Refused, or decided not landed: this attempt's manifests can go; the data files stay for the next.
            delete_quietly(self.table, built.written_paths)
            self.undecided = None
            log.warning("commit attempt %d to %s lost a race: %s", attempt, self._name(), refused)
            landed = self._landed_meanwhile()
            if landed is not None:
                return landed
            validate_concurrent_commits(self.table, self.change, self.start_id, branch=self.branch)
            if attempt > self.retries:
                raise CommitConflictError(f"commit to table {self._name()} lost the race {attempt} times; giving up")
            self._back_off(attempt)
        raise AssertionError("unreachable")

    def _back_off(self, attempt: int) -> None:
        """Wait before the next try: ``commit.retry.min-wait-ms`` doubling per try, at most 2 s, with jitter."""
        time.sleep(min(_MAX_BACKOFF_SECONDS, self.min_wait * 2 ** (attempt - 1)) * (1 + random.random() / 10))

    def _send(self, built: BuiltSnapshot, attempt: int) -> CommitResult:
        """Send ``built`` until the table says it landed; CommitFailedException when it certainly did not."""
        unanswered = False
        sends = 0
        while True:
            sends += 1
            self.undecided = built  # until the catalog or the table answers (an interrupt keeps it undecided)
            try:
                response = self.table.catalog.commit_table(self.table, built.requirements, built.updates)
            except CommitFailedException as refusal:
                if not unanswered:
                    self.undecided = None
                    raise
                # An earlier, unanswered send of this request may be why this one was refused: ask the table.
                outcome, error = self._decide(built, refusal)
            except Exception as no_answer:
                unanswered = True
                log.warning(
                    "commit of snapshot %s to %s got no answer: %s", built.snapshot.snapshot_id, self._name(), no_answer
                )
                outcome, error = self._decide(built, no_answer)
            else:
                self.table.metadata = response.metadata
                self.table.metadata_location = response.metadata_location
                self.undecided = None
                return _result(built.snapshot, already_committed=False, attempts=attempt)
            if outcome is CommitOutcome.NOT_LANDED and files_live_at(
                self.table, self.branch, self.change.written_file_paths
            ):
                log.warning(
                    "snapshot %s of %s is gone, but its files are live: it landed",
                    built.snapshot.snapshot_id,
                    self._name(),
                )
                outcome = CommitOutcome.LANDED
            if outcome is CommitOutcome.LANDED:
                self.undecided = None
                return _result(built.snapshot, already_committed=False, attempts=attempt)
            if outcome is CommitOutcome.NOT_LANDED:
                self.undecided = None
                raise CommitFailedException(f"commit of snapshot {built.snapshot.snapshot_id} did not land") from error
            if sends > self.retries:
                raise self.unknown(error, None)
            log.warning(
                "commit of snapshot %s to %s may still be in flight; sending it again",
                built.snapshot.snapshot_id,
                self._name(),
            )
            self._back_off(sends)

    def _decide(self, built: BuiltSnapshot, error: Exception) -> tuple[CommitOutcome, Exception]:
        """The outcome of ``built``'s request from the reloaded table; CommitOutcomeUnknownError when unreadable."""
        try:
            reload_with_retries(self.table, self.status_check)
        except ReloadFailedError as reload_error:
            raise self.unknown(error, reload_error) from error
        return outcome_in_table(self.table.metadata, self._pending(built)), error

    def _landed_meanwhile(self) -> CommitResult | None:
        """After a refused attempt: the result when this change (or its key) is already in the reloaded table."""
        self.table.refresh()
        snapshot_id = self.producer.snapshot_id(self.table.metadata)
        snapshot = self.table.metadata.snapshot_by_id(snapshot_id)
        if snapshot is not None:
            return _result(snapshot, already_committed=False, attempts=0)
        if self.change.idempotency_key is not None:
            earlier = committed_snapshot_for_key(self.table, self.change.idempotency_key, branch=self.branch)
            if earlier is not None:
                _delete_unreferenced(self.table, self.change, earlier)
                return already_committed_result(earlier)
        return None

    def unknown(self, error: BaseException, reload_error: BaseException | None) -> CommitOutcomeUnknownError:
        """Record the undecided request's files beside the table and describe it in one line (module doc, step 5)."""
        built = self.undecided
        assert built is not None
        files = [*self.change.written_file_paths, *built.written_paths]
        pending = self._pending(built)
        try:
            location: str | None = write_pending_record(
                self.table, new_record(self.table, pending, job=self.job, error=error, files=files)
            )
            where = f"files it wrote are listed in {location}"
        except Exception as record_error:  # the record is a convenience; the files are logged instead
            location = None
            log.error("could not write the pending commit record (%s); files written: %s", record_error, files)
            where = "files it wrote are listed in the log above"
        cause = reload_error if reload_error is not None else error
        return CommitOutcomeUnknownError(
            f"commit of snapshot {pending.snapshot_id} to table {self._name()}: outcome unknown "
            f"({type(cause).__name__}); nothing deleted; {where}; retry with the same idempotency key to settle it",
            snapshot_id=pending.snapshot_id,
            record_location=location,
        )

    def _pending(self, built: BuiltSnapshot) -> PendingCommit:
        return PendingCommit(
            table_uuid=self.table_uuid,
            snapshot_id=built.snapshot.snapshot_id,
            branch=self.branch,
            asserted_parent_id=built.snapshot.parent_snapshot_id,
            idempotency_key=self.change.idempotency_key,
        )

    def _name(self) -> str:
        return ".".join(self.table.name())


def already_committed_result(earlier: CommittedKey) -> CommitResult:
    """The result of a change whose idempotency key an earlier commit already recorded."""
    if earlier.snapshot is None:
        return CommitResult(earlier.snapshot_id, "", already_committed=True, attempts=0, summary={})
    return _result(earlier.snapshot, already_committed=True, attempts=0)


def _delete_written(table: Table, change: SnapshotChange) -> list[str]:
    return delete_quietly(table, change.written_file_paths)


def _delete_unreferenced(table: Table, change: SnapshotChange, earlier: CommittedKey) -> list[str]:
    """Delete the change's files, except those the key's snapshot or the branch head references.

    A change retried in the same process carries the very files its key committed; they must stay.
    """
    snapshots = [s for s in (earlier.snapshot, table.current_snapshot()) if s is not None]
    referenced = {
        entry.data_file.file_path
        for snapshot in snapshots
        for manifest in snapshot.manifests(table.io)
        for entry in read_live_entries(manifest, table.io)
    }
    return delete_quietly(table, [path for path in change.written_file_paths if path not in referenced])


def _result(snapshot: Snapshot, *, already_committed: bool, attempts: int) -> CommitResult:
    summary = snapshot.summary.model_dump() if snapshot.summary is not None else {}
    return CommitResult(
        snapshot_id=snapshot.snapshot_id,
        operation=str(summary.get("operation", "")),
        already_committed=already_committed,
        attempts=attempts,
        summary=summary,
        sequence_number=snapshot.sequence_number,
    )
