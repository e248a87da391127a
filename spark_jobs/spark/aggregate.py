"""Aggregates on Spark or in this process: the Python API's entry (``aggregate_table``) to the read job's
aggregate (``engine/jobs/read_aggregate.py``); each task folds its rows where it runs (``spark/executor.py``:
one Spark stage, each task returning one small partial to the driver)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import SparkSession

from spark_jobs.engine.planning.scan_context import ScanContext
from spark_jobs.engine.planning.scan_tasks import ScanTask
from spark_jobs.engine.read.aggregates import AggregatePlan
from spark_jobs.spark.ansi import ANSI_CONF, ansi_default, ansi_enabled
from spark_jobs.spark.executor import fold_on_spark
from spark_jobs.spark.placement import placement_of

__all__ = ["ANSI_CONF", "aggregate_table", "ansi_default", "ansi_enabled", "partials_on_spark"]


def partials_on_spark(
    spark: SparkSession,
    tasks: Sequence[ScanTask],
    context: ScanContext,
    plan: AggregatePlan,
    description: str | None = None,
) -> tuple[list[list[Any]], dict[str, int]]:
    """Every task's partials of ``plan`` (one Spark task each, module doc) and the executors' counters summed.

    The Spark job is described as ``description`` (default: the aggregates) in Spark's UI.
    """
    return fold_on_spark(spark, tasks, context, plan.partial_of, description or f"aggregate {', '.join(plan.labels)}")


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
    """The aggregates' values by label and the counters saying how they were computed (``read.aggregate``'s doc;
    the steps: ``engine/jobs/read_aggregate.py``).

    On ``spark``, or in this process when it is None; then ``spark_for_plan`` (if given) sees the planned tasks and
    returns a session to run a plan too large for this process, or None. ``ansi`` is Spark SQL's ANSI mode for a
    fold in this process (default: on, as Spark 4's default); on Spark the session's own setting rules.
    """
    from spark_jobs.engine.jobs.read_aggregate import aggregate_rows

    placement = placement_of(spark, spark_for_plan, ansi=ansi)
    return aggregate_rows(
        catalog, table, aggregates, placement, row_filter=row_filter, snapshot_id=snapshot_id, ref=ref, as_of=as_of
    )
