"""Run one wave of a sort or z-order rewrite on Spark: keys sampled, rows shuffled by key range, ranges written sorted.

The engine steps are ``compaction.shuffle_tasks``; here they become Spark work, one wave of file groups at a time:

1. Sampling job (only when some group has more than one range): one Spark task per read task of those groups
   reads the key columns and returns a sample of its keys; the driver draws each group's range bounds.
2. Shuffle: one Spark task per read task routes its rows, as Arrow IPC chunks keyed by (output, range), through
   ``repartitionAndSortWithinPartitions`` with the output index as the partition, so Spark partition ``i`` receives
   the chunks of output ``i`` sorted by range (PySpark's external sorter spills to disk past
   ``spark.python.worker.memory``).
3. Each Spark partition writes its output's ranges in order, each sorted by the keys the chunks carry
   (``write_output``), and returns the files it wrote. Executor read counters of step 2 are summed on the driver
   (the sampling read of step 1 is not counted, so ``rows_read`` counts each row once).
4. A group read by a single task into a single range (a small group: one output file) skips steps 1-3: that task
   sorts its rows and writes them itself, in the same Spark job as the shuffled groups.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from spark_jobs.engine.compaction.planner import FileGroup
from spark_jobs.engine.compaction.range_partitioning import sample_size_per_task
from spark_jobs.engine.compaction.rewrite_tasks import RewriteContexts, RewriteTask
from spark_jobs.engine.compaction.shuffle_tasks import (
    GroupRanges,
    key_scan_context,
    needs_sampling,
    route_task,
    sample_task,
    wave_ranges,
    write_output,
)
from spark_jobs.engine.compaction.strategy import RewriteStrategy
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.spark.executor import task_attempt_tag
from spark_jobs.spark.scan import ScanMetricsParam


def run_shuffle_wave(
    spark: SparkSession,
    strategy: RewriteStrategy,
    groups: list[FileGroup],
    tasks: list[RewriteTask],
    contexts: RewriteContexts,
    *,
    counters: ScanMetrics | None,
) -> list[tuple[int, WrittenFile]]:
    """Rewrite the wave's groups sorted by the strategy's keys (module doc); (group index, written file) pairs."""
    keys = strategy.keys
    if keys is None:
        raise ValueError(f"strategy {strategy.name} has no sort keys")
    per_file = strategy.shuffle_partitions_per_file
    tasks_per_group = Counter(task.group_index for task in tasks)
    # A group read by one task into one range needs no shuffle: that task sorts and writes it.
    local = {
        group.global_index
        for group in groups
        if group.expected_output_files * per_file == 1 and tasks_per_group[group.global_index] == 1
    }
    shuffled_groups = [group for group in groups if group.global_index not in local]
    shuffled_tasks = [task for task in tasks if task.group_index not in local]
    samples = _sample(spark, strategy, shuffled_groups, shuffled_tasks, contexts)
    ranges = wave_ranges(shuffled_groups, samples, keys, per_file)
    ranges_by_group = {planned.group_index: planned for planned in ranges}
    group_of_output = [planned.group_index for planned in ranges for _ in range(planned.outputs)]
    outputs = len(group_of_output)
    context = spark.sparkContext
    accumulator = context.accumulator(ScanMetrics().as_dict(), ScanMetricsParam())

    def route(payload: bytes) -> Iterator[tuple[tuple[int, int], bytes]]:
        task, task_ranges = pickle.loads(payload)
        metrics = ScanMetrics()
        yield from route_task(task, contexts, keys, task_ranges, metrics)
        accumulator.add(metrics.as_dict())

    def write(output: int, chunks: Iterable[tuple[tuple[int, int], bytes]]) -> Iterator[tuple[int, bytes]]:
        group_index = group_of_output[output]
        written = write_output(chunks, contexts, keys, f"g{group_index}-o{output}-{task_attempt_tag()}")
        for item in written:
            yield group_index, pickle.dumps(item)

    def sort_locally(payload: bytes) -> Iterator[tuple[int, bytes]]:
        task = pickle.loads(payload)
        metrics = ScanMetrics()
        single = GroupRanges(task.group_index, pa.table({}), 0, 1, 1)
        chunks = list(route_task(task, contexts, keys, single, metrics))
        accumulator.add(metrics.as_dict())
        for item in write_output(chunks, contexts, keys, f"g{task.group_index}-o0-{task_attempt_tag()}"):
            yield task.group_index, pickle.dumps(item)

    jobs = []
    local_payloads = [_pickled(task) for task in tasks if task.group_index in local]
    if local_payloads:
        jobs.append(context.parallelize(local_payloads, numSlices=len(local_payloads)).flatMap(sort_locally))
    if shuffled_tasks:
        payloads = [_pickled((task, ranges_by_group[task.group_index])) for task in shuffled_tasks]
        jobs.append(
            context.parallelize(payloads, numSlices=len(payloads))
            .flatMap(route)
            .repartitionAndSortWithinPartitions(outputs, partitionFunc=lambda key: key[0], keyfunc=lambda key: key)
            .mapPartitionsWithIndex(write)
        )
    rows = (jobs[0] if len(jobs) == 1 else context.union(jobs)).collect() if jobs else []
    if counters is not None:
        for key, value in accumulator.value.items():
            setattr(counters, key, getattr(counters, key) + value)
    return [(group_index, pickle.loads(item)) for group_index, item in rows]


def _pickled(value: object) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _sample(
    spark: SparkSession,
    strategy: RewriteStrategy,
    groups: list[FileGroup],
    tasks: list[RewriteTask],
    contexts: RewriteContexts,
) -> dict[int, list[Any]]:
    """Each sampled group's key samples (module doc, step 1); empty when every group is a single range."""
    keys = strategy.keys
    sampled = {
        group.global_index: group for group in groups if needs_sampling(group, strategy.shuffle_partitions_per_file)
    }
    sample_tasks = [task for task in tasks if task.group_index in sampled]
    if not sample_tasks or keys is None:
        return {}
    tasks_per_group = {index: sum(1 for task in sample_tasks if task.group_index == index) for index in sampled}
    sizes = {
        index: sample_size_per_task(
            group.expected_output_files * strategy.shuffle_partitions_per_file, tasks_per_group[index]
        )
        for index, group in sampled.items()
    }
    sampling = key_scan_context(contexts, keys)
    payloads = [
        pickle.dumps((task, sizes[task.group_index]), protocol=pickle.HIGHEST_PROTOCOL) for task in sample_tasks
    ]

    def sample(payload: bytes) -> tuple[int, bytes]:
        task, size = pickle.loads(payload)
        drawn = sample_task(task, sampling, keys, size, ScanMetrics())
        return task.group_index, pickle.dumps(drawn)

    drawn = spark.sparkContext.parallelize(payloads, numSlices=len(payloads)).map(sample).collect()
    samples: dict[int, list[Any]] = {}
    for group_index, payload in drawn:
        samples.setdefault(group_index, []).append(pickle.loads(payload))
    return samples
