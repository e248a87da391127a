"""The driver-or-Spark decision is one value, made once, as early as the facts allow."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from spark_jobs.engine.jobs.placement import (
    Placement,
    export_may_run_in_driver,
    planned_bytes,
    spark_needed_before_planning,
)
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, DeletionVector, ScanTask
from spark_jobs.spark.driver_read import InProcessExecutor


class _SparkStarts:
    """A Spark starter that counts its starts and hands back a stand-in executor named ``spark``."""

    def __init__(self) -> None:
        self.starts = 0
        self.waits = 0
        self.executor = SimpleNamespace(ran_in="spark")

    def __call__(self):  # type: ignore[no-untyped-def]
        self.starts += 1

        def wait():  # type: ignore[no-untyped-def]
            self.waits += 1
            return self.executor

        return wait


def _task(length: int) -> ScanTask:
    return ScanTask(slices=(DataFileSlice(path=f"f{length}", file_size_in_bytes=length, record_count=1, spec_id=0),))


def test_ruling_the_driver_out_starts_spark_once_and_the_route_never_changes() -> None:
    starts = _SparkStarts()
    placement = Placement(100, InProcessExecutor, starts)
    placement.rule_out_driver()
    placement.rule_out_driver()
    assert placement.route == "spark" and starts.starts == 1
    assert placement.decide(None) is starts.executor  # decided already: a later fact changes nothing
    assert placement.decide_for_scan([_task(1)]) is starts.executor
    assert starts.waits == 1 and placement.ran_in == "spark"


def test_the_plan_decides_by_its_bytes_when_nothing_decided_before() -> None:
    small = Placement(100, InProcessExecutor, _SparkStarts())
    assert small.decide_for_scan([_task(60), _task(40)]).ran_in == "driver"
    large_starts = _SparkStarts()
    large = Placement(100, InProcessExecutor, large_starts)
    assert large.decide_for_scan([_task(60), _task(41)]) is large_starts.executor
    off = Placement(0, InProcessExecutor, _SparkStarts())
    assert off.decide_for_scan([_task(1)]).ran_in == "spark"


def test_an_undecided_placement_ran_in_the_driver_and_has_no_executor() -> None:
    placement = Placement(100, InProcessExecutor, _SparkStarts())
    assert placement.ran_in == "driver" and not placement.decided
    with pytest.raises(RuntimeError, match="not decided"):
        placement.executor()


def test_a_fixed_placement_is_decided_from_the_start() -> None:
    executor = InProcessExecutor(ansi=True)
    placement = Placement.fixed(executor)
    assert placement.decided and placement.executor() is executor
    assert placement.decide_for_scan([_task(10**12)]) is executor


def test_planned_bytes_count_each_delete_file_and_vector_once() -> None:
    vector = DeletionVector("dv.puffin", 4, 50, cardinality=1, referenced_data_file="a", data_sequence_number=2)
    shared = DataFileSlice(path="a", file_size_in_bytes=1000, record_count=1, spec_id=0, deletion_vector=vector)
    other = DataFileSlice(
        path="b", file_size_in_bytes=500, record_count=1, spec_id=0, length=200, deletion_vector=vector
    )
    assert planned_bytes([ScanTask(slices=(shared,)), ScanTask(slices=(other,))]) == 1000 + 200 + 50


def test_the_snapshot_rules_the_driver_out_only_without_a_filter_and_over_the_limit() -> None:
    snapshot = SimpleNamespace(summary={"total-files-size": "500"})
    assert spark_needed_before_planning(snapshot, None, 100)
    assert not spark_needed_before_planning(snapshot, "id > 1", 100)
    assert not spark_needed_before_planning(snapshot, None, 1000)
    assert spark_needed_before_planning(None, None, 0)
    assert not spark_needed_before_planning(SimpleNamespace(summary=None), None, 100)


@pytest.mark.parametrize(
    ("output", "output_format", "max_bytes", "open_"),
    [
        ("/tmp/out", "parquet", 1, True),
        ("file:///tmp/out", "parquet", 1, True),
        ("relative/out", "parquet", 1, True),
        ("/tmp/out", "csv", 1, False),
        ("s3://bucket/out", "parquet", 1, False),
        ("/tmp/out", "parquet", 0, False),
    ],
)
def test_the_arguments_alone_leave_the_driver_open_only_for_parquet_to_a_local_path(
    output, output_format, max_bytes, open_
) -> None:
    assert export_may_run_in_driver(output, output_format, max_bytes) is open_
