"""Merge-on-read read of an Iceberg table, as a spark-submit job and as a Python API.

Command line (catalog properties come from pyiceberg's configuration, never from here)::

    spark-submit spark_jobs/read.py --catalog NAME --table NS.TABLE
        [--snapshot-id N | --ref NAME | --as-of TS] [--columns c1,c2] [--filter EXPR]
        --output URI [--output-format parquet|csv] [--mode error|overwrite]
    spark-submit spark_jobs/read.py --catalog NAME --table NS.TABLE [--snapshot-id N | --ref NAME | --as-of TS]
        --count
    spark-submit spark_jobs/read.py --catalog NAME --table NS.TABLE [--snapshot-id N | --ref NAME | --as-of TS]
        --aggregate "count(*),sum(price),max(ts)" [--filter EXPR]

On success the last line of stdout is one JSON object with the counters; on bad input the exit code is 2, stderr
has a one-line reason, and nothing is written at ``--output``. An ``--output`` that overlaps the table's location,
another table or the namespace of its namespace, or the warehouse root is bad input. The result is written to a
hidden staging directory beside ``--output`` and moved there only when complete, so a failed read leaves
``--output`` as it was and its retry can run with ``--mode error``:

1. With mode ``error``, refuse an existing output (exit code 2) before any work.
2. Write the result to a hidden staging directory beside the output (``.<name>.staging-<id>``; Spark and Hive
   readers skip names starting with ``.``).
3. Check the output again (mode ``error``: it must still be absent; mode ``overwrite``: delete it), then rename the
   staging directory to the output (one rename on HDFS and local file systems; a copy on object stores), through
   the Spark session's Hadoop FileSystem. An object store that Spark's JVM has no file system for (the Spark this
   package installs has no S3 connector) is written by pyarrow on the executors instead (``spark/files.py``: one
   file per task, old files deleted after success, ``_SUCCESS`` last).
4. On any failure, delete the staging directory (a failure to do so is logged with its location) and leave the
   output as it was.

A Parquet export to a local path whose plan reads at most ``--driver-max-bytes`` (default 128 MiB, Iceberg's split
size: one Spark task's worth) is read and written by this driver process through the same staging steps, without
starting Spark (``spark/driver_read.py``); so are the scans of ``--count`` and ``--aggregate`` within that limit
(the fold in the driver follows the ANSI mode spark-submit set). The result's ``ran_in`` says ``driver`` or
``spark``.

``--count`` prints ``count(*)`` instead of writing: from the manifests alone when no delete file applies (no Spark
session is started), else the rows of the data files without deletes from the manifests plus a scan of the others;
the counters say which (``count_from_metadata``).

``--aggregate`` prints the values of ``count(*)``, ``count(col)``, ``sum``, ``min``, ``max``, ``avg`` over the rows
read (every delete applied, after ``--filter``) as ``aggregates`` in the result line, computed in pyarrow where each
Spark task decodes its rows and combined on the driver: one Spark stage, no row handed to the JVM
(``spark/aggregate.py``; types and overflow rules as Spark SQL's, ``engine/read/aggregates.py``). JSON-safe values:
decimals, dates and timestamps as ISO strings, binary as base64, NaN and infinities as text; ``rows_out`` is the
number of rows aggregated and ``output`` is null.

Python API: ``load(spark, catalog, table, ...)`` returns a DataFrame of the table, read by the engine on the
executors: through ``mapInArrow`` over the tasks planned by ``load`` (the cheaper route for Spark), or, when
``spark.sql.python.filterPushdown.enabled`` is true, through the ``iceberg_mor`` data source so that Spark's own
filters on the DataFrame are pushed into the engine. Without ``row_filter``, ``load(...).count()`` is answered as
``count(spark, catalog, table, ...)`` answers it: from the manifests when no delete file applies.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the ``spark_jobs`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.job_failures import set_subject
from spark_jobs.job_support import (
    JobArgumentParser,
    UsageError,
    engine_on_executors,
    hint_session_defaults,
    run_job,
    spark_session,
    start_spark_session,
)

OUTPUT_FORMATS = ("parquet", "csv")
DEFAULT_DRIVER_MAX_BYTES = 128 * 1024 * 1024  # Iceberg's read.split.target-size default: one task's worth
WRITE_MODES = ("error", "overwrite")
PLANNING_MODES = ("auto", "local", "distributed")
log = logging.getLogger("spark_jobs.read")


def load(
    spark: Any,
    catalog: str,
    table: str,
    *,
    columns: list[str] | None = None,
    row_filter: str | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
    planning_mode: str | None = None,
) -> Any:
    """A DataFrame of ``table`` at the chosen snapshot with every delete applied (nothing is read until an action).

    ``catalog`` is a catalog name resolved through pyiceberg's configuration; ``row_filter`` uses pyiceberg's
    row-filter syntax; at most one of ``snapshot_id``, ``ref``, ``as_of`` (epoch ms or ISO-8601) may be given.
    ``planning_mode`` (``auto``, ``local``, ``distributed``; default: the table's ``read.data-planning-mode`` and
    ``read.delete-planning-mode``, else ``auto``) says whether the manifests are read here or on the executors.
    Without Python filter pushdown the snapshot is the one current when ``load`` is called, for every action on
    the DataFrame; call ``load`` again to see later commits.
    """
    from spark_jobs.engine.planning.planning_mode import PlanningMode
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.spark.distributed_planning import SparkManifestReader
    from spark_jobs.spark.scan import (
        dataframe_from_session,
        dataframe_from_source,
        python_filter_pushdown_enabled,
        read_parallelism,
    )
    from spark_jobs.spark.types import spark_schema_of

    # Plan once on the driver first: a bad table, snapshot, column or filter fails here with a clear message.
    parallelism = read_parallelism(spark)
    engine_on_executors(spark)  # before planning: distributed planning runs the engine on the executors
    session = open_read_session(
        catalog,
        table,
        columns=columns,
        row_filter=row_filter,
        snapshot_id=snapshot_id,
        ref=ref,
        as_of=as_of,
        parallelism=parallelism,
        remote=SparkManifestReader(spark),
        planning_mode=PlanningMode.parse(planning_mode, name="planning_mode") if planning_mode else None,
    )
    hint_session_defaults(spark)
    if not python_filter_pushdown_enabled(spark):
        frame = dataframe_from_session(spark, session)
        if row_filter is None:
            _count_from_metadata(frame, spark, catalog, table, snapshot_id=session.snapshot_id)
        return frame
    options = {
        "catalog": catalog,
        "table": table,
        "columns": ",".join(columns) if columns else None,
        "filter": row_filter,
        "snapshot_id": snapshot_id,
        "ref": ref,
        "as_of": as_of,
        "parallelism": parallelism,
    }
    # The schema found here is handed to Spark so its planner process does not open the table again for it.
    frame = dataframe_from_source(spark, options, schema=spark_schema_of(session.output_schema))
    if row_filter is None:
        _count_from_metadata(frame, spark, catalog, table, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    return frame


def count(
    spark: Any,
    catalog: str | Any,
    table: str,
    *,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
    spark_for_plan: Callable[[Sequence[Any]], Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    """``count(*)`` of ``table`` at the chosen snapshot, and the counters saying how it was answered.

    From the manifests when no delete file applies to any data file (``spark`` may then be None: nothing is read);
    otherwise the data files with deletes are scanned (on ``spark``, or in this process when it is None) and the
    others counted from the manifests. With ``spark`` None, ``spark_for_plan`` (if given) sees the scan's planned
    tasks and returns a session to run a scan too large for this process, or None (the job's driver route).
    """
    from spark_jobs.engine.planning.row_count import plan_count
    from spark_jobs.engine.table.catalog import load_catalog, load_table
    from spark_jobs.engine.table.snapshots import resolve_read_target

    catalog_object = load_catalog(catalog) if isinstance(catalog, str) else catalog
    iceberg_table = load_table(catalog_object, table)
    target = resolve_read_target(iceberg_table, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    plan = plan_count(iceberg_table, target.snapshot)
    counters = plan.counters()
    if plan.answered_from_metadata:
        log.info("count(*) of %s answered from the %s: %d rows", table, plan.source, plan.metadata_rows)
        return plan.metadata_rows, counters
    scanned = _count_by_scan(
        spark, catalog_object, iceberg_table, target, plan.files_to_scan, spark_for_plan=spark_for_plan
    )
    counters["rows_counted_by_scan"] = scanned
    log.info(
        "count(*) of %s: %d rows from the manifests, %d by scanning %d data files with deletes",
        table,
        plan.metadata_rows,
        scanned,
        len(plan.files_to_scan),
    )
    return plan.metadata_rows + scanned, counters


def aggregate(
    spark: Any,
    catalog: str | Any,
    table: str | Any,
    aggregates: str | list[str],
    *,
    row_filter: str | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Aggregates of ``table``'s rows at the chosen snapshot (every delete applied, then ``row_filter``).

    ``table`` is ``ns.table`` or a loaded pyiceberg Table. ``aggregates`` is ``"count(*), sum(price)"`` or a list
    of such items: ``count(*)``, ``count(col)``, ``sum``, ``min``, ``max``, ``avg`` of top-level columns. Returns
    the values by label (``"sum(price)"``) as Spark SQL's aggregate over ``load(...)`` returns them (Python ints,
    floats, Decimals, strings, dates, timestamps: aware in UTC for ``timestamptz``), and counters saying how they
    were computed. Each Spark task folds its own rows with pyarrow and returns one partial: one Spark stage, no row
    handed to the JVM. ``count(*)`` alone without a filter is answered from the manifests where no delete applies
    (``aggregates_from_metadata``). With ``spark`` None the tasks run in this process. A function the column's type
    does not take is bad input (UserInputError).
    """
    from spark_jobs.spark.aggregate import aggregate_table

    if spark is not None:
        engine_on_executors(spark)
    return aggregate_table(
        spark, catalog, table, aggregates, row_filter=row_filter, snapshot_id=snapshot_id, ref=ref, as_of=as_of
    )


def _count_by_scan(
    spark: Any,
    catalog: Any,
    table: Any,
    target: Any,
    paths: frozenset[str],
    *,
    spark_for_plan: Callable[[Sequence[Any]], Any] | None = None,
) -> int:
    """Rows of the data files ``paths`` with their deletes applied, reading one narrow column."""
    from spark_jobs.engine.read.session import narrowest_column, open_read_session
    from spark_jobs.engine.read.task_scan import read_tasks_in_process

    snapshot_id = target.snapshot.snapshot_id if target.snapshot is not None else None
    session = open_read_session(catalog, table, columns=[narrowest_column(target.schema).name], snapshot_id=snapshot_id)
    session.keep_only_files(paths)
    if spark is None and spark_for_plan is not None:
        spark = spark_for_plan(session.tasks)
    if spark is None:
        return sum(batch.num_rows for batch in read_tasks_in_process(session.tasks, session.context, session.metrics))
    from spark_jobs.spark.scan import dataframe_from_session

    return int(dataframe_from_session(spark, session).count())


def _count_from_metadata(frame: Any, spark: Any, catalog: str, table: str, **snapshot: Any) -> None:
    """Make ``frame.count()`` answer as ``count`` does (the frame has no filter, so count(*) is the table's)."""

    def count_rows() -> int:
        rows, counters = count(spark, catalog, table, **snapshot)
        log.info("count(*) counters of %s: %s", table, counters)
        return rows

    frame.count = count_rows


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
    parser.add_argument("--filter", dest="row_filter", help='row filter in pyiceberg\'s syntax, e.g. "id > 5"')
    parser.add_argument("--output", help="where to write the result (a directory URI); required without --count")
    parser.add_argument("--count", action="store_true", help="print count(*) instead of writing rows")
    parser.add_argument(
        "--aggregate",
        help='print aggregates instead of writing rows, e.g. "count(*),sum(price),max(ts)" (count, sum, min, max, avg)',
    )
    parser.add_argument("--output-format", choices=OUTPUT_FORMATS, default="parquet")
    parser.add_argument(
        "--mode", choices=WRITE_MODES, default="error", help="error: fail if --output exists; overwrite: replace it"
    )
    parser.add_argument("--split-size", type=int, help="target bytes per Spark task (default: the table's)")
    parser.add_argument(
        "--driver-max-bytes",
        type=_non_negative_int,
        default=DEFAULT_DRIVER_MAX_BYTES,
        help="a Parquet export to a local path, or the scan of --count or --aggregate, whose plan reads at most this"
        " many bytes of data and delete files runs in the driver without starting Spark (default: 128 MiB,"
        " Iceberg's split size; 0: always on Spark)",
    )
    parser.add_argument(
        "--planning-mode",
        choices=PLANNING_MODES,
        help="where the manifests are read: local (this driver), distributed (the Spark executors), auto (Iceberg"
        " Java's rule: distributed only for many large manifests on a cluster wider than the driver); default: the"
        " table's read.data-planning-mode / read.delete-planning-mode, else auto",
    )
    return parser


def _non_negative_int(text: str) -> int:
    """An argparse type: a whole number of at least 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of bytes, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more bytes, got {value}")
    return value


def planning_is_distributed(properties: Any, requested: str | None) -> bool:
    """Whether the planning mode (the argument, else the table's properties) asks for the executors."""
    from spark_jobs.engine.planning.planning_mode import PlanningMode, planning_modes

    mode = PlanningMode.parse(requested, name="--planning-mode") if requested else None
    return PlanningMode.DISTRIBUTED in planning_modes(properties, mode)


def manifest_reader(spark_started: Callable[[], Any] | None, *, distributed: bool, spark_running: bool) -> Any:
    """The executors' manifest reader when planning may use it: distributed planning (Spark is started for it), or
    ``auto`` once Spark runs anyway; None plans every manifest in this process."""
    if spark_started is None or not (distributed or spark_running):
        return None
    from spark_jobs.spark.distributed_planning import SparkManifestReader

    spark = spark_started()
    engine_on_executors(spark)
    return SparkManifestReader(spark)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the read job; returns the result the last stdout line carries."""
    args = build_parser().parse_args(argv)
    set_subject(table=args.table)
    if args.aggregate is not None:
        return _aggregate_job(args)
    if args.count:
        return _count_job(args)
    if args.output is None:
        raise UsageError("spark_jobs/read.py: --output is required (or --count)")
    # Spark starts while the engine is imported and the read planned (bad input still fails before any Spark work),
    # unless the read may run in the driver (spark/driver_read.py): then the table's size or the plan decides.
    spark_started = None if _may_run_in_driver(args) else start_spark_session(f"iceberg-read {args.table}")
    from spark_jobs.engine.planning.planning_mode import PlanningMode
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.engine.table.catalog import load_catalog, load_table, refuse_output_over_tables
    from spark_jobs.engine.table.snapshots import resolve_read_target
    from spark_jobs.spark.driver_read import spark_needed_before_planning, submitted_parquet_codec, why_not_in_driver

    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    phases: dict[str, float] = {"plan": 0.0}
    started = time.perf_counter()
    catalog = load_catalog(args.catalog)
    table = load_table(catalog, args.table)
    target = resolve_read_target(table, snapshot_id=args.snapshot_id, ref=args.ref, as_of=args.as_of)
    phases["plan"] += time.perf_counter() - started
    # A read that will be too large for the driver starts Spark now, beside the planning (spark/driver_read.py);
    # so does distributed planning, which reads the manifests on the executors.
    distributed = planning_is_distributed(table.properties, args.planning_mode)
    needs_spark = spark_needed_before_planning(target.snapshot, args.row_filter, args.driver_max_bytes)
    if spark_started is None and (needs_spark or distributed):
        spark_started = start_spark_session(f"iceberg-read {args.table}")

    def plan(parallelism: int | None = None) -> Any:
        log.info("plan: %s ...", args.table)
        started = time.perf_counter()
        remote = manifest_reader(spark_started, distributed=distributed, spark_running=parallelism is not None)
        planned = open_read_session(
            catalog,
            table,
            columns=columns,
            row_filter=args.row_filter,
            snapshot_id=args.snapshot_id,
            ref=args.ref,
            as_of=args.as_of,
            split_size=args.split_size,
            parallelism=parallelism,
            remote=remote,
            planning_mode=PlanningMode.parse(args.planning_mode, name="--planning-mode")
            if args.planning_mode
            else None,
        )
        phases["plan"] += time.perf_counter() - started
        log.info(
            "plan done in %.1f s: snapshot %s, %d tasks",
            time.perf_counter() - started,
            planned.snapshot_id,
            len(planned.tasks),
        )
        return planned

    session = plan()
    refuse_output_over_tables(catalog, table, args.output)
    _check_output_free(args.output, args.mode, session.context.io_properties)
    if spark_started is None:
        codec = submitted_parquet_codec()
        refusal = why_not_in_driver(session, args.output, args.output_format, args.driver_max_bytes, codec)
        if refusal is None:
            return _read_in_driver(args, session, codec, phases)
        log.info("the read runs on Spark: %s", refusal)
        spark_started = start_spark_session(f"iceberg-read {args.table}")
    from spark_jobs.spark.files import hadoop_uri, write_output
    from spark_jobs.spark.scan import counted_dataframe_from_session, read_parallelism

    spark = spark_started()
    engine_on_executors(spark)
    parallelism = read_parallelism(spark)
    if args.split_size is None and len(session.tasks) < parallelism:
        # Planned before Spark started (bad input fails fast); plan again so the split size fits Spark's slots.
        session = plan(parallelism)
    log.info("read and write to %s (%s) ...", args.output, args.output_format)
    started = time.perf_counter()
    frame, executor_counters = counted_dataframe_from_session(spark, session)
    spark_output = hadoop_uri(spark, args.output)
    if spark_output is not None:  # a file system Spark's JVM has (local, HDFS, S3A on a cluster that has it)
        options = {"header": "true"} if args.output_format == "csv" else {}
        _write_output(frame, spark_output, output_format=args.output_format, mode=args.mode, options=options)
    else:  # an object store without a JVM connector: pyarrow on the executors (spark/files.py)
        write_output(frame, args.output, args.output_format, args.mode, session.context.io_properties)
    phases["read_and_write"] = time.perf_counter() - started
    log.info("read and write done in %.1f s", phases["read_and_write"])
    counters = session.metrics.as_dict()
    for key, value in executor_counters.value.items():
        counters[key] = counters.get(key, 0) + value
    return _export_result(args, session, counters, "spark", phases)


def _read_in_driver(args: argparse.Namespace, session: Any, codec: str, phases: dict[str, float]) -> dict[str, Any]:
    """The read run and written by this process, without Spark (``spark/driver_read.py``): the job's result."""
    from spark_jobs.spark.driver_read import planned_bytes, write_in_driver

    log.info(
        "read and write to %s (parquet, %s) in the driver: the plan reads %d bytes, at most --driver-max-bytes %d,"
        " so no Spark session is started ...",
        args.output,
        codec,
        planned_bytes(session.tasks),
        args.driver_max_bytes,
    )
    started = time.perf_counter()
    write_in_driver(session, args.output, args.mode, codec)
    phases["read_and_write"] = time.perf_counter() - started
    log.info("read and write done in %.1f s", phases["read_and_write"])
    return _export_result(args, session, session.metrics.as_dict(), "driver", phases)


def _export_result(
    args: argparse.Namespace, session: Any, counters: dict[str, Any], ran_in: str, phases: dict[str, float]
) -> dict[str, Any]:
    """The export's result line: what was read, where it was written, the counters, where it ran, the seconds."""
    return {
        "status": "ok",
        "job": "read",
        "table": session.table_name,
        "snapshot_id": session.snapshot_id,
        "output": args.output,
        "output_format": args.output_format,
        "counters": counters,
        "rows_out": counters["rows_out"],
        "ran_in": ran_in,
        "seconds": {name: round(value, 3) for name, value in phases.items()},
    }


class _SparkWhenOver:
    """A ``spark_for_plan`` for the jobs: None (run in this process) for a plan of at most ``max_bytes`` (above 0),
    else the job's session, started then (``spark/driver_read.py``); remembers the session it started."""

    def __init__(self, max_bytes: int, app_name: str) -> None:
        self.max_bytes = max_bytes
        self.app_name = app_name
        self.session: Any = None

    def __call__(self, tasks: Sequence[Any]) -> Any:
        from spark_jobs.spark.driver_read import planned_bytes

        size = planned_bytes(list(tasks))
        if self.max_bytes > 0 and size <= self.max_bytes:
            log.info("the scan reads %d bytes, at most --driver-max-bytes %d: read in the driver", size, self.max_bytes)
            return None
        log.info("the scan reads %d bytes, more than --driver-max-bytes %d: read on Spark", size, self.max_bytes)
        self.session = _job_session(self.app_name)
        return self.session


def _job_session(app_name: str) -> Any:
    """The job's Spark session with the engine on its executors."""
    spark = spark_session(app_name)
    engine_on_executors(spark)
    return spark


def _may_run_in_driver(args: argparse.Namespace) -> bool:
    """Whether the arguments alone leave the driver route open: Parquet to a local path, a limit above 0."""
    from spark_jobs.spark.output_location import local_path  # standard library only: Spark's start waits on this

    local = local_path(str(args.output)) is not None
    return args.driver_max_bytes > 0 and args.output_format == "parquet" and local


def _count_job(args: argparse.Namespace) -> dict[str, Any]:
    """``--count``: count(*) from the manifests when possible, else with a scan of the files with deletes (in the
    driver when it reads at most ``--driver-max-bytes``, else on Spark)."""
    from spark_jobs.engine.table.catalog import load_catalog, load_table
    from spark_jobs.engine.table.snapshots import resolve_read_target

    if args.output is not None or args.row_filter is not None or args.columns is not None:
        raise UsageError("spark_jobs/read.py: --count takes no --output, --filter or --columns")
    started = time.perf_counter()
    table = load_table(load_catalog(args.catalog), args.table)
    target = resolve_read_target(table, snapshot_id=args.snapshot_id, ref=args.ref, as_of=args.as_of)
    # Spark starts only for a scan the manifests cannot replace that is too large for the driver.
    chooser = _SparkWhenOver(args.driver_max_bytes, f"iceberg-count {args.table}")
    snapshot_id = target.snapshot.snapshot_id if target.snapshot is not None else None
    rows, counters = count(None, args.catalog, args.table, snapshot_id=snapshot_id, spark_for_plan=chooser)
    return {
        "status": "ok",
        "job": "read",
        "table": ".".join(table.name()),
        "snapshot_id": snapshot_id,
        "count": rows,
        "counters": counters,
        "ran_in": "driver" if chooser.session is None else "spark",
        "seconds": {"count": round(time.perf_counter() - started, 3)},
    }


def _aggregate_job(args: argparse.Namespace) -> dict[str, Any]:
    """``--aggregate``: the values in the result line (``aggregate``); Spark starts unless the manifests answer."""
    from spark_jobs.engine.read.aggregates import bind_aggregates, json_safe, parse_aggregates
    from spark_jobs.engine.table.catalog import load_catalog, load_table
    from spark_jobs.engine.table.snapshots import resolve_read_target
    from spark_jobs.spark.aggregate import aggregate_table
    from spark_jobs.spark.driver_read import spark_needed_before_planning, submitted_ansi_mode

    if args.output is not None or args.columns is not None or args.count:
        raise UsageError("spark_jobs/read.py: --aggregate takes no --output, --columns or --count")
    started = time.perf_counter()
    parsed = parse_aggregates(args.aggregate)  # malformed aggregates fail before Spark starts
    count_rows_only = args.row_filter is None and all(a.function == "count" and a.column is None for a in parsed)
    name = f"iceberg-aggregate {args.table}"
    # Spark starts while the table is loaded and the aggregates checked (as the export does), unless the manifests
    # may answer (count(*) alone) or the scan may run in the driver (spark/driver_read.py): then the table's size
    # or the plan decides.
    in_driver_possible = count_rows_only or args.driver_max_bytes > 0
    spark_started = None if in_driver_possible else start_spark_session(name)
    catalog = load_catalog(args.catalog)
    table = load_table(catalog, args.table)
    target = resolve_read_target(table, snapshot_id=args.snapshot_id, ref=args.ref, as_of=args.as_of)
    bind_aggregates(parsed, target.schema, ".".join(table.name()))
    large = spark_needed_before_planning(target.snapshot, args.row_filter, args.driver_max_bytes)
    if spark_started is None and not count_rows_only and large:
        spark_started = start_spark_session(name)
    spark = None
    if spark_started is not None:
        spark = spark_started()
        engine_on_executors(spark)
    chooser = _SparkWhenOver(args.driver_max_bytes, name)
    snapshot_id = target.snapshot.snapshot_id if target.snapshot is not None else None
    values, counters = aggregate_table(
        spark,
        catalog,
        table,
        args.aggregate,
        row_filter=args.row_filter,
        snapshot_id=snapshot_id,
        spark_for_plan=chooser,
        ansi=submitted_ansi_mode(),
    )
    return {
        "status": "ok",
        "job": "read",
        "table": ".".join(table.name()),
        "snapshot_id": snapshot_id,
        "output": None,
        "output_format": None,
        "aggregates": json_safe(values),
        "counters": counters,
        "rows_out": counters["rows_aggregated"],  # the rows the aggregates ran over: deletes and filter applied
        "ran_in": "driver" if chooser.session is None and spark is None else "spark",
        "seconds": {"aggregate": round(time.perf_counter() - started, 3)},
    }


def _check_output_free(output: str, mode: str, storage_properties: dict[str, str]) -> None:
    """Refuse, before any work, a local output under a regular file, or one that exists with mode error.

    An object-store output is looked at with the catalog's storage properties; when that fails (the cluster may
    reach it with other credentials), the writer's own check decides. Other remote outputs are checked by the writer.
    """
    from spark_jobs.spark.output_location import local_path

    path = local_path(output)
    if path is None:
        if mode == "error":
            _check_object_store_output_free(output, storage_properties)
        return
    for ancestor in path.parents:
        if ancestor.is_file():
            raise UsageError(f"--output {output} is under {ancestor}, which is a regular file, not a directory")
    if mode == "error" and path.exists():
        raise UsageError(f"--output {output} already exists; pass --mode overwrite to replace it")


def _check_object_store_output_free(output: str, storage_properties: dict[str, str]) -> None:
    """Refuse an existing object-store output, listed with the catalog's storage properties."""
    from spark_jobs.engine.shared.storage import file_system, is_object_store
    from spark_jobs.spark.files import existing_files

    if not is_object_store(output):
        return
    try:
        filesystem, path = file_system(output, storage_properties)
        found = existing_files(filesystem, path.rstrip("/"))
    except OSError:
        return
    if found:
        raise UsageError(f"--output {output} already exists; pass --mode overwrite to replace it")


def _write_output(frame: Any, output: str, *, output_format: str, mode: str, options: dict[str, str]) -> None:
    """Write ``frame`` to ``output`` through a staging directory (module doc); ``mode`` is error or overwrite."""
    spark = frame.sparkSession
    target = _hadoop_path(spark, output)
    file_system = target.getFileSystem(spark._jsc.hadoopConfiguration())
    if mode == "error" and file_system.exists(target):
        raise UsageError(f"--output {output} already exists; pass --mode overwrite to replace it")
    from spark_jobs.spark.output_location import staging_location

    staging = _hadoop_path(spark, staging_location(output))
    try:
        writer = frame.write.mode("errorifexists").format(output_format)
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save(staging.toString())
        if file_system.exists(target):
            if mode == "error":
                raise UsageError(f"--output {output} was created by someone else while this job ran")
            if not file_system.delete(target, True):
                raise OSError(f"could not delete the existing --output {output} to replace it")
        parent = target.getParent()
        if parent is not None and not file_system.exists(parent):
            file_system.mkdirs(parent)
        if not file_system.rename(staging, target):
            raise OSError(f"could not move the result from {staging.toString()} to --output {output}")
    except BaseException:
        _delete_staging(file_system, staging)
        raise


def _hadoop_path(spark: Any, location: str) -> Any:
    return spark._jvm.org.apache.hadoop.fs.Path(location)


def _delete_staging(file_system: Any, staging: Any) -> None:
    try:
        if file_system.exists(staging) and not file_system.delete(staging, True):
            log.warning("could not delete the staging directory %s", staging.toString())
    except Exception as error:  # the job's own failure is what the caller reports; this one is logged
        log.warning("could not delete the staging directory %s (left behind): %s", staging.toString(), error)


if __name__ == "__main__":
    sys.exit(run_job("read", main))
