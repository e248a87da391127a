"""Compaction of an Iceberg table with Iceberg Java's RewriteDataFiles rules (bin-pack, sort, z-order), as a job.

Command line (catalog properties come from pyiceberg's configuration, never from here)::

    spark-submit spark_jobs/compact.py --catalog NAME --table NS.TABLE [--where EXPR]
        [--strategy binpack|sort] [--sort-order 'c1 [asc|desc] [nulls first|last], ...' | 'zorder(c1,c2,...)']
        [--target-file-size-bytes N] [--min-file-size-bytes N] [--max-file-size-bytes N] [--min-input-files N]
        [--delete-file-threshold N] [--delete-ratio-threshold F] [--max-file-group-size-bytes N] [--rewrite-all]
        [--max-concurrent-file-group-rewrites N] [--partial-progress [--max-commits N]]
        [--rewrite-job-order bytes-asc|bytes-desc|files-asc|files-desc|none] [--output-spec-id N]
        [--remove-dangling-deletes] [--compression-factor F] [--shuffle-partitions-per-file N]
        [--var-length-contribution N] [--max-output-size N] [--dry-run]

``--strategy sort`` sorts each file group's rows by ``--sort-order`` (default: the table's sort order; a table
without one is refused), range-partitioned so output files cover key ranges that do not overlap; ``--sort-order
'zorder(a, b)'`` orders them by the interleaved bits of the columns instead. Options keep Java's names and defaults.

``--dry-run`` plans on the driver and prints the plan in words, then as the final JSON line (file groups, input
files, bytes and rows, delete files, expected output files, commits); it commits nothing and starts no Spark
session. Without it, the groups are rewritten on the executors through the merge-on-read reader (deletes folded in)
and committed as ``replace`` snapshots with the starting data sequence number (``spark_jobs.spark.compact``);
the final JSON line carries the snapshot ids, what was added and removed, rows and seconds per phase.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the ``spark_jobs`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.engine.compaction.options import REWRITE_JOB_ORDERS
from spark_jobs.engine.compaction.strategy import STRATEGIES
from spark_jobs.job_failures import set_subject
from spark_jobs.job_support import (
    REWRITE_SIZE_OPTIONS,
    JobArgumentParser,
    UsageError,
    add_rewrite_size_options,
    engine_on_executors,
    run_job,
    spark_session,
)

if TYPE_CHECKING:
    from pyiceberg.table import Table

    from spark_jobs.engine.compaction.outcome import RewriteOutcome
    from spark_jobs.engine.compaction.planner import RewritePlan


def build_parser() -> argparse.ArgumentParser:
    """The job's argument parser (bad arguments raise UsageError, exit code 2); option names are Java's."""
    parser = JobArgumentParser(prog="spark_jobs/compact.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", required=True, help="catalog name in pyiceberg's configuration")
    parser.add_argument("--table", required=True, help="table identifier NAMESPACE.TABLE")
    parser.add_argument("--where", help="rewrite only files that may hold rows matching this pyiceberg row filter")
    parser.add_argument("--strategy", choices=STRATEGIES, help="binpack (default) or sort")
    parser.add_argument("--sort-order", help="sort: 'c1 [asc|desc] [nulls first|last], ...' or 'zorder(c1,c2,...)'")
    add_rewrite_size_options(parser, "write.target-file-size-bytes or 512 MiB")
    parser.add_argument("--delete-file-threshold", type=int, help="default: 2147483647 (off)")
    parser.add_argument("--delete-ratio-threshold", type=float, help="default: 0.3")
    parser.add_argument("--max-concurrent-file-group-rewrites", type=int, help="default: 5")
    parser.add_argument("--partial-progress", action="store_true", help="commit groups in batches as they finish")
    parser.add_argument("--max-commits", type=int, help="with --partial-progress: at most this many commits (10)")
    parser.add_argument("--rewrite-all", action="store_true", help="rewrite every file the filter selects")
    parser.add_argument("--rewrite-job-order", choices=REWRITE_JOB_ORDERS, help="order of file groups (none)")
    parser.add_argument("--output-spec-id", type=int, help="partition spec of the output files (default: current)")
    parser.add_argument(
        "--remove-dangling-deletes", action="store_true", help="then remove delete files no data file needs"
    )
    parser.add_argument("--compression-factor", type=float, help="sort/z-order: output size / input size (1.0)")
    parser.add_argument("--shuffle-partitions-per-file", type=int, help="sort/z-order: sorted ranges per file (1)")
    parser.add_argument("--var-length-contribution", type=int, help="z-order: bytes of a string or binary (8)")
    parser.add_argument("--max-output-size", type=int, help="z-order: bytes of the interleaved value (all)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and commit nothing")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the compact job; returns the result the last stdout line carries."""
    from spark_jobs.engine.compaction import RewriteOptions
    from spark_jobs.engine.compaction.strategy import resolve_strategy
    from spark_jobs.engine.jobs.compact_job import compact_table
    from spark_jobs.engine.table.catalog import load_catalog, load_table

    args = build_parser().parse_args(argv)
    set_subject(table=args.table)
    if args.max_commits is not None and not args.partial_progress:
        raise UsageError("spark_jobs/compact.py: --max-commits needs --partial-progress")
    table = load_table(load_catalog(args.catalog), args.table)
    strategy = resolve_strategy(
        table,
        args.strategy,
        args.sort_order,
        compression_factor=args.compression_factor,
        shuffle_partitions_per_file=args.shuffle_partitions_per_file,
        var_length_contribution=args.var_length_contribution,
        max_output_size=args.max_output_size,
    )
    options = RewriteOptions.resolve(
        table.properties,
        **{name: getattr(args, name) for name in REWRITE_SIZE_OPTIONS},
        delete_file_threshold=args.delete_file_threshold,
        delete_ratio_threshold=args.delete_ratio_threshold,
        max_concurrent_file_group_rewrites=args.max_concurrent_file_group_rewrites,
        partial_progress_enabled=args.partial_progress,
        partial_progress_max_commits=args.max_commits,
        rewrite_all=args.rewrite_all or None,
        rewrite_job_order=args.rewrite_job_order,
        output_spec_id=args.output_spec_id,
        remove_dangling_deletes=args.remove_dangling_deletes or None,
        compression_factor=args.compression_factor,
    )
    result = compact_table(
        table, options, strategy, where=args.where, dry_run=args.dry_run, run_rewrite=_rewrite_on_spark
    )
    return result.as_json()


def _rewrite_on_spark(table: Table, plan: RewritePlan) -> RewriteOutcome:
    """The plan's groups rewritten on the job's Spark session, started now (``spark/compact.py``)."""
    from spark_jobs.spark.compact import run_rewrite

    spark = spark_session(f"iceberg-compact {plan.table_name}")
    engine_on_executors(spark)
    return run_rewrite(spark, table, plan)


if __name__ == "__main__":
    sys.exit(run_job("compact", main))
