"""The ingest job's result line: the commit's summary, the counters, the contract's fields."""

from __future__ import annotations

from spark_jobs.engine.commit.committer import CommitResult
from spark_jobs.engine.ingest.options import IngestOptions
from spark_jobs.engine.ingest.result import IngestOutcome, IngestResult
from spark_jobs.job_contract import missing_result_fields


def test_a_commit_is_reported_from_its_snapshot_summary() -> None:
    summary = {"operation": "overwrite", "added-data-files": "2", "added-delete-files": "1", "added-records": "10"}
    result = CommitResult(snapshot_id=7, operation="overwrite", already_committed=False, attempts=2, summary=summary)
    outcome = IngestOutcome(phases={"write": 1.23456}, rows_deleted=4)
    line = IngestResult.of("ns.t", IngestOptions(mode="upsert", key=("id",)), result, outcome, start_id=3).as_json()
    assert missing_result_fields(line) == []
    assert (line["snapshot_id"], line["operation"], line["commit_attempts"]) == (7, "overwrite", 2)
    assert (line["data_files_added"], line["delete_files_written"], line["rows_added"]) == (2, 1, 10)
    assert (line["rows_deleted_by_key"], line["seconds"], line["bytes_removed"]) == (4, {"write": 1.235}, 0)


def test_without_a_commit_the_starting_snapshot_is_reported() -> None:
    line = IngestResult.of("ns.t", IngestOptions(), None, IngestOutcome(), start_id=3).as_json()
    assert missing_result_fields(line) == []
    assert (line["snapshot_id"], line["operation"], line["already_committed"], line["data_files_added"]) == (
        3,
        None,
        False,
        0,
    )
