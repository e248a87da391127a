"""The job side of the contract: the error line, and the fields a job's result line must hold."""

from __future__ import annotations

from spark_jobs.job_contract import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, RESULT_FIELDS, error_line, missing_result_fields


def test_exit_codes_are_distinct_and_the_error_line_has_its_prefix() -> None:
    assert len({EXIT_OK, EXIT_FAILURE, EXIT_USAGE}) == 3 and EXIT_OK == 0
    assert error_line("table ns.t not found") == "error: table ns.t not found"


def test_every_result_names_its_job_status_and_seconds() -> None:
    for fields in RESULT_FIELDS.values():
        assert {"status", "job", "seconds"} <= fields


def test_a_result_missing_a_promised_field_is_named() -> None:
    assert missing_result_fields({"status": "ok", "job": "read", "seconds": {}}) == sorted(
        RESULT_FIELDS["read"] - {"status", "job", "seconds"}
    )
    complete = dict.fromkeys(RESULT_FIELDS["maintain"], None) | {"job": "maintain", "extra": 1}
    assert missing_result_fields(complete) == []
    assert missing_result_fields({"status": "ok", "seconds": {}}) == ["job"]
    assert missing_result_fields({"status": "ok", "job": "vacuum", "seconds": {}}) == ["job"]


def test_the_result_values_produce_every_field_their_job_promises() -> None:
    from spark_jobs.engine.commit.committer import CommitResult
    from spark_jobs.engine.compaction.options import RewriteOptions
    from spark_jobs.engine.compaction.planner import RewritePlan
    from spark_jobs.engine.ingest.options import IngestOptions
    from spark_jobs.engine.ingest.result import IngestOutcome, IngestResult
    from spark_jobs.engine.jobs.compact_job import CompactResult, DryRunResult
    from spark_jobs.engine.jobs.maintain_job import MaintainResult
    from spark_jobs.engine.jobs.read_results import AggregateResult, CountResult, ExportResult

    plan = RewritePlan("ns.t", 1, 0, (), RewriteOptions.resolve({}), (), 0, 0, 0, frozenset(), frozenset())
    commit = CommitResult(snapshot_id=2, operation="append", already_committed=False, attempts=1, summary={})
    lines = [
        ExportResult("ns.t", 1, "/out", "csv", {"rows_out": 0}, "driver").as_json(),
        CountResult("ns.t", 1, 0, {}, "driver").as_json(),
        AggregateResult("ns.t", None, {}, {"rows_aggregated": 0}, "spark").as_json(),
        MaintainResult("expire-snapshots", "ns.t", True, 1, {"expired_snapshot_ids": []}, 0.25).as_json(),
        DryRunResult(plan, [], {"plan": 0.1}).as_json(),
        CompactResult(plan, None, {"plan": 0.1}).as_json(),
        IngestResult.of("ns.t", IngestOptions(), commit, IngestOutcome(), partitions=[]).as_json(),
        IngestResult.of("ns.t", IngestOptions(), None, IngestOutcome(), start_id=1).as_json(),
    ]
    jobs = set()
    for line in lines:
        assert missing_result_fields(line) == [], line
        jobs.add(line["job"])
    assert jobs == set(RESULT_FIELDS)  # every job's result value is checked here


def test_an_ingest_result_puts_the_source_read_first_among_its_phases() -> None:
    from spark_jobs.engine.ingest.options import IngestOptions
    from spark_jobs.engine.ingest.result import IngestOutcome, IngestResult

    result = IngestResult.of("ns.t", IngestOptions(), None, IngestOutcome(phases={"plan": 0.5, "write": 1.0}))
    assert list(result.with_first_phase("source", 0.25).as_json()["seconds"].items()) == [
        ("source", 0.25),
        ("plan", 0.5),
        ("write", 1.0),
    ]
    assert result.as_json()["seconds"] == {"plan": 0.5, "write": 1.0}  # the value itself is unchanged
