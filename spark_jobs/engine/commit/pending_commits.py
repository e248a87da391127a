"""Records of commits whose outcome could not be decided, kept beside the table until a later run settles them.

When a commit's catalog call gave no answer and the table could not be reloaded to find out (``commit.outcome``),
the job deletes nothing and writes one JSON record:

    <table location>/metadata/_pending-commits/<snapshot id>.json

with the table, its uuid, the snapshot id, the branch and the parent it asserted, the idempotency key, the job,
the time, the error, and every file the commit wrote (data and delete files, manifests, manifest list). The
directory name starts with ``_``, so orphan removal (ours and Iceberg Java's) never lists it.

Settling (``settle_pending_commits``), done after each landed commit and before orphan removal:

1. Read each record and decide its commit from the table's current metadata (``commit.outcome``).
2. LANDED: the files belong to the table; only the record is deleted.
3. NOT_LANDED: the commit can never land; unless one of its files is live at the branch head (``outcome``, step
   6), its files are deleted, then the record (a file that cannot be deleted keeps the record, naming it).
4. IN_FLIGHT (the branch still points at the asserted parent): kept; the next commit to the branch decides it.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from pyarrow.fs import FileSelector, FileType
from pyiceberg.table import Table

from spark_jobs.engine.commit.outcome import CommitOutcome, PendingCommit, files_live_at, outcome_in_table

log = logging.getLogger(__name__)
PENDING_DIRECTORY = "metadata/_pending-commits"


@dataclass(frozen=True)
class PendingCommitRecord:
    """One undecided commit and the files it wrote (the record's JSON content)."""

    table: str
    table_uuid: str
    snapshot_id: int
    branch: str
    asserted_parent_id: int | None
    idempotency_key: str | None
    job: str
    written_at_ms: int
    error: str
    files: list[str] = field(default_factory=list)

    @property
    def pending(self) -> PendingCommit:
        """What identifies the commit in the table."""
        return PendingCommit(
            self.table_uuid, self.snapshot_id, self.branch, self.asserted_parent_id, self.idempotency_key
        )


@dataclass
class Settlement:
    """What settling the table's records did, by snapshot id."""

    landed: list[int] = field(default_factory=list)
    not_landed: list[int] = field(default_factory=list)
    undecided: list[int] = field(default_factory=list)
    files_deleted: list[str] = field(default_factory=list)
    files_left: list[str] = field(default_factory=list)
    held_files: set[str] = field(default_factory=set)  # files of records still undecided


def pending_record_location(table_location: str, snapshot_id: int) -> str:
    """Where the record of snapshot ``snapshot_id``'s undecided commit is written."""
    return f"{table_location.rstrip('/')}/{PENDING_DIRECTORY}/{snapshot_id}.json"


def write_pending_record(table: Table, record: PendingCommitRecord) -> str:
    """Write ``record`` beside the table (module doc); returns its location. Raises when it cannot be written."""
    location = pending_record_location(table.metadata.location, record.snapshot_id)
    payload = json.dumps(asdict(record), indent=1, sort_keys=True).encode("utf-8")
    with table.io.new_output(location).create(overwrite=True) as stream:
        stream.write(payload)
    return location


def new_record(
    table: Table, pending: PendingCommit, *, job: str, error: BaseException, files: list[str]
) -> PendingCommitRecord:
    """The record of an undecided commit of ``table``."""
    return PendingCommitRecord(
        table=".".join(table.name()),
        table_uuid=str(pending.table_uuid),
        snapshot_id=pending.snapshot_id,
        branch=pending.branch,
        asserted_parent_id=pending.asserted_parent_id,
        idempotency_key=pending.idempotency_key,
        job=job,
        written_at_ms=int(time.time() * 1000),
        error=f"{type(error).__name__}: {' '.join(str(error).split())}"[:500],
        files=sorted(dict.fromkeys(files)),
    )


def read_pending_records(table: Table) -> dict[str, PendingCommitRecord]:
    """The table's records by location (none when the directory is missing or cannot be listed)."""
    from spark_jobs.engine.shared.errors import UnsupportedFeatureError
    from spark_jobs.engine.table.catalog import table_file_system

    directory = f"{table.metadata.location.rstrip('/')}/{PENDING_DIRECTORY}"
    try:
        file_system, root = table_file_system(table, directory)
        infos = file_system.get_file_info(FileSelector(root, recursive=False, allow_not_found=True))
    except (UnsupportedFeatureError, OSError) as error:
        log.warning("cannot list pending commit records of %s in %s: %s", ".".join(table.name()), directory, error)
        return {}
    records = {}
    for info in infos:
        if info.type != FileType.File or not info.base_name.endswith(".json"):
            continue
        location = f"{directory}/{info.base_name}"
        try:
            with table.io.new_input(location).open() as stream:
                records[location] = PendingCommitRecord(**json.loads(stream.read()))
        except (OSError, ValueError, TypeError) as error:
            log.warning("pending commit record %s cannot be read (kept): %s", location, error)
    return records


def settle_pending_commits(table: Table) -> Settlement:
    """Decide each record of ``table`` from its current metadata and clean up (module doc, steps 1-4)."""
    from spark_jobs.engine.commit.producer import delete_quietly

    settlement = Settlement()
    for location, record in read_pending_records(table).items():
        outcome = outcome_in_table(table.metadata, record.pending)
        if outcome is CommitOutcome.IN_FLIGHT:
            settlement.undecided.append(record.snapshot_id)
            settlement.held_files.update(record.files)
            continue
        if outcome is CommitOutcome.NOT_LANDED and files_live_at(table, record.branch, record.files):
            outcome = CommitOutcome.LANDED  # expired right after it landed; its files live on in descendants
        if outcome is CommitOutcome.NOT_LANDED:
            left = delete_quietly(table, record.files)
            settlement.files_deleted += [path for path in record.files if path not in left]
            if left:
                settlement.files_left += left
                settlement.held_files.update(left)
                settlement.undecided.append(record.snapshot_id)
                continue
            settlement.not_landed.append(record.snapshot_id)
        else:
            settlement.landed.append(record.snapshot_id)
        log.info(
            "commit of snapshot %s to %s (recorded in %s) %s; record removed",
            record.snapshot_id,
            record.table,
            location,
            outcome.value,
        )
        delete_quietly(table, [location])
    return settlement


def settled_quietly(table: Table) -> Settlement | None:
    """``settle_pending_commits``, logging instead of raising (settling is housekeeping after a commit)."""
    try:
        return settle_pending_commits(table)
    except Exception as error:  # the commit itself succeeded; an unsettled record is retried by the next run
        log.warning("could not settle pending commit records of %s: %s", ".".join(table.name()), error)
        return None


def record_summary(settlement: Settlement) -> dict[str, Any]:
    """What settling did, for a job's JSON result."""
    return {
        "pending_commits_landed": settlement.landed,
        "pending_commits_not_landed": settlement.not_landed,
        "pending_commits_undecided": settlement.undecided,
        "pending_commit_files_deleted": len(settlement.files_deleted),
    }
