"""What a job promises whoever runs it: exit codes, the ``error:`` line and the final JSON line, per job.

A job run by spark-submit (by this provider's operators, or by a plain ``SparkSubmitOperator``):

1. exits ``EXIT_OK`` when it did its work, and the last line it prints to stdout is one JSON object holding at least
   the job's ``RESULT_FIELDS`` (``status`` is ``"ok"``, ``job`` the job's name);
2. exits ``EXIT_USAGE`` on bad input (an argument, a table, a snapshot, a schema), after one line
   ``error: <reason>`` naming what was wrong: the same command fails again, so it is not retried;
3. exits with any other code on any other failure (``EXIT_FAILURE`` from the job itself; Spark or the JVM may use
   others), with an ``error:`` line when the job got to print one: a retry may succeed.

spark-submit merges the job's stdout and stderr, and the JVM may print after either line. The Airflow side states
the same contract in ``airflow_iceberg_provider.job_contract``; its test checks that the two agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EXIT_OK = 0
EXIT_FAILURE = 1
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
    # Both with --dry-run (the plan) and without (what was committed).
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


def error_line(reason: str) -> str:
    """The one line that says why a job failed."""
    return f"{ERROR_PREFIX}{reason}"


def missing_result_fields(result: Mapping[str, Any]) -> list[str]:
    """The fields the contract promises for ``result["job"]`` that ``result`` lacks (all of them for no known job)."""
    promised = RESULT_FIELDS.get(str(result.get("job")), _EVERY_RESULT)
    missing = sorted(promised - set(result))
    return missing if result.get("job") in RESULT_FIELDS else sorted({"job", *missing})
