"""Ingest files or a Spark query into an Iceberg table, as a spark-submit job.

Command line (catalog properties come from pyiceberg's configuration, never from here)::

    spark-submit spark_jobs/ingest.py --catalog NAME --table NS.TABLE --source URI
        [--source-format parquet|csv|json] [--sql QUERY] --mode append|overwrite|upsert|delete [--key c1,c2]
        [--overwrite-filter EXPR] [--delete-mode position|equality] [--idempotency-key K]
        [--create-if-missing [--format-version 2|3] [--partition-by 'day(ts),bucket(16,id)'] [--sort-by c1]]
        [--allow-schema-evolution]

``--sql`` is one query (SELECT, WITH, VALUES...) over the source, registered as the temporary view ``source``:
it is parsed with Spark's own query parser, and a statement (SET, ADD JAR, CREATE, INSERT...), several
statements, a reference to any other table or path, a table-valued function, or a reflection call
(``reflect``/``java_method``) is refused as bad input. An append or dynamic overwrite of plain Parquet files
(flat columns, no ``--sql``) reads them with pyarrow in the writing tasks instead of Spark's reader. On success
the last line of stdout is one JSON object (snapshot id, operation, files and bytes added and removed, rows, delete
files written, seconds per phase); on bad input the exit code is 2, the output has one line ``error: <reason>``,
and nothing is committed.
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

from spark_jobs.job_failures import set_subject
from spark_jobs.job_support import JobArgumentParser, UsageError, engine_on_executors, run_job, spark_session
from spark_jobs.spark.ingest_source import SOURCE_VIEW
from spark_jobs.spark.text_sources import SOURCE_MODES

log = logging.getLogger("spark_jobs.ingest")

SOURCE_FORMATS = ("parquet", "csv", "json")


def build_parser() -> argparse.ArgumentParser:
    """The job's argument parser (bad arguments raise UsageError, exit code 2)."""
    from spark_jobs.engine.ingest.options import DELETE_MODES, MODES

    parser = JobArgumentParser(prog="spark_jobs/ingest.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", required=True, help="catalog name in pyiceberg's configuration")
    parser.add_argument("--table", required=True, help="table identifier NAMESPACE.TABLE")
    parser.add_argument("--source", required=True, help="files to load (a file or directory URI)")
    parser.add_argument(
        "--source-format", choices=SOURCE_FORMATS, default="parquet", help="format of the source files (CSV: a header)"
    )
    parser.add_argument("--sql", help=f"a Spark SQL query over the source, registered as view '{SOURCE_VIEW}'")
    parser.add_argument(
        "--source-mode",
        choices=SOURCE_MODES,
        default=SOURCE_MODES[0],
        help="CSV and JSON: a malformed row fails the job (failfast, default), is kept with nulls (permissive) or"
        " left out (dropmalformed); the result counts malformed rows",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        required=True,
        help="append rows; overwrite by --overwrite-filter or the partitions written; upsert or delete by --key",
    )
    parser.add_argument("--key", help="comma-separated key columns (upsert, delete)")
    parser.add_argument("--overwrite-filter", help="overwrite the rows matching this row filter (pyiceberg syntax)")
    parser.add_argument(
        "--delete-mode",
        choices=DELETE_MODES,
        default="position",
        help="upsert/delete writes position deletes (deletion vectors on v3) or equality deletes by --key",
    )
    parser.add_argument("--idempotency-key", help="commit at most once per key (e.g. the Airflow run and task id)")
    parser.add_argument("--create-if-missing", action="store_true", help="create the table if missing")
    parser.add_argument(
        "--format-version", type=int, choices=(2, 3), default=2, help="format of a table made by --create-if-missing"
    )
    parser.add_argument("--partition-by", help="partition spec of a created table, e.g. 'day(ts),bucket(16,id)'")
    parser.add_argument("--sort-by", help="sort order of a created table, e.g. 'ts desc,id'")
    parser.add_argument(
        "--allow-schema-evolution", action="store_true", help="add source columns and struct fields the table lacks"
    )
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the ingest job; returns the result the last stdout line carries."""
    from spark_jobs.engine.ingest.options import IngestOptions, check_options
    from spark_jobs.engine.jobs.ingest_job import reads_source_files_directly
    from spark_jobs.engine.shared.errors import UnsupportedFeatureError
    from spark_jobs.engine.table.catalog import load_catalog
    from spark_jobs.spark.ingest import ingest_table, open_source
    from spark_jobs.spark.ingest_source import SourceRequest, explain_source_failure

    args = build_parser().parse_args(argv)
    set_subject(table=args.table, source=args.source)
    if args.sql is not None and not args.sql.strip():  # e.g. a template that rendered empty: never ingest unfiltered
        raise UsageError(
            f"spark_jobs/ingest.py: --sql is empty; give one query over the view '{SOURCE_VIEW}' or omit it"
        )
    if not args.source.strip():
        raise UsageError("spark_jobs/ingest.py: --source is empty; give the URI of a file or folder to load")
    options = IngestOptions(
        mode=args.mode,
        key=tuple(c.strip() for c in args.key.split(",") if c.strip()) if args.key else (),
        overwrite_filter=args.overwrite_filter,
        delete_mode=args.delete_mode,
        idempotency_key=args.idempotency_key,
        create_if_missing=args.create_if_missing,
        partition_by=args.partition_by,
        sort_by=args.sort_by,
        allow_schema_evolution=args.allow_schema_evolution,
        format_version=args.format_version,
    )
    check_options(options)
    storage = dict(load_catalog(args.catalog).properties)
    request = SourceRequest(args.source, args.source_format, args.sql, args.source_mode, storage)
    spark = spark_session(f"iceberg-ingest {args.table}")
    engine_on_executors(spark)
    log.info("source: %s (%s) ...", args.source, args.source_format)
    started = time.perf_counter()
    direct = reads_source_files_directly(options)  # the mode only writes the rows: Parquet files may skip Spark
    source, read = open_source(spark, args.catalog, args.table, request, files_directly=direct)
    read_seconds = time.perf_counter() - started
    log.info("source done in %.1f s", read_seconds)
    try:
        result = ingest_table(spark, args.catalog, args.table, source, options)
    except UnsupportedFeatureError as error:
        raise UsageError(str(error)) from error
    except Exception as error:
        unreadable = explain_source_failure(spark, error, read, table=args.table, request=request)
        if unreadable is not None:
            raise UsageError(unreadable) from error
        raise
    malformed_rows = read.malformed_rows if read else 0
    return result.with_first_phase("source", read_seconds).with_source(args.source_mode, malformed_rows).as_json()


if __name__ == "__main__":
    sys.exit(run_job("ingest", main))
