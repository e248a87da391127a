"""A planned read as a DataFrame: a Spark task per scan task; executor counters through an accumulator if asked."""

from __future__ import annotations

import pytest

from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.spark import scan
from spark_jobs.spark.scan import (
    FILTER_PUSHDOWN_CONF,
    PYTHON_DATA_SOURCES,
    ScanMetricsParam,
    counted_dataframe_from_session,
    dataframe_from_session,
    python_filter_pushdown_enabled,
    read_parallelism,
)

pytestmark = pytest.mark.spark35


@pytest.mark.parametrize("closed_over_bytes", [scan.CLOSED_OVER_PAYLOAD_BYTES, 0], ids=["closed-over", "in-rows"])
def test_the_dataframe_reads_the_sessions_rows_and_sums_the_executors_counters(
    spark, conformance_catalog, monkeypatch, closed_over_bytes
) -> None:
    # Small plans ride in the task function, large ones in the task rows: both routes read the same rows.
    monkeypatch.setattr(scan, "CLOSED_OVER_PAYLOAD_BYTES", closed_over_bytes)
    session = open_read_session(conformance_catalog, "corpus.mor_v2_pos", columns=["id"], row_filter="id < 500")
    expected = sorted(session.to_arrow().column("id").to_pylist())
    frame, accumulator = counted_dataframe_from_session(spark, session)
    assert frame.rdd.getNumPartitions() == len(session.tasks) > 1
    assert sorted(row.id for row in frame.collect()) == expected
    counters = accumulator.value
    assert counters["rows_out"] == len(expected) and counters["rows_deleted_by_position_deletes"] > 0
    assert counters["tasks"] == 0  # planning counters stay with the driver's session


def test_a_dataframe_without_counters_reads_the_same_rows_and_creates_no_accumulator(
    spark, conformance_catalog
) -> None:
    # Each accumulator update is a round trip from the JVM to this process before the job ends: a DataFrame whose
    # counters nobody reads (``read.load``, ``count``, an overwrite's kept rows) must not register one.
    session = open_read_session(conformance_catalog, "corpus.mor_v2_pos", columns=["id"], row_filter="id < 500")
    expected = sorted(session.to_arrow().column("id").to_pylist())
    accumulators_before = spark.sparkContext._next_accum_id
    frame = dataframe_from_session(spark, session)
    assert sorted(row.id for row in frame.collect()) == expected
    assert spark.sparkContext._next_accum_id == accumulators_before


def test_an_empty_plan_is_an_empty_dataframe_with_the_output_columns(spark, conformance_catalog) -> None:
    session = open_read_session(conformance_catalog, "corpus.v1_cow", columns=["ts", "id"], row_filter="id < 0")
    session.plan.tasks.clear()
    frame = dataframe_from_session(spark, session)
    assert frame.columns == ["ts", "id"] and frame.count() == 0


def test_parallelism_and_the_pushdown_flag_come_from_the_session(spark) -> None:
    assert read_parallelism(spark) == spark.sparkContext.defaultParallelism == 2
    assert python_filter_pushdown_enabled(spark) is False
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    try:
        assert python_filter_pushdown_enabled(spark) is PYTHON_DATA_SOURCES  # Spark 4 has them, Spark 3.5 not
    finally:
        spark.conf.unset(FILTER_PUSHDOWN_CONF)


def test_counters_add_key_by_key() -> None:
    param = ScanMetricsParam()
    zero = param.zero(ScanMetrics(rows_out=5).as_dict())
    assert set(zero) == set(ScanMetrics().as_dict()) and not any(zero.values())
    assert param.addInPlace({"rows_out": 1, "bytes_read": 2}, {"rows_out": 3}) == {"rows_out": 4, "bytes_read": 2}


def test_a_read_task_imports_none_of_the_driver_s_planning(conformance_catalog) -> None:
    # What an executor's Python worker imports to run a read task: this module (the mapInArrow function's home), then
    # the task and context it unpickles. The driver's planner and read session stay out (each costs every worker).
    import pickle
    import subprocess
    import sys

    session = open_read_session(conformance_catalog, "corpus.v2_eq_deletes", columns=["id"])
    work = pickle.dumps((session.tasks[0], session.context))
    driver_only = ["spark_jobs.engine.planning.scan_planner", "spark_jobs.engine.read.session"]
    script = (
        "import pickle, sys; import spark_jobs.spark.scan; pickle.loads(sys.stdin.buffer.read()); "
        f"print([name for name in {driver_only!r} if name in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", script], input=work, capture_output=True, check=True, timeout=120)
    assert done.stdout.decode().strip() == "[]", done.stdout.decode()
