"""The summary a job logs before its result line: headline, rows, files, bytes, pruning, seconds."""

from __future__ import annotations

from spark_jobs.job_log import size_text, summary_lines


def test_a_read_summary_names_table_snapshot_rows_pruning_and_spark_start_apart() -> None:
    result = {
        "status": "ok",
        "job": "read",
        "table": "sales.orders",
        "snapshot_id": 42,
        "counters": {
            "data_files_total": 8,
            "data_files_pruned": 5,
            "row_groups_pruned_by_statistics": 3,
            "pages_pruned_by_page_index": 0,
            "bytes_read": 3 * 1024 * 1024,
            "rows_read": 1000,
            "rows_out": 10,
        },
        "rows_out": 10,
        "seconds": {"spark_start": 6.0, "plan": 0.5, "read_and_write": 2.25},
    }
    assert summary_lines(result) == [
        "read of sales.orders at snapshot 42",
        "rows: rows read 1,000, rows out 10",
        "files: data files total 8",
        "bytes: bytes read 3.0 MiB",
        "pruning skipped: data files pruned 5, row groups pruned by statistics 3",
        "seconds: 8.8 in all (Spark start 6.0, plan 0.5, read and write 2.2)",
    ]


def test_a_read_in_the_driver_says_so_in_its_headline() -> None:
    result = {"job": "read", "table": "sales.orders", "snapshot_id": 42, "ran_in": "driver", "seconds": {"plan": 0.5}}
    assert summary_lines(result)[0] == "read of sales.orders at snapshot 42 (read in the driver: no Spark session)"
    assert summary_lines({**result, "ran_in": "spark"})[0] == "read of sales.orders at snapshot 42"


def test_a_compaction_summary_says_where_it_started_and_a_dry_run_says_so() -> None:
    committed = {
        "job": "compact",
        "dry_run": False,
        "table": "t.e",
        "starting_snapshot_id": 1,
        "snapshot_id": 2,
        "commits": 1,
        "data_files_added": 1,
        "data_files_removed": 6,
        "bytes_added": 2048,
        "seconds": {"plan": 0.1},
    }
    lines = summary_lines(committed)
    assert lines[0] == "compact of t.e from snapshot 1 at snapshot 2"
    assert "files: commits 1, data files added 1, data files removed 6" in lines
    assert "bytes: bytes added 2.0 KiB" in lines
    assert not any(line.startswith("pruning") for line in lines)  # no scan counters: nothing said about pruning
    plan = summary_lines({"job": "compact", "dry_run": True, "table": "t.e", "snapshot_id": 1, "file_groups": 0})
    assert plan[0] == "compact (dry run) of t.e at snapshot 1"
    assert "files: file groups 0" in plan


def test_sizes_read_as_a_person_would_say_them() -> None:
    assert [size_text(size) for size in (512, 1536, 5 * 1024**3, 3 * 1024**4)] == [
        "512 B",
        "1.5 KiB",
        "5.0 GiB",
        "3.0 TiB",
    ]


def test_the_summary_shows_the_scans_seconds_per_stage() -> None:
    result = {"status": "ok", "job": "read", "table": "ns.t", "snapshot_id": 1, "rows_out": 3, "seconds": {"read": 1.0}}
    result["counters"] = {"rows_out": 3, "footer_time_ns": 2_000_000, "decode_time_ns": 1_500_000_000}
    lines = summary_lines(result)
    assert "scan seconds per stage (all files and tasks): footer 0.00, decode 1.50" in lines
    assert not any("time ns" in line for line in lines)
