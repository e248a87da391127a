"""The executor side of a sort or z-order rewrite: keys sampled, rows routed to key ranges, each range written sorted.

A group of ``expected_output_files`` outputs is cut into ``outputs x shuffle-partitions-per-file`` key ranges; each
output (one Spark task after the shuffle, as Java's ``OrderAwareCoalesce`` of sorted partitions) writes its ranges
one after another, so its files hold consecutive sorted ranges and no two outputs' ranges overlap.

1. ``sample_task``: a read task's surviving rows, only the key columns decoded, give a uniform sample of their keys
   (``range_partitioning``); the driver draws each group's bounds from all of its tasks' samples (``wave_ranges``;
   a group written as a single range needs no sample).
2. ``route_task``: a read task's surviving rows, every column, each row with its key columns appended, are cut by
   range and emitted as Arrow IPC chunks of at most ``CHUNK_BYTES``, keyed by (output index, range index).
3. ``write_output`` (after the shuffle brought one output's chunks together, in range order): each range's chunks
   are concatenated, sorted by the carried keys (a stable sort) and streamed to the rolling writers of the output
   spec's partitions; only one range is held in memory at a time. The written files are described as
   ``rewrite_task`` describes them.
"""

from __future__ import annotations

import dataclasses
import itertools
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from spark_jobs.engine.compaction.planner import FileGroup
from spark_jobs.engine.compaction.range_partitioning import determine_bounds, partition_ids, sample_keys
from spark_jobs.engine.compaction.rewrite_tasks import RewriteContexts, RewriteTask, read_task_batches
from spark_jobs.engine.compaction.sort_keys import SortKeySpec
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.write_context import write_data_stream

CHUNK_BYTES = 8 * 1024 * 1024
RouteKey = tuple[int, int]  # (output index in the wave, range index in the wave)


@dataclass(frozen=True)
class GroupRanges:
    """One group's key ranges: the bounds between them and which outputs (in the wave) write them."""

    group_index: int
    bounds: pa.Table  # key rows; range i holds keys above bound i-1 and up to bound i
    first_output: int  # wave-wide index of the group's first output
    outputs: int  # the group's expected output files
    ranges_per_output: int  # shuffle-partitions-per-file

    @property
    def first_range(self) -> int:
        """Wave-wide index of the group's first range."""
        return self.first_output * self.ranges_per_output

    def route(self, range_in_group: int) -> RouteKey:
        """The (output, range) key of a range of this group."""
        return self.first_output + range_in_group // self.ranges_per_output, self.first_range + range_in_group


def wave_ranges(
    groups: list[FileGroup],
    samples: dict[int, list[tuple[pa.Table, float]]],
    keys: SortKeySpec,
    ranges_per_output: int,
) -> list[GroupRanges]:
    """Each group's ranges from its tasks' samples (a group with a single range needs none), outputs numbered on."""
    planned = []
    first_output = 0
    for group in groups:
        ranges = group.expected_output_files * ranges_per_output
        bounds = determine_bounds(keys, samples.get(group.global_index, []), ranges) if ranges > 1 else pa.table({})
        planned.append(
            GroupRanges(group.global_index, bounds, first_output, group.expected_output_files, ranges_per_output)
        )
        first_output += group.expected_output_files
    return planned


def needs_sampling(group: FileGroup, ranges_per_output: int) -> bool:
    """Whether the group has more than one range, so its bounds must be drawn from a sample."""
    return group.expected_output_files * ranges_per_output > 1


def key_scan_context(contexts: RewriteContexts, keys: SortKeySpec) -> RewriteContexts:
    """The contexts of a sampling read: only the top-level columns the keys come from are decoded."""
    top_level = {field.field_id for field in keys.schema.fields}
    parents = keys.schema._lazy_id_to_parent
    needed = []
    for source_id in keys.source_ids:
        top = source_id
        while top not in top_level:
            top = parents[top]
        needed.append(top)
    scan = dataclasses.replace(contexts.scan, output_field_ids=tuple(dict.fromkeys(needed)))
    return dataclasses.replace(contexts, scan=scan)


