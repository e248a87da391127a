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
import logging
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the ``spark_jobs`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.engine.compaction.options import REWRITE_JOB_ORDERS
from spark_jobs.engine.compaction.strategy import STRATEGIES
from spark_jobs.job_failures import set_subject
from spark_jobs.job_support import JobArgumentParser, UsageError, engine_on_executors, run_job, spark_session

log = logging.getLogger("spark_jobs.compact")


def build_parser() -> argparse.ArgumentParser:
    """The job's argument parser (bad arguments raise UsageError, exit code 2); option names are Java's."""
    parser = JobArgumentParser(prog="spark_jobs/compact.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", required=True, help="catalog name in pyiceberg's configuration")
    parser.add_argument("--table", required=True, help="table identifier NAMESPACE.TABLE")
    parser.add_argument("--where", help="rewrite only files that may hold rows matching this pyiceberg row filter")
    parser.add_argument("--strategy", choices=STRATEGIES, help="binpack (default) or sort")
    parser.add_argument("--sort-order", help="sort: 'c1 [asc|desc] [nulls first|last], ...' or 'zorder(c1,c2,...)'")
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
    from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
    from spark_jobs.engine.compaction.strategy import resolve_strategy
    from spark_jobs.engine.table.catalog import load_catalog, load_table

    args = build_parser().parse_args(argv)
    set_subject(table=args.table)
    if args.max_commits is not None and not args.partial_progress:
        raise UsageError("spark_jobs/compact.py: --max-commits needs --partial-progress")
    log.info("plan: compaction of %s ...", args.table)
    started = time.perf_counter()
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
        rewrite_all=args.rewrite_all or None,
        rewrite_job_order=args.rewrite_job_order,
        output_spec_id=args.output_spec_id,
        remove_dangling_deletes=args.remove_dangling_deletes or None,
        compression_factor=args.compression_factor,
    )
    plan = plan_rewrite(table, table.current_snapshot(), options, where=args.where, strategy=strategy)
    seconds = {"plan": round(time.perf_counter() - started, 3)}
    log.info("plan done in %.1f s: %d file groups", seconds["plan"], len(plan.groups))
    explanation = _explanation(table, options, args.where)
    for line in explanation:
        log.info("  %s", line)
    if not args.dry_run:
        return _rewrite(table, plan, seconds)
    print(describe_plan(plan), flush=True)
    operation = "replace" if plan.groups else None  # what a rewrite of this plan would commit
    return {
        "status": "ok",
        "job": "compact",
        "dry_run": True,
        "operation": operation,
        **plan.as_dict(),
        "explanation": explanation,
        "seconds": seconds,
    }


def _explanation(table: Any, options: Any, where: str | None) -> list[str]:
    """The plan's decisions per partition and file group, in words (the manifests are cached by now)."""
    from spark_jobs.engine.compaction.candidates import list_candidates
    from spark_jobs.engine.compaction.explain import explain_plan

    candidates = list_candidates(table, table.current_snapshot(), where)
    return explain_plan(candidates, table.spec().spec_id, len(table.spec().fields), options)


def _rewrite(table: Any, plan: Any, seconds: dict[str, float]) -> dict[str, Any]:
    """Rewrite and commit the plan on Spark; the job's result."""
    from spark_jobs.engine.commit.committer import require_writable_format

    require_writable_format(table)
    if not plan.groups:
        return {**_summary(plan, None), "seconds": seconds}
    from spark_jobs.spark.compact import run_rewrite

    spark = spark_session(f"iceberg-compact {plan.table_name}")
    engine_on_executors(spark)
    outcome = run_rewrite(spark, table, plan)
    seconds.update({phase: round(value, 3) for phase, value in outcome.seconds.items()})
    summary = _summary(plan, outcome)
    if plan.options.remove_dangling_deletes and outcome.commits:
        started = time.perf_counter()
        summary.update(_remove_dangling_deletes(table))
        seconds["remove_dangling_deletes"] = round(time.perf_counter() - started, 3)
    return {**summary, "seconds": seconds}


def _remove_dangling_deletes(table: Any) -> dict[str, Any]:
    """Java's remove-dangling-deletes after the rewrite: one more ``replace`` removing deletes nothing needs."""
    from spark_jobs.engine.commit.committer import commit_change
    from spark_jobs.engine.compaction.dangling_deletes import dangling_deletes_change, find_dangling_deletes

    table.refresh()
    start = table.current_snapshot()
    dangling = find_dangling_deletes(table, start)
    if not dangling.locations:
        return {"dangling_delete_files_removed": 0}
    result = commit_change(table, dangling_deletes_change(dangling), starting_snapshot_id=start.snapshot_id)
    return {
        "dangling_delete_files_removed": len(dangling.locations),
        "dangling_deletes_snapshot_id": result.snapshot_id,
        "snapshot_id": result.snapshot_id,
    }


def describe_plan(plan: Any) -> str:
    """The plan in words, one line per group (what ``--dry-run`` prints before its JSON line)."""
    strategy = plan.strategy
    how = strategy.java_name if not strategy.is_shuffling else f"{strategy.java_name} by {strategy.description}"
    if not plan.groups:
        return (
            f"plan: nothing to rewrite in {plan.table_name} at snapshot {plan.snapshot_id} "
            f"({plan.candidate_files} candidate data files, none selected by the {how} rules)"
        )
    summary = plan.as_dict()
    lines = [
        f"plan: {how} rewrite of {plan.table_name} at snapshot {plan.snapshot_id}: {summary['rewritten_data_files']} "
        f"data files ({summary['rewritten_bytes']} bytes, {summary['rewritten_rows']} rows) in "
        f"{summary['file_groups']} file groups into about {summary['expected_output_files']} files of spec "
        f"{plan.output_spec_id}, {summary['expected_commits']} replace commit(s); {summary['delete_files']} delete "
        f"files apply, {summary['delete_files_freed']} would be removed"
    ]
    for group in summary["groups"]:
        partition = ", ".join(f"{name}={value}" for name, value in group["partition"].items()) or "unpartitioned"
        lines.append(
            f"  group {group['global_index']} ({partition}): {group['input_files']} files, {group['input_bytes']} "
            f"bytes -> {group['expected_output_files']} file(s)"
        )
    return "\n".join(lines)


def _summary(plan: Any, outcome: Any) -> dict[str, Any]:
    """The result of a rewrite: snapshots, groups, files and bytes added and removed, delete files removed, rows."""
    commits = outcome.commits if outcome is not None else []

    def total(key: str) -> int:
        return sum(int(commit.summary.get(key, 0)) for commit in commits)

    counters = outcome.counters.as_dict() if outcome is not None else {}
    return {
        "status": "ok",
        "job": "compact",
        "dry_run": False,
        "table": plan.table_name,
        **plan.strategy.as_dict(),
        "starting_snapshot_id": plan.snapshot_id,
        "snapshot_id": commits[-1].snapshot_id if commits else plan.snapshot_id,
        "snapshot_ids": [commit.snapshot_id for commit in commits],
        "operation": "replace" if commits else None,
        "commits": len(commits),
        "file_groups": len(plan.groups),
        "rewritten_file_groups": len(outcome.committed_groups) if outcome is not None else 0,
        "failed_file_groups": outcome.failed_groups if outcome is not None else [],
        "failures": outcome.failures if outcome is not None else [],
        "data_files_added": total("added-data-files"),
        "data_files_removed": total("deleted-data-files"),
        "bytes_added": total("added-files-size"),
        "bytes_removed": total("removed-files-size"),
        "delete_files_removed": total("removed-delete-files"),
        "rows_read": counters.get("rows_read", 0),
        "rows_deleted": sum(counters.get(key, 0) for key in _ROWS_DELETED),
        "rows_written": outcome.rows_written if outcome is not None else 0,
        "rewrite_waves": outcome.waves if outcome is not None else 0,
        "counters": counters,
    }


_ROWS_DELETED = (
    "rows_deleted_by_position_deletes",
    "rows_deleted_by_deletion_vectors",
    "rows_deleted_by_equality_deletes",
)


if __name__ == "__main__":
    sys.exit(run_job("compact", main))
