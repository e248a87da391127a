"""Table maintenance as a spark-submit job: expire snapshots, remove orphan files.

Command line (catalog properties come from pyiceberg's configuration, never from here)::

    spark-submit spark_jobs/maintain.py expire-snapshots --catalog NAME --table NS.TABLE
        [--older-than TS] [--retain-last N] [--dry-run]
    spark-submit spark_jobs/maintain.py remove-orphan-files --catalog NAME --table NS.TABLE
        [--older-than TS] [--allow-short-retention] [--dry-run]

``TS`` is epoch milliseconds or ISO-8601 (no zone means UTC). Defaults as Iceberg Java: expire-snapshots keeps
snapshots newer than ``history.expire.max-snapshot-age-ms`` (5 days) and at least
``history.expire.min-snapshots-to-keep`` (1) per branch; remove-orphan-files takes files older than 3 days and
refuses a time later than 24 hours ago (exit 2) unless ``--allow-short-retention`` is given. The work
is metadata and file deletion on the driver; no Spark session is started. The final JSON line says what was (with
``--dry-run``: would be) removed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the ``spark_jobs`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.job_support import JobArgumentParser, run_job

EXPIRE_SNAPSHOTS = "expire-snapshots"
REMOVE_ORPHAN_FILES = "remove-orphan-files"


def build_parser() -> argparse.ArgumentParser:
    """The job's argument parser: one subcommand per action (bad arguments raise UsageError, exit code 2)."""
    parser = JobArgumentParser(prog="spark_jobs/maintain.py", description=__doc__.split("\n\n")[0])
    common = JobArgumentParser(add_help=False)
    common.add_argument("--catalog", required=True, help="catalog name in pyiceberg's configuration")
    common.add_argument("--table", required=True, help="table identifier NAMESPACE.TABLE")
    common.add_argument("--dry-run", action="store_true", help="report what would be removed, change nothing")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    expire = actions.add_parser(EXPIRE_SNAPSHOTS, parents=[common], help="expire old snapshots and their files")
    expire.add_argument("--older-than", help="expire snapshots older than this (default: now - 5 days)")
    expire.add_argument("--retain-last", type=int, help="keep at least this many snapshots per branch (default: 1)")
    orphans = actions.add_parser(REMOVE_ORPHAN_FILES, parents=[common], help="delete files no metadata references")
    orphans.add_argument(
        "--older-than", help="only files modified before this (default: now - 3 days; at most now - 24 hours)"
    )
    orphans.add_argument(
        "--allow-short-retention",
        action="store_true",
        help="allow --older-than later than 24 hours ago (files of writes in progress could be deleted)",
    )
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run one maintenance action; returns the result the last stdout line carries."""
    from spark_jobs.engine.maintenance import expire_snapshots, remove_orphan_files
    from spark_jobs.engine.table.catalog import load_catalog, load_table
    from spark_jobs.engine.table.snapshots import parse_as_of

    args = build_parser().parse_args(argv)
    started = time.perf_counter()
    table = load_table(load_catalog(args.catalog), args.table)
    older_than_ms = parse_as_of(args.older_than) if args.older_than is not None else None
    snapshot_before = table.current_snapshot()
    if args.action == EXPIRE_SNAPSHOTS:
        outcome = expire_snapshots(
            table, older_than_ms=older_than_ms, retain_last=args.retain_last, dry_run=args.dry_run
        ).as_dict()
    else:
        outcome = remove_orphan_files(
            table,
            older_than_ms=older_than_ms,
            dry_run=args.dry_run,
            allow_short_retention=args.allow_short_retention,
        ).as_dict()
    return {
        "status": "ok",
        "job": "maintain",
        "action": args.action,
        "table": ".".join(table.name()),
        "dry_run": args.dry_run,
        "snapshot_id": snapshot_before.snapshot_id if snapshot_before is not None else None,
        **outcome,
        "seconds": {args.action: round(time.perf_counter() - started, 3)},
    }


if __name__ == "__main__":
    sys.exit(run_job("maintain", main))
