"""What an ingest reports: counters gathered on the way, and the job's final JSON line (``job_contract``)."""

from __future__ import annotations

import dataclasses
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


@dataclass(frozen=True)
class IngestResult:
    """An ingest's result: the commit (``None``: nothing to write), what it changed, and seconds per phase.

    Without a commit the result names the snapshot the job started from. ``partitions`` are the partitions the
    committed snapshot changed (``commit.changed_partitions``); ``None`` when they could not be read back (the
    line says so with ``null``: the commit itself stands); no commit changed none.
    """

    table: str
    mode: str
    commit: CommitResult | None
    rows_deleted_by_key: int | None
    seconds: dict[str, float]
    start_id: int | None = None
    partitions: list[dict[str, Any]] | None = None
    # How CSV and JSON sources were parsed and the malformed rows kept or dropped: the job sets them
    # (``with_source``); a DataFrame handed to ``ingest`` has none.
    source_mode: str | None = None
    malformed_rows: int = 0

    @classmethod
    def of(
        cls,
        table_name: str,
        options: IngestOptions,
        commit: CommitResult | None,
        outcome: IngestOutcome,
        *,
        start_id: int | None = None,
        partitions: list[dict[str, Any]] | None = None,
    ) -> IngestResult:
        """The result of an ingest of ``table_name`` with ``options`` whose counters are ``outcome``."""
        seconds = {name: round(value, 3) for name, value in outcome.phases.items()}
        return cls(table_name, options.mode, commit, outcome.rows_deleted, seconds, start_id, partitions)

    def with_first_phase(self, name: str, seconds: float) -> IngestResult:
        """This result with one more phase before the others (the entry point's source read)."""
        return dataclasses.replace(self, seconds={name: round(seconds, 3), **self.seconds})

    def with_source(self, source_mode: str, malformed_rows: int) -> IngestResult:
        """This result with how the job parsed its source and how many malformed rows it kept or dropped."""
        return dataclasses.replace(self, source_mode=source_mode, malformed_rows=malformed_rows)

    def as_json(self) -> dict[str, Any]:
        """The job's final JSON line."""
        commit = self.commit
        summary = commit.summary if commit else {}

        def count(key: str) -> int:
            return int(summary.get(key, 0))

        return {
            "status": "ok",
            "job": "ingest",
            "table": self.table,
            "mode": self.mode,
            "snapshot_id": commit.snapshot_id if commit else self.start_id,
            "operation": commit.operation if commit else None,
            "already_committed": bool(commit and commit.already_committed),
            "commit_attempts": commit.attempts if commit else 0,
            "data_files_added": count("added-data-files"),
            "bytes_added": count("added-files-size"),
            "data_files_removed": count("deleted-data-files"),
            "bytes_removed": count("removed-files-size"),
            "delete_files_written": count("added-delete-files"),
            "rows_added": count("added-records"),
            "rows_removed_with_files": count("deleted-records"),
            "rows_deleted_by_key": self.rows_deleted_by_key,
            "position_deletes_added": count("added-position-deletes"),
            "equality_deletes_added": count("added-equality-deletes"),
            "partitions_changed": self.partitions if commit else [],
            "commit_reports": [commit_report(commit)] if commit else [],
            "source_mode": self.source_mode,
            "malformed_rows": self.malformed_rows,
            "seconds": dict(self.seconds),
        }
