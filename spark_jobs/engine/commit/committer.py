"""Commit a ``SnapshotChange`` once, safely: asserted branch head, retries when safe, no trace when it fails.

1. Refuse tables that are not format v2 (v3 writes are not supported yet).
2. With an idempotency key already in the branch's history: commit nothing, delete the files the job wrote, and
   report that snapshot.
3. Build the snapshot on the current metadata and commit it through the catalog, asserting the branch head.
4. On ``CommitFailedException``: delete this attempt's manifests, reload the table; if the snapshot (same id) or
   the idempotency key landed meanwhile, report it; otherwise validate the commits since the start
   (``conflicts``) and try again (``commit.retry.num-retries`` times, with backoff).
5. On any failure, delete every file the change added (data and delete files) and every manifest written; a file
   that cannot be deleted is named in the error. When the catalog's answer is unknown and the reloaded table does
   not show the snapshot, the same cleanup runs.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import Table, TableProperties
from pyiceberg.table.refs import MAIN_BRANCH
from pyiceberg.utils.properties import property_as_int

from spark_jobs.engine.commit.conflicts import validate_concurrent_commits
from spark_jobs.engine.commit.idempotency import snapshot_with_idempotency_key
from spark_jobs.engine.commit.producer import CommitConflictError, SnapshotProducer, delete_quietly
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.errors import EngineError, UnsupportedFeatureError

log = logging.getLogger(__name__)
_MAX_BACKOFF_SECONDS = 2.0


class CommitError(EngineError):
    """The commit did not happen; the message says why and which written files could not be removed."""


@dataclass(frozen=True)
class CommitResult:
    """What the commit did: the snapshot now holding the change, whether it was already there, how many tries."""

    snapshot_id: int
    operation: str
    already_committed: bool
    attempts: int
    summary: dict[str, Any]


def require_writable_format(table: Table) -> None:
    """Writes support format v2 tables only."""
    version = table.metadata.format_version
    if version != 2:
        name = ".".join(table.name())
        if version >= 3:
            raise UnsupportedFeatureError(f"writes to format v3 tables are not yet supported (table {name})")
        raise UnsupportedFeatureError(f"writes to format v{version} tables are not supported (table {name})")


def commit_change(
    table: Table,
    change: SnapshotChange,
    *,
    starting_snapshot_id: int | str | None = "current",
    branch: str = MAIN_BRANCH,
) -> CommitResult:
    """Commit ``change`` to ``table``'s ``branch`` (module doc); ``table`` is refreshed to the committed state.

    ``starting_snapshot_id`` is the branch head the change was planned on ("current": the table's head now).
    """
    start = table.metadata.snapshot_by_name(branch) if starting_snapshot_id == "current" else None
    start_id = start.snapshot_id if starting_snapshot_id == "current" and start else starting_snapshot_id
    try:
        require_writable_format(table)
        if change.idempotency_key is not None:
            earlier = snapshot_with_idempotency_key(table, change.idempotency_key, branch=branch)
            if earlier is not None:
                _delete_written(table, change)
                return _result(earlier, already_committed=True, attempts=0)
        return _commit_with_retries(table, change, start_id, branch)  # type: ignore[arg-type]
    except _OutcomeUnknownError:
        raise
    except BaseException as error:
        left = _delete_written(table, change)
        if left:
            raise CommitError(
                f"commit to table {'.'.join(table.name())} failed ({error}); these written files could not be "
                f"deleted: {', '.join(left)}"
            ) from error
        raise


class _OutcomeUnknownError(CommitError):
    """The catalog did not say whether the commit landed, and the table could not be reloaded to find out."""


def _commit_with_retries(table: Table, change: SnapshotChange, start_id: int | None, branch: str) -> CommitResult:
    properties = table.metadata.properties
    retries = max(0, property_as_int(properties, TableProperties.COMMIT_NUM_RETRIES, 4) or 0)
    min_wait = max(0, property_as_int(properties, TableProperties.COMMIT_MIN_RETRY_WAIT_MS, 100) or 0) / 1000
    producer = SnapshotProducer(change, branch=branch)
    for attempt in range(1, retries + 2):
        built = producer.build(table)
        try:
            table.catalog.commit_table(table, built.requirements, built.updates)
        except CommitFailedException as error:
            delete_quietly(table, built.written_paths)
            log.warning("commit attempt %d to %s lost a race: %s", attempt, ".".join(table.name()), error)
            table.refresh()
            landed = _landed(table, producer.snapshot_id(table.metadata), change, branch)
            if landed is not None:
                return landed
            validate_concurrent_commits(table, change, start_id, branch=branch)
            if attempt > retries:
                raise CommitConflictError(
                    f"commit to table {'.'.join(table.name())} lost the race {attempt} times; giving up"
                ) from error
            time.sleep(min(_MAX_BACKOFF_SECONDS, min_wait * 2 ** (attempt - 1)) * (1 + random.random() / 10))
            continue
        except Exception as error:
            try:
                table.refresh()
            except Exception as reload_error:
                raise _OutcomeUnknownError(
                    f"commit to table {'.'.join(table.name())} ended with {error!r} and the table could not be "
                    f"reloaded ({reload_error}); files written: {', '.join(change.written_file_paths)}"
                ) from error
            if table.metadata.snapshot_by_id(built.snapshot.snapshot_id) is not None:
                return _result(built.snapshot, already_committed=False, attempts=attempt)
            delete_quietly(table, built.written_paths)
            raise
        table.refresh()
        return _result(built.snapshot, already_committed=False, attempts=attempt)
    raise AssertionError("unreachable")


def _landed(table: Table, snapshot_id: int, change: SnapshotChange, branch: str) -> CommitResult | None:
    """The result when this change is already in the reloaded table (same snapshot id, or same idempotency key)."""
    snapshot = table.metadata.snapshot_by_id(snapshot_id)
    if snapshot is not None:
        return _result(snapshot, already_committed=False, attempts=0)
    if change.idempotency_key is not None:
        earlier = snapshot_with_idempotency_key(table, change.idempotency_key, branch=branch)
        if earlier is not None:
            _delete_written(table, change)
            return _result(earlier, already_committed=True, attempts=0)
    return None


def _delete_written(table: Table, change: SnapshotChange) -> list[str]:
    return delete_quietly(table, change.written_file_paths)


def _result(snapshot, *, already_committed: bool, attempts: int) -> CommitResult:
    summary = snapshot.summary.model_dump() if snapshot.summary is not None else {}
    return CommitResult(
        snapshot_id=snapshot.snapshot_id,
        operation=str(summary.get("operation", "")),
        already_committed=already_committed,
        attempts=attempts,
        summary=summary,
    )
