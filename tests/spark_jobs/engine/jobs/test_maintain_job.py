"""The maintain job's result line and its dry-run wording."""

from __future__ import annotations

from spark_jobs.engine.jobs.maintain_job import MaintainResult, describe_removal
from spark_jobs.job_contract import missing_result_fields


def test_the_result_line_carries_the_actions_outcome_and_its_seconds() -> None:
    line = MaintainResult("remove-orphan-files", "ns.t", False, 5, {"orphan_files": 2}, 1.23456).as_json()
    assert missing_result_fields(line) == []
    assert line["orphan_files"] == 2 and line["seconds"] == {"remove-orphan-files": 1.235}


def test_a_dry_run_says_what_would_be_removed() -> None:
    expiry = {"expired_snapshot_ids": [1, 2], "retained_snapshot_ids": [3], "removed_refs": [], "data_files": 4}
    assert describe_removal("expire-snapshots", "ns.t", expiry).startswith("plan: expire 2 snapshot(s) of ns.t [1, 2]")
    orphans = {"orphan_files": 1, "orphan_bytes": 10, "older_than_ms": 5, "files_listed": 9}
    assert "remove 1 orphan file(s) (10 bytes) of ns.t" in describe_removal("remove-orphan-files", "ns.t", orphans)