def sample_task(
    task: RewriteTask, contexts: RewriteContexts, keys: SortKeySpec, sample_size: int, metrics: ScanMetrics
) -> tuple[pa.Table, float]:
    """A uniform sample of the task's keys and the rows each sampled key stands for (step 1).

    ``contexts`` should come from ``key_scan_context``. The sample is seeded by the task, so a retry draws the same.
    """
    batches = list(read_task_batches(task, contexts.scan, metrics))
    rows = pa.Table.from_batches(batches, schema=contexts.scan.output_schema)
    seed = zlib.crc32(f"{task.group_index}-{task.task_index}".encode())
    return sample_keys(keys.key_table(rows), sample_size, seed)


def route_task(
    task: RewriteTask, contexts: RewriteContexts, keys: SortKeySpec, ranges: GroupRanges, metrics: ScanMetrics
) -> Iterator[tuple[RouteKey, bytes]]:
    """The task's rows with their keys, as IPC chunks keyed by (output, range) (step 2)."""
    pending: dict[int, list[pa.Table]] = {}
    pending_bytes: dict[int, int] = {}
    for batch in read_task_batches(task, contexts.scan, metrics):
        if batch.num_rows == 0:
            continue
        rows = pa.Table.from_batches([batch])
        key_table = keys.key_table(rows)
        with_keys = _append_keys(rows, key_table)
        ids = partition_ids(keys, key_table, ranges.bounds)
        for range_in_group, positions in _positions_by_range(ids):
            part = with_keys.take(positions)
            pending.setdefault(range_in_group, []).append(part)
            pending_bytes[range_in_group] = pending_bytes.get(range_in_group, 0) + part.nbytes
            if pending_bytes[range_in_group] >= CHUNK_BYTES:
                yield ranges.route(range_in_group), _to_ipc(pending.pop(range_in_group))
                pending_bytes.pop(range_in_group)
    for range_in_group, parts in sorted(pending.items()):
        yield ranges.route(range_in_group), _to_ipc(parts)


def write_output(
    chunks: Iterable[tuple[RouteKey, bytes]], contexts: RewriteContexts, keys: SortKeySpec, task_tag: str
) -> list[WrittenFile]:
    """Write one output's ranges, each sorted, in range order (step 3); ``chunks`` come ordered by route key."""
    output_schema = contexts.scan.output_schema
    width = len(output_schema)

    def sorted_batches() -> Iterator[pa.RecordBatch]:
        for _, range_chunks in itertools.groupby(chunks, key=lambda item: item[0]):
            tables = [_from_ipc(payload) for _, payload in range_chunks]
            rows_with_keys = pa.concat_tables(tables)
            carried = rows_with_keys.select(list(range(width, rows_with_keys.num_columns)))
            order = keys.sort_indices(carried.rename_columns(keys.key_column_names))
            rows = rows_with_keys.select(list(range(width))).take(order)
            del rows_with_keys, tables
            yield from rows.to_batches()

    return write_data_stream(sorted_batches(), contexts.write, task_tag, output_schema)


def _append_keys(rows: pa.Table, key_table: pa.Table) -> pa.Table:
    """``rows`` with the key columns after its own (found again by position, so names never clash)."""
    combined = rows
    for index, column in enumerate(key_table.columns):
        combined = combined.append_column(f"_sort_key_{index}", column)
    return combined


def _positions_by_range(ids: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(range, row positions) for each range present in ``ids``, positions in row order."""
    import numpy as np

    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(ordered)]
    for start, end in zip(starts, ends, strict=True):
        yield int(ordered[start]), order[start:end]


def _to_ipc(parts: list[pa.Table]) -> bytes:
    table = pa.concat_tables(parts)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(payload: bytes) -> pa.Table:
    return pa.ipc.open_stream(payload).read_all()
