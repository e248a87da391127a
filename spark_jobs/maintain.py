"""Table maintenance as a spark-submit job: expire snapshots, remove orphan files, rewrite deletes and manifests.

Command line (catalog properties come from pyiceberg's configuration, never from here)::

    spark-submit spark_jobs/maintain.py expire-snapshots --catalog NAME --table NS.TABLE
        [--older-than TS] [--retain-last N] [--dry-run]
    spark-submit spark_jobs/maintain.py remove-orphan-files --catalog NAME --table NS.TABLE
        [--older-than TS] [--allow-short-retention] [--dry-run]
    spark-submit spark_jobs/maintain.py rewrite-position-deletes --catalog NAME --table NS.TABLE [--where EXPR]
        [--target-file-size-bytes N] [--min-file-size-bytes N] [--max-file-size-bytes N] [--min-input-files N]
        [--max-file-group-size-bytes N] [--rewrite-all] [--rewrite-job-order ORDER]
        [--partial-progress [--max-commits N]] [--dry-run]
    spark-submit spark_jobs/maintain.py rewrite-manifests --catalog NAME --table NS.TABLE
        [--spec-id N] [--sort-by FIELD,...] [--dry-run]
    spark-submit spark_jobs/maintain.py convert-equality-deletes --catalog NAME --table NS.TABLE [--where EXPR]
        [--dry-run]

``TS`` is epoch milliseconds or ISO-8601 (no zone means UTC). Defaults as Iceberg Java: expire-snapshots keeps
snapshots newer than ``history.expire.max-snapshot-age-ms`` (5 days) and at least
``history.expire.min-snapshots-to-keep`` (1) per branch; remove-orphan-files takes files older than 3 days and
refuses a time later than 24 hours ago (exit 2) unless ``--allow-short-retention`` is given;
rewrite-position-deletes (Java's ``rewrite_position_delete_files``) sizes from ``write.delete.target-file-size-bytes``
(64 MiB), and on a format v3 table turns every position delete file into deletion vectors in one pass;
convert-equality-deletes turns a v3 table's equality deletes into deletion vectors
(``engine.maintenance.deletion_vector_conversion``); rewrite-manifests (Java's ``rewrite_manifests``) sizes from
``commit.manifest.target-size-bytes`` (8 MiB). The work is metadata, small delete files and file deletion on the
driver; no Spark session is started. ``--dry-run`` prints what would be done in words, then the final JSON line;
without it the final JSON line says what was done.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the ``spark_jobs`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.engine.compaction.options import REWRITE_JOB_ORDERS
from spark_jobs.job_failures import set_subject
from spark_jobs.job_support import (
    REWRITE_SIZE_OPTIONS,
    JobArgumentParser,
    UsageError,
    add_rewrite_size_options,
    run_job,
)

if TYPE_CHECKING:
    from pyiceberg.table import Table

from spark_jobs.engine.jobs.maintain_actions import (
    CONVERT_EQUALITY_DELETES,
    EXPIRE_SNAPSHOTS,
    REMOVE_ORPHAN_FILES,
    REWRITE_MANIFESTS,
    REWRITE_POSITION_DELETES,
)


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
    deletes = actions.add_parser(
        REWRITE_POSITION_DELETES, parents=[common], help="bin-pack position delete files, drop dangling positions"
    )
    deletes.add_argument("--where", help="only partitions that may hold rows matching this pyiceberg row filter")
    add_rewrite_size_options(deletes, "write.delete.target-file-size-bytes")
    deletes.add_argument("--rewrite-all", action="store_true", help="rewrite every position delete file")
    deletes.add_argument("--rewrite-job-order", choices=REWRITE_JOB_ORDERS, help="order of file groups (none)")
    deletes.add_argument("--partial-progress", action="store_true", help="commit groups in batches")
    deletes.add_argument("--max-commits", type=int, help="with --partial-progress: at most this many commits (10)")
    manifests = actions.add_parser(REWRITE_MANIFESTS, parents=[common], help="cluster manifests by partition")
    manifests.add_argument("--spec-id", type=int, help="rewrite the manifests of this spec (default: current)")
    manifests.add_argument("--sort-by", help="partition fields to cluster by, comma-separated (default: all)")
    converts = actions.add_parser(
        CONVERT_EQUALITY_DELETES, parents=[common], help="turn a v3 table's equality deletes into deletion vectors"
    )
    converts.add_argument("--where", help="only partitions that may hold rows matching this pyiceberg row filter")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run one maintenance action; returns the result the last stdout line carries."""
    from spark_jobs.engine.jobs.maintain_job import MaintainResult
    from spark_jobs.engine.table.catalog import load_catalog, load_table

    args = build_parser().parse_args(argv)
    set_subject(table=args.table)
    started = time.perf_counter()
    table = load_table(load_catalog(args.catalog), args.table)
    snapshot_before = table.current_snapshot()
    return MaintainResult(
        action=args.action,
        table=".".join(table.name()),
        dry_run=args.dry_run,
        snapshot_id=snapshot_before.snapshot_id if snapshot_before is not None else None,
        outcome=_run_action(args, table),
        seconds=time.perf_counter() - started,
    ).as_json()


def _run_action(args: argparse.Namespace, table: Table) -> dict[str, Any]:
    """The action the arguments name, run by ``engine/jobs/maintain_job.py``; what the JSON line adds."""
    from spark_jobs.engine.jobs import maintain_job as job
    from spark_jobs.engine.maintenance.rewrite_position_deletes import PositionDeleteRewriteOptions
    from spark_jobs.engine.table.snapshots import parse_as_of

    if args.action == CONVERT_EQUALITY_DELETES:
        return job.convert_deletes_action(table, "equality", where=args.where, dry_run=args.dry_run)
    if args.action == REWRITE_MANIFESTS:
        sort_by = [name.strip() for name in args.sort_by.split(",") if name.strip()] if args.sort_by else None
        return job.rewrite_manifests_action(table, spec_id=args.spec_id, sort_by=sort_by, dry_run=args.dry_run)
    if args.action == REWRITE_POSITION_DELETES:
        if args.max_commits is not None and not args.partial_progress:
            raise UsageError("spark_jobs/maintain.py: --max-commits needs --partial-progress")
        options = PositionDeleteRewriteOptions.resolve(
            table.properties,
            **{name: getattr(args, name) for name in REWRITE_SIZE_OPTIONS},
            rewrite_all=args.rewrite_all or None,
            rewrite_job_order=args.rewrite_job_order,
            partial_progress_enabled=args.partial_progress or None,
            partial_progress_max_commits=args.max_commits,
        )
        return job.rewrite_position_deletes_action(table, options, where=args.where, dry_run=args.dry_run)
    return job.removal_action(
        table,
        args.action,
        older_than_ms=parse_as_of(args.older_than) if args.older_than is not None else None,
        retain_last=getattr(args, "retain_last", None),
        allow_short_retention=getattr(args, "allow_short_retention", False),
        dry_run=args.dry_run,
    )


if __name__ == "__main__":
    sys.exit(run_job("maintain", main))
