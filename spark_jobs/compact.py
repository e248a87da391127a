"""Bin-pack compaction of an Iceberg table with Iceberg Java's RewriteDataFiles rules, as a spark-submit job.

Command line (catalog properties come from pyiceberg's configuration, never from here)::

    spark-submit spark_jobs/compact.py --catalog NAME --table NS.TABLE [--where EXPR]
        [--target-file-size-bytes N] [--min-file-size-bytes N] [--max-file-size-bytes N] [--min-input-files N]
        [--delete-file-threshold N] [--delete-ratio-threshold F] [--max-file-group-size-bytes N]
        [--max-concurrent-file-group-rewrites N] [--partial-progress [--max-commits N]] [--dry-run]

``--dry-run`` plans on the driver and prints the plan (file groups, input files, bytes and rows, delete files,
expected output files, commits) as the final JSON line; it commits nothing and starts no Spark session. The rewrite
itself is not implemented yet: without ``--dry-run`` the job plans, then fails with exit code 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the ``spark_jobs`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.job_support import JobArgumentParser, UsageError, run_job


def build_parser() -> argparse.ArgumentParser:
    """The job's argument parser (bad arguments raise UsageError, exit code 2); option names are Java's."""
    parser = JobArgumentParser(prog="spark_jobs/compact.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", required=True, help="catalog name in pyiceberg's configuration")
    parser.add_argument("--table", required=True, help="table identifier NAMESPACE.TABLE")
    parser.add_argument("--where", help="rewrite only files that may hold rows matching this pyiceberg row filter")
    parser.add_argument("--target-file-size-bytes", type=int, help="default: write.target-file-size-bytes or 512 MiB")
    parser.add_argument("--min-file-size-bytes", type=int, help="default: 0.75 x target")
    parser.add_argument("--max-file-size-bytes", type=int, help="default: 1.8 x target")
    parser.add_argument("--min-input-files", type=int, help="default: 5")
    parser.add_argument("--delete-file-threshold", type=int, help="default: 2147483647 (off)")
    parser.add_argument("--delete-ratio-threshold", type=float, help="default: 0.3")
    parser.add_argument("--max-file-group-size-bytes", type=int, help="default: 100 GiB")
    parser.add_argument("--max-concurrent-file-group-rewrites", type=int, help="default: 5")
    parser.add_argument("--partial-progress", action="store_true", help="commit groups in batches as they finish")
    parser.add_argument("--max-commits", type=int, help="with --partial-progress: at most this many commits (10)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and commit nothing")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the compact job; returns the result the last stdout line carries."""
    from spark_jobs.engine.catalog import load_catalog, load_table
    from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
    from spark_jobs.engine.errors import UnsupportedFeatureError

    args = build_parser().parse_args(argv)
    if args.max_commits is not None and not args.partial_progress:
        raise UsageError("spark_jobs/compact.py: --max-commits needs --partial-progress")
    started = time.perf_counter()
    table = load_table(load_catalog(args.catalog), args.table)
    options = RewriteOptions.resolve(
        table.properties,
        target_file_size_bytes=args.target_file_size_bytes,
        min_file_size_bytes=args.min_file_size_bytes,
        max_file_size_bytes=args.max_file_size_bytes,
        min_input_files=args.min_input_files,
        delete_file_threshold=args.delete_file_threshold,
        delete_ratio_threshold=args.delete_ratio_threshold,
        max_file_group_size_bytes=args.max_file_group_size_bytes,
        max_concurrent_file_group_rewrites=args.max_concurrent_file_group_rewrites,
        partial_progress_enabled=args.partial_progress,
        partial_progress_max_commits=args.max_commits,
    )
    plan = plan_rewrite(table, table.current_snapshot(), options, where=args.where)
    seconds = {"plan": round(time.perf_counter() - started, 3)}
    if not args.dry_run:
        raise UnsupportedFeatureError(
            f"rewriting is not implemented yet; use --dry-run (the plan for {plan.table_name} has "
            f"{len(plan.groups)} file groups)"
        )
    operation = "replace" if plan.groups else None  # what a rewrite of this plan would commit
    return {
        "status": "ok",
        "job": "compact",
        "dry_run": True,
        "operation": operation,
        **plan.as_dict(),
        "seconds": seconds,
    }


if __name__ == "__main__":
    sys.exit(run_job("compact", main))
