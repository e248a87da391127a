"""Aggregates on Spark: one job of one stage per query, and sums that overflow as Spark SQL's own do."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, LongType, NestedField

from spark_jobs.engine.read.aggregates import AggregateOverflowError, bind_aggregates, parse_aggregates
from spark_jobs.spark.aggregate import ANSI_CONF, aggregate_table, ansi_enabled

pytestmark = [pytest.mark.spark, pytest.mark.spark35]  # the route needs nothing of Spark 4


def test_an_aggregate_is_one_spark_job_of_one_stage(spark, conformance_catalog):
    from spark_jobs.job_support import engine_on_executors

    engine_on_executors(spark)
    context = spark.sparkContext
    context.setJobGroup("aggregate-stages", "aggregate")
    try:
        values, counters = aggregate_table(
            spark, conformance_catalog, "corpus.v2_eq_deletes", "count(*),sum(qty),max(note)", row_filter="id > 10"
        )
        assert context.getLocalProperty("spark.job.description") == "aggregate"  # the caller's, restored
    finally:
        context.setJobGroup("idle", "idle")
    tracker = context.statusTracker()
    jobs = list(tracker.getJobIdsForGroup("aggregate-stages"))
    stages = [stage for job in jobs for stage in tracker.getJobInfo(job).stageIds]
    assert (len(jobs), len(stages)) == (1, 1)
    assert counters["aggregate_tasks"] == tracker.getStageInfo(stages[0]).numTasks
    assert values["count(*)"] == counters["rows_out"] > 0


@pytest.mark.parametrize("ansi", [True, False])
def test_sum_overflow_follows_the_sessions_ansi_mode_as_sparks_sum_does(spark, ansi):
    schema = Schema(
        NestedField(1, "l", LongType(), required=False), NestedField(2, "a", DecimalType(38, 2), required=False)
    )
    largest = decimal.Decimal("9" * 36 + ".99")
    rows = {"l": [2**63 - 1, 2, None], "a": [largest, decimal.Decimal("0.01"), None]}
    batch = pa.record_batch({"l": pa.array(rows["l"], pa.int64()), "a": pa.array(rows["a"], pa.decimal128(38, 2))})
    frame = spark.createDataFrame(list(zip(rows["l"], rows["a"], strict=True)), "l bigint, a decimal(38,2)")
    before = spark.conf.get(ANSI_CONF)
    spark.conf.set(ANSI_CONF, str(ansi).lower())
    try:
        assert ansi_enabled(spark) is ansi
        for column in ("l", "a"):
            plan = bind_aggregates(parse_aggregates(f"sum({column})"), schema, "db.t")
            if ansi:
                with pytest.raises(Exception, match=r"ARITHMETIC_OVERFLOW|NUMERIC_VALUE_OUT_OF_RANGE"):
                    frame.selectExpr(f"sum({column})").collect()
                with pytest.raises(AggregateOverflowError):
                    plan.combine([plan.partial_of([batch])], ansi=True)
            else:
                expected = frame.selectExpr(f"sum({column})").collect()[0][0]
                assert plan.combine([plan.partial_of([batch])], ansi=False) == {f"sum({column})": expected}
    finally:
        spark.conf.set(ANSI_CONF, before)
