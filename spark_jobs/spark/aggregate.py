"""Run a planned aggregate on Spark: one stage of scan tasks, each returning one small partial to the driver.

1. Each scan task becomes one partition of a Python RDD (``parallelize`` of the pickled tasks, one per slice).
2. On the executor the task is read by ``read.task_scan.read_task`` (deletes and the row filter applied) and its
   batches folded by ``AggregatePlan.partial_of`` in pyarrow; the task yields one (partials, counters) pair.
3. ``collect`` brings the pairs to the driver: one Spark job of one stage, no shuffle, and no row crosses into the
   JVM (a DataFrame aggregate would hand every surviving row from Python to the JVM, then exchange partials).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

from spark_jobs.engine.planning.scan_context import ScanContext
from spark_jobs.engine.planning.scan_tasks import ScanTask
from spark_jobs.engine.read.aggregates import AggregatePlan
from spark_jobs.engine.read.task_scan import read_task
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.spark.scan import read_parallelism

if TYPE_CHECKING:  # the driver's session module: executors unpickling a fold need not import it
    from spark_jobs.engine.read.session import ReadSession

ANSI_CONF = "spark.sql.ansi.enabled"
JOB_DESCRIPTION = "spark.job.description"


def ansi_enabled(spark: SparkSession) -> bool:
    """Whether the session runs Spark SQL's ANSI mode (Spark 4's default: on; 3.5's: off)."""
    return str(spark.conf.get(ANSI_CONF, ansi_default(spark.version))).lower() == "true"


def ansi_default(spark_version: str) -> str:
    """``spark.sql.ansi.enabled``'s default on that Spark version: ``true`` from Spark 4, ``false`` before."""
    return "true" if int(spark_version.split(".", maxsplit=1)[0]) >= 4 else "false"


def partials_on_spark(
    spark: SparkSession,
    tasks: Sequence[ScanTask],
    context: ScanContext,
    plan: AggregatePlan,
    description: str | None = None,
) -> tuple[list[list[Any]], dict[str, int]]:
    """Every task's partials (one Spark task each, module doc) and the executors' counters summed.

    The Spark job is described as ``description`` (default: the aggregates) in Spark's UI.
    """
    payloads = [pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL) for task in tasks]
    if not payloads:
        return [], {}

    def run_tasks(task_payloads: Iterable[bytes]) -> Iterator[tuple[list[Any], dict[str, int]]]:
        for payload in task_payloads:
            metrics = ScanMetrics()
            partials = plan.partial_of(read_task(pickle.loads(payload), context, metrics))
            yield partials, metrics.as_dict()

    context_ = spark.sparkContext
    previous = context_.getLocalProperty(JOB_DESCRIPTION)
    context_.setJobDescription(description or f"aggregate {', '.join(plan.labels)}")  # what Spark's UI shows
    try:
        replies = context_.parallelize(payloads, len(payloads)).mapPartitions(run_tasks).collect()
    finally:
        context_.setLocalProperty(JOB_DESCRIPTION, previous)  # type: ignore[arg-type]  # None removes it
    counters: dict[str, int] = {}
    for _, task_counters in replies:
        for key, value in task_counters.items():
            counters[key] = counters.get(key, 0) + value
    return [partials for partials, _ in replies], counters


