"""What the provider expects of a ``spark_jobs`` job: exit codes, the ``error:`` line and the final JSON line.

The Airflow side never imports ``spark_jobs``; it runs a job with spark-submit and reads what it prints:

1. exit code ``EXIT_OK``: the job's last JSON line is its result (the operator's XCom), holding at least the job's
   ``RESULT_FIELDS``;
2. exit code ``EXIT_USAGE``: bad input; the task fails without retries, with the job's ``error:`` line as reason;
3. any other exit code: a failure a retry may fix; the task fails (and retries) with the ``error:`` line if any.

The job side states the same contract in ``spark_jobs.job_contract``; this module's test checks that the two
agree.
"""

from __future__ import annotations

from collections.abc import Mapping

EXIT_OK = 0
EXIT_USAGE = 2
ERROR_PREFIX = "error: "
RESULT_STATUS = "ok"

_EVERY_RESULT = frozenset({"status", "job", "seconds"})
# A read's, an aggregate's and a compaction's ``counters`` hold the scan's time per stage of the per-file read, as
# ``<stage>_time_ns`` (nanoseconds, summed over files and tasks), for these stages in the order they run.
SCAN_TIME_STAGES = ("footer", "statistics", "page_index", "bloom_filter", "deletes", "decode")
RESULT_FIELDS: Mapping[str, frozenset[str]] = {
    "ingest": _EVERY_RESULT
    | {
        "table",
        "mode",
        "snapshot_id",
        "operation",
        "already_committed",
        "commit_attempts",
        "data_files_added",
        "bytes_added",
        "data_files_removed",
        "bytes_removed",
        "delete_files_written",
        "rows_added",
        "rows_removed_with_files",
        "rows_deleted_by_key",
        "position_deletes_added",
        "equality_deletes_added",
        # The partitions the committed snapshot changed, read back from it: one object per partition (spec_id,
        # partition as Iceberg's partition path text, files and rows added and removed); null when unknown.
        "partitions_changed",
        # One object per commit, as Iceberg Java's commit report has it: snapshot_id, sequence_number, operation,
        # attempts, duration_ms and the snapshot's summary (empty without a commit).
        "commit_reports",
        # How a CSV or JSON source was parsed (failfast, permissive, dropmalformed) and the malformed rows it held.
        "source_mode",
        "malformed_rows",
    },
    "read": _EVERY_RESULT | {"table", "snapshot_id", "output", "output_format", "counters", "rows_out"},
    "compact": _EVERY_RESULT | {"table", "snapshot_id", "dry_run", "operation", "file_groups", "commit_reports"},
    "maintain": _EVERY_RESULT | {"action", "table", "dry_run", "snapshot_id", "commit_reports"},
}
# The fields of each object in an ingest's ``partitions_changed``: the partition (its spec and its path text as
# Iceberg names it on storage, "" when unpartitioned) and what the committed snapshot did there.
PARTITION_CHANGE_FIELDS = frozenset(
    {
        "spec_id",
        "partition",
        "data_files_added",
        "data_files_removed",
        "delete_files_added",
        "delete_files_removed",
        "rows_added",
        "rows_removed",
        "position_deletes_added",
        "equality_deletes_added",
    }
)
