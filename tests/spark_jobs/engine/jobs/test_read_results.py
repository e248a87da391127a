"""Each read result produces the job's JSON line with every field the contract promises."""

from __future__ import annotations

from spark_jobs.engine.jobs.read_results import AggregateResult, CountResult, ExportResult, ReadRequest
from spark_jobs.job_contract import missing_result_fields


def test_every_read_result_holds_the_contracts_fields_and_rounds_its_seconds() -> None:
    results = [
        ExportResult("ns.t", 7, "/out", "parquet", {"rows_out": 3}, "spark", {"plan": 0.12345}),
        CountResult("ns.t", 7, 42, {"count_from_metadata": True}, "driver", {"count": 1.0}),
        AggregateResult("ns.t", 7, {"count(*)": 2}, {"rows_aggregated": 2}, "driver", {"aggregate": 0.5}),
    ]
    for result in results:
        line = result.as_json()
        assert missing_result_fields(line) == [], type(result).__name__
        assert line["status"] == "ok" and line["job"] == "read"
    assert results[0].as_json()["seconds"] == {"plan": 0.123}
    assert results[0].as_json()["rows_out"] == 3
    assert results[1].as_json()["count"] == results[1].as_json()["rows_out"] == 42
    assert results[2].as_json()["rows_out"] == 2


def test_a_request_hands_its_snapshot_selection_on_as_keywords() -> None:
    request = ReadRequest("lake", "ns.t", ref="main")
    assert request.snapshot == {"snapshot_id": None, "ref": "main", "as_of": None}
