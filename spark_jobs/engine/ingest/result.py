"""What an ingest reports: counters gathered on the way, and the job's final JSON object (``job_contract``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spark_jobs.engine.commit.commit_report import commit_report
from spark_jobs.engine.commit.committer import CommitResult
from spark_jobs.engine.ingest.options import IngestOptions


@dataclass
class IngestOutcome:
    """Seconds per phase and the rows deleted by key (None when equality deletes were written without a read)."""

    phases: dict[str, float] = field(default_factory=dict)
    rows_deleted: int | None = None


def ingest_result(
    table_name: str,
    options: IngestOptions,
    result: CommitResult | None,
    outcome: IngestOutcome,
    *,
    start_id: int | None = None,
    partitions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The job's final JSON object; without a commit (nothing to write), the snapshot the job started from.

    ``partitions`` are the partitions the committed snapshot changed (``commit.changed_partitions``); ``None``
    when they could not be read back (the result says so with ``null``: the commit itself stands); no commit
    changed none.
    """
    summary = result.summary if result else {}

    def count(key: str) -> int:
        return int(summary.get(key, 0))

    return {
        "status": "ok",
        "job": "ingest",
        "table": table_name,
        "mode": options.mode,
        "snapshot_id": result.snapshot_id if result else start_id,
        "operation": result.operation if result else None,
        "already_committed": bool(result and result.already_committed),
        "commit_attempts": result.attempts if result else 0,
        "data_files_added": count("added-data-files"),
        "bytes_added": count("added-files-size"),
        "data_files_removed": count("deleted-data-files"),
        "bytes_removed": count("removed-files-size"),
        "delete_files_written": count("added-delete-files"),
        "rows_added": count("added-records"),
        "rows_removed_with_files": count("deleted-records"),
        "rows_deleted_by_key": outcome.rows_deleted,
        "position_deletes_added": count("added-position-deletes"),
        "equality_deletes_added": count("added-equality-deletes"),
        "partitions_changed": partitions if result else [],
        "commit_reports": [commit_report(result)] if result else [],
        "seconds": {name: round(value, 3) for name, value in outcome.phases.items()},
    }