def aggregate_table(
    spark: SparkSession | None,
    catalog: str | Any,
    table: str | Any,
    aggregates: str | Sequence[str],
    *,
    row_filter: str | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
    spark_for_plan: Callable[[Sequence[ScanTask]], SparkSession | None] | None = None,
    ansi: bool | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The aggregates' values by label and the counters saying how they were computed (``read.aggregate``'s doc).

    With ``spark`` None, ``spark_for_plan`` (if given) sees the planned tasks and returns a session to run a plan too
    large for this process, or None (the read job's driver route, ``spark.driver_read``); the plan is then made
    again for that session's slots. ``ansi`` is Spark SQL's ANSI mode for a fold in this process (default: on, as
    Spark 4's default); on Spark the session's own setting rules.

    1. Parse the aggregates and check them against the chosen snapshot's schema (bad input fails before any work).
    2. ``count(*)`` alone without a filter: the manifests answer for every data file no delete applies to
       (``planning.row_count``); only the others are scanned.
    3. Otherwise plan the read of the aggregates' columns (filter and deletes as any read) and fold every task on
       Spark (``partials_on_spark``), or in this process when ``spark`` is None; combine on the driver.
    """
    import logging

    from spark_jobs.engine.planning.row_count import plan_count
    from spark_jobs.engine.read.aggregates import bind_aggregates, parse_aggregates
    from spark_jobs.engine.read.session import narrowest_column, open_read_session
    from spark_jobs.engine.table.catalog import load_catalog, load_table
    from spark_jobs.engine.table.snapshots import resolve_read_target

    log = logging.getLogger("spark_jobs.read")
    parsed = parse_aggregates(aggregates)
    catalog_object = load_catalog(catalog) if isinstance(catalog, str) else catalog
    iceberg_table = load_table(catalog_object, table) if isinstance(table, str) else table  # or a loaded Table
    table_name = ".".join(iceberg_table.name())
    target = resolve_read_target(iceberg_table, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    plan = bind_aggregates(parsed, target.schema, table_name)
    resolved_id = target.snapshot.snapshot_id if target.snapshot is not None else None
    counters: dict[str, Any] = {"aggregates_from_metadata": False}
    metadata_rows = 0
    scan_only: frozenset[str] | None = None
    if plan.only_count_rows and row_filter is None:
        count_plan = plan_count(iceberg_table, target.snapshot)
        counters.update(count_plan.counters())
        if count_plan.answered_from_metadata:
            counters["aggregates_from_metadata"] = True
            counters["rows_aggregated"] = count_plan.metadata_rows
            log.info("%s of %s answered from the %s", plan.labels[0], table_name, count_plan.source)
            return {plan.labels[0]: count_plan.metadata_rows}, counters
        metadata_rows, scan_only = count_plan.metadata_rows, count_plan.files_to_scan
    # count(*) alone reads the narrowest column; otherwise the aggregates' columns.
    columns = list(plan.columns) or [narrowest_column(target.schema).name]

    def plan_scan(parallelism: int | None) -> ReadSession:
        planned = open_read_session(
            catalog_object,
            iceberg_table,
            columns=columns,
            row_filter=row_filter,
            snapshot_id=resolved_id,
            parallelism=parallelism,
        )
        if scan_only is not None:
            planned.keep_only_files(scan_only)
        return planned

    session = plan_scan(None if spark is None else read_parallelism(spark))
    if spark is None and spark_for_plan is not None:
        spark = spark_for_plan(session.tasks)
        if spark is not None:
            session = plan_scan(read_parallelism(spark))
    counters.update(session.metrics.as_dict())
    if spark is None:
        metrics = ScanMetrics()
        partials = [plan.partial_of(read_task(task, session.context, metrics)) for task in session.tasks]
        executor_counters = metrics.as_dict()
        ansi = True if ansi is None else ansi
    else:
        description = f"aggregate {', '.join(plan.labels)} of {table_name}"
        partials, executor_counters = partials_on_spark(spark, session.tasks, session.context, plan, description)
        ansi = ansi_enabled(spark)
    for key, value in executor_counters.items():
        counters[key] = counters.get(key, 0) + value
    counters["aggregate_tasks"] = len(session.tasks)
    counters["rows_aggregated"] = counters.get("rows_out", 0) + metadata_rows
    values = plan.combine(partials, ansi=ansi)
    if scan_only is not None:
        values[plan.labels[0]] += metadata_rows
    log.info("aggregates of %s at snapshot %s: %s", table_name, resolved_id, values)
    return values, counters
