"""One wave of a sort or z-order rewrite on real Spark: sampled ranges shuffled into sorted, disjoint outputs, a
small group sorted by its single task in the same job, every row kept and counted once."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.rewrite_tasks import plan_rewrite_tasks, rewrite_contexts
from spark_jobs.engine.compaction.strategy import resolve_strategy
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.spark.shuffle_rewrite import run_shuffle_wave
from tests.support.rewrite_tables import append, live_data_files

pytestmark = [pytest.mark.spark, pytest.mark.spark35]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "k", LongType(), required=False),
    NestedField(3, "part", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="part"))
BIG_FILES, ROWS_PER_FILE, SMALL_ROWS = 4, 300, 40


@pytest.fixture
def table(sql_catalog) -> Table:
    """Partition 'big': four files of 300 rows with random k (some null); partition 'small': one file of 40 rows."""
    sql_catalog.create_namespace("ns")
    created = sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    rng = np.random.default_rng(11)
    for index in range(BIG_FILES):
        ids = range(index * ROWS_PER_FILE, (index + 1) * ROWS_PER_FILE)
        k = [None if i % 29 == 0 else int(v) for i, v in zip(ids, rng.integers(-500, 500, ROWS_PER_FILE), strict=True)]
        append(
            created,
            pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array(k, pa.int64()), "part": ["big"] * ROWS_PER_FILE}),
            f"b{index}",
        )
    small_ids = range(10_000, 10_000 + SMALL_ROWS)
    small = {"id": pa.array(small_ids, pa.int64()), "k": pa.array([(i * 7) % 13 for i in small_ids], pa.int64())}
    append(created, pa.table({**small, "part": pa.array(["small"] * SMALL_ROWS)}), "s0")
    return created


def _run(table: Table, strategy_name: str, sort_order: str | None):
    """Plan a rewrite of every file into ~3 outputs for 'big', then run its one wave on Spark."""
    big_size = sum(f.file_size_in_bytes for f in live_data_files(table) if f.partition[0] == "big")
    options = RewriteOptions.resolve({}, target_file_size_bytes=big_size // 3, rewrite_all=True)
    strategy = resolve_strategy(table, strategy_name, sort_order)
    plan = plan_rewrite(table, table.current_snapshot(), options, strategy=strategy)
    tasks = plan_rewrite_tasks(table, plan.groups)
    contexts = rewrite_contexts(table, plan, tasks)
    return plan, tasks, contexts


def _rows(written: dict) -> list[dict]:
    return pq.read_table(written["file_path"].removeprefix("file://"), columns=["id", "k", "part"]).to_pylist()


def _k_then_id(row: dict) -> tuple:
    return (row["k"] is None, row["k"] or 0, row["id"])  # k ascending, nulls last, then id


def test_a_sort_wave_writes_sorted_outputs_over_disjoint_ranges_and_sorts_a_small_group_locally(spark, table) -> None:
    plan, tasks, contexts = _run(table, "sort", "k asc nulls last, id")
    by_partition = {group.partition[0] if group.partition else None: group for group in plan.groups}
    big, small = by_partition["big"], by_partition["small"]
    assert big.expected_output_files >= 2 and small.expected_output_files == 1
    assert plan.strategy.shuffle_partitions_per_file == 1  # one range per output: the small group is not shuffled
    assert sum(1 for task in tasks if task.group_index == small.global_index) == 1
    counters = ScanMetrics()

    results = run_shuffle_wave(spark, plan.strategy, list(plan.groups), tasks, contexts, counters=counters)

    outputs: dict[int, list[list[dict]]] = {}
    for group_index, written in results:
        outputs.setdefault(group_index, []).append(_rows(written))
    assert set(outputs) == {big.global_index, small.global_index}
    (small_rows,) = outputs[small.global_index]
    assert small_rows == sorted(small_rows, key=_k_then_id) and len(small_rows) == SMALL_ROWS
    big_files = sorted(outputs[big.global_index], key=lambda rows: _k_then_id(rows[0]))
    assert len(big_files) >= 2
    for rows in big_files:
        assert rows == sorted(rows, key=_k_then_id) and {row["part"] for row in rows} == {"big"}
    for before, after in itertools.pairwise(big_files):
        assert _k_then_id(before[-1]) < _k_then_id(after[0])  # disjoint key ranges
    all_ids = sorted(row["id"] for rows in big_files for row in rows)
    assert all_ids == list(range(BIG_FILES * ROWS_PER_FILE))
    assert counters.rows_read == BIG_FILES * ROWS_PER_FILE + SMALL_ROWS  # the sampling read is not counted


def test_a_zorder_wave_keeps_every_row_in_its_partition(spark, table) -> None:
    plan, tasks, contexts = _run(table, "sort", "zorder(k, id)")
    results = run_shuffle_wave(spark, plan.strategy, list(plan.groups), tasks, contexts, counters=None)
    by_group: dict[int, list[dict]] = {}
    for group_index, written in results:
        by_group.setdefault(group_index, []).extend(_rows(written))
    ids = sorted(row["id"] for rows in by_group.values() for row in rows)
    assert ids == list(range(BIG_FILES * ROWS_PER_FILE)) + list(range(10_000, 10_000 + SMALL_ROWS))
    for group in plan.groups:
        assert {row["part"] for row in by_group[group.global_index]} == {group.partition[0]}


def test_a_strategy_without_sort_keys_is_refused(spark, table) -> None:
    plan, tasks, contexts = _run(table, "binpack", None)
    with pytest.raises(ValueError, match="has no sort keys"):
        run_shuffle_wave(spark, plan.strategy, list(plan.groups), tasks, contexts, counters=None)
