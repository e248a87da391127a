"""Merge-on-read read of an Iceberg table, as a spark-submit job and as a Python API.

Command line (catalog properties come from pyiceberg's configuration, never from here)::

    spark-submit spark_jobs/read.py --catalog NAME --table NS.TABLE
        [--snapshot-id N | --ref NAME | --as-of TS] [--columns c1,c2] [--filter EXPR]
        --output URI [--output-format parquet|csv] [--mode error|overwrite]
    spark-submit spark_jobs/read.py --catalog NAME --table NS.TABLE [--snapshot-id N | --ref NAME | --as-of TS]
        --count
    spark-submit spark_jobs/read.py --catalog NAME --table NS.TABLE [--snapshot-id N | --ref NAME | --as-of TS]
        --aggregate "count(*),sum(price),max(ts)" [--filter EXPR]

On success the last line of stdout is one JSON object (``engine/jobs/read_results.py``); on bad input the exit code
is 2, stderr has a one-line reason, and nothing is written at ``--output``. The three modes:

- export (``engine/jobs/read_export.py``): rows written through a hidden staging directory beside ``--output``,
  moved there only when complete, so a failed read leaves ``--output`` as it was; an output over a table, its
  namespace or the warehouse root is bad input.
- ``--count`` (``engine/jobs/read_count.py``): from the manifests when no delete file applies, else the manifests
  plus a scan of the data files with deletes.
- ``--aggregate`` (``engine/jobs/read_aggregate.py``): ``count(*)``, ``count(col)``, ``sum``, ``min``, ``max``,
  ``avg`` folded in pyarrow where each task decodes its rows, combined on the driver; JSON-safe values.

Where the tasks run is one decision (``engine/jobs/placement.py``): a scan whose plan reads at most
``--driver-max-bytes`` (default 128 MiB, one Spark task's worth) runs in this process without starting Spark
(``spark/driver_read.py``), else on Spark (``spark/executor.py``); Spark starts as soon as the arguments or the
snapshot rule the driver out. The result's ``ran_in`` says which.

Python API (``spark/api.py``, exported here): ``load(spark, catalog, table, ...)`` returns a DataFrame of the table
read by the engine on the executors; ``count`` and ``aggregate`` return values and counters.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the ``spark_jobs`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.engine.jobs.placement import export_may_run_in_driver  # no heavy import: Spark waits on it
from spark_jobs.job_failures import set_subject
from spark_jobs.job_support import JobArgumentParser, UsageError, job_placement, non_negative_int, run_job

OUTPUT_FORMATS = ("parquet", "csv")
DEFAULT_DRIVER_MAX_BYTES = 128 * 1024 * 1024  # Iceberg's read.split.target-size default: one task's worth
WRITE_MODES = ("error", "overwrite")
PLANNING_MODES = ("auto", "local", "distributed")
PYTHON_API = ("load", "count", "aggregate")
# The session setting ``--spark-parquet-reader off`` sets to false (``spark/plain_parquet.ENABLED_CONF``, not
# imported here: the job starts Spark before importing pyspark's modules).
SPARK_PARQUET_READER_CONF = "spark.iceberg_provider.sparkParquetReader.enabled"


def __getattr__(name: str) -> Any:
    """The Python API (``spark/api.py``), imported when first used so the job starts Spark before importing it."""
    if name in PYTHON_API:
        from spark_jobs.spark import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_parser() -> argparse.ArgumentParser:
    """The job's argument parser (bad arguments raise UsageError, exit code 2)."""
    parser = JobArgumentParser(prog="spark_jobs/read.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", required=True, help="catalog name in pyiceberg's configuration")
    parser.add_argument("--table", required=True, help="table identifier NAMESPACE.TABLE")
    snapshot = parser.add_mutually_exclusive_group()
    snapshot.add_argument("--snapshot-id", type=int, help="read this snapshot")
    snapshot.add_argument("--ref", help="read the head of this branch or tag")
    snapshot.add_argument("--as-of", help="read the snapshot current at this time (epoch ms or ISO-8601)")
    parser.add_argument("--columns", help="comma-separated columns to return, in this order (default: all)")
    parser.add_argument(
        "--filter",
        dest="row_filter",
        help='row filter in pyiceberg\'s syntax with variant_get and st_intersects forms, e.g. "id > 5"',
    )
    parser.add_argument("--output", help="where to write the result (a directory URI); required without --count")
    parser.add_argument("--count", action="store_true", help="print count(*) instead of writing rows")
    parser.add_argument(
        "--aggregate",
        help='print aggregates instead of writing rows, e.g. "count(*),sum(price),max(ts)" (count, sum, min, max, avg)',
    )
    parser.add_argument(
        "--output-format", choices=OUTPUT_FORMATS, default="parquet", help="format of the files written"
    )
    parser.add_argument(
        "--mode", choices=WRITE_MODES, default="error", help="error: fail if --output exists; overwrite: replace it"
    )
    parser.add_argument("--split-size", type=int, help="target bytes per Spark task (default: the table's)")
    parser.add_argument(
        "--driver-max-bytes",
        type=non_negative_int,
        default=DEFAULT_DRIVER_MAX_BYTES,
        help="a Parquet export to a local path, or the scan of --count or --aggregate, whose plan reads at most this"
        " many bytes of data and delete files runs in the driver without starting Spark (default: 128 MiB,"
        " Iceberg's split size; 0: always on Spark)",
    )
    parser.add_argument(
        "--spark-parquet-reader",
        choices=("on", "off"),
        default="on",
        help="on Spark: data files no delete applies to go through Spark's own Parquet reader (columns by field id)"
        " where it returns exactly the engine's rows and they hold at least"
        " spark.iceberg_provider.sparkParquetReader.minBytes (default 64 MiB); off: every file through the engine's"
        " reader",
    )
    parser.add_argument(
        "--planning-mode",
        choices=PLANNING_MODES,
        help="where the manifests are read: local (this driver), distributed (the Spark executors), auto (Iceberg"
        " Java's rule: distributed only for many large manifests on a cluster wider than the driver); default: the"
        " table's read.data-planning-mode / read.delete-planning-mode, else auto",
    )
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the read job; returns the result the last stdout line carries."""
    args = build_parser().parse_args(argv)
    set_subject(table=args.table)
    from spark_jobs.engine.jobs.read_results import ReadRequest

    request = ReadRequest(
        catalog=args.catalog,
        table=args.table,
        snapshot_id=args.snapshot_id,
        ref=args.ref,
        as_of=args.as_of,
        columns=[c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None,
        row_filter=args.row_filter,
        split_size=args.split_size,
        driver_max_bytes=args.driver_max_bytes,
        planning_mode=args.planning_mode,
    )
    session_conf = {SPARK_PARQUET_READER_CONF: "false"} if args.spark_parquet_reader == "off" else {}
    job = "aggregate" if args.aggregate is not None else "count" if args.count else "read"
    placement = job_placement(args.driver_max_bytes, f"iceberg-{job} {args.table}", session_conf)  # one per job
    if args.aggregate is not None:
        if args.output is not None or args.columns is not None or args.count:
            raise UsageError("spark_jobs/read.py: --aggregate takes no --output, --columns or --count")
        from spark_jobs.engine.jobs.read_aggregate import aggregate_job

        return aggregate_job(request, args.aggregate, placement).as_json()
    if args.count:
        if args.output is not None or args.row_filter is not None or args.columns is not None:
            raise UsageError("spark_jobs/read.py: --count takes no --output, --filter or --columns")
        from spark_jobs.engine.jobs.read_count import count_job

        return count_job(request, placement).as_json()
    if args.output is None:
        raise UsageError("spark_jobs/read.py: --output is required (or --count)")
    if not export_may_run_in_driver(args.output, args.output_format, args.driver_max_bytes):
        placement.rule_out_driver()  # Spark starts while the engine is imported and the read planned
    from spark_jobs.engine.jobs.executor import ExportTarget
    from spark_jobs.engine.jobs.read_export import export_table

    target = ExportTarget(output=args.output, output_format=args.output_format, mode=args.mode)
    return export_table(request, target, placement).as_json()


if __name__ == "__main__":
    sys.exit(run_job("read", main))
