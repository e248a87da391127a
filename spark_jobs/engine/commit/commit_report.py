"""What a commit reports in a job's result line: Iceberg Java's commit report, from the committed snapshot.

Iceberg Java reports each commit (``CommitReport``) as the snapshot id, sequence number and operation, the commit's
attempts and duration, and its snapshot summary's counts (``CommitMetricsResult.from``). A job's result line carries
the same for each commit it made, so the Airflow side can report them (OpenLineage's ``icebergCommitReport``)
without reading the table again: ``snapshot_id``, ``sequence_number``, ``operation``, ``attempts``,
``duration_ms`` and ``summary`` (every summary property but ``operation``, as the snapshot holds them).
"""

from __future__ import annotations

from typing import Any

from spark_jobs.engine.commit.committer import CommitResult


def commit_report(result: CommitResult) -> dict[str, Any]:
    """One commit, as a result line reports it (module doc)."""
    summary = {key: str(value) for key, value in result.summary.items() if key != "operation"}
    return {
        "snapshot_id": result.snapshot_id,
        "sequence_number": result.sequence_number,
        "operation": result.operation or None,
        "attempts": result.attempts,
        "duration_ms": round(result.seconds * 1000) if result.seconds is not None else None,
        "already_committed": result.already_committed,
        "summary": summary,
    }
