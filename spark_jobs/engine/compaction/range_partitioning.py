"""Range partitioning of a file group's rows by their sort keys, as Spark's ``RangePartitioner`` does it.

A sort or z-order rewrite writes each of a group's range partitions as its own sorted output, so the outputs cover
ranges that do not overlap. The ranges come from a sample of the keys:

1. ``sample_size_per_task``: Spark's sizes: about 20 keys per partition in all (at most a million), drawn over the
   read tasks three times over-sampled, ``ceil(3 * min(20 * partitions, 1e6) / tasks)`` per task.
2. ``sample_keys``: a task keeps that many of its rows' keys, drawn uniformly without replacement (seeded, so a
   retried task draws the same rows), each standing for ``rows / kept`` rows.
3. ``determine_bounds`` (Spark's ``determineBounds``): the sampled keys in order; walking them, a bound is taken each
   time the weight walked reaches the next multiple of ``total weight / partitions``, skipping a key equal to the
   previous bound. At most ``partitions - 1`` bounds; fewer when the keys have fewer distinct values.
4. ``partition_ids``: a row goes to the first partition whose bound is not below its key (a key equal to a bound goes
   to that bound's partition; above every bound: the last partition). Equal keys always share a partition.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from spark_jobs.engine.compaction.sort_keys import SortKeySpec

MAX_SAMPLE_SIZE = 1_000_000
SAMPLE_PER_PARTITION = 20
OVER_SAMPLING = 3.0


def sample_size_per_task(partitions: int, tasks: int) -> int:
    """Keys each read task samples (module doc, step 1)."""
    total = min(SAMPLE_PER_PARTITION * partitions, MAX_SAMPLE_SIZE)
    return math.ceil(OVER_SAMPLING * total / max(tasks, 1))


def sample_keys(keys: pa.Table, size: int, seed: int) -> tuple[pa.Table, float]:
    """Up to ``size`` of ``keys``' rows drawn uniformly, and the number of rows each one stands for."""
    if keys.num_rows == 0:
        return keys, 0.0
    if keys.num_rows <= size:
        return keys, 1.0
    chosen = np.sort(np.random.default_rng(seed).choice(keys.num_rows, size=size, replace=False))
    return keys.take(chosen), keys.num_rows / size


def determine_bounds(spec: SortKeySpec, samples: list[tuple[pa.Table, float]], partitions: int) -> pa.Table:
    """The range bounds of ``partitions`` partitions from weighted samples (module doc, step 3)."""
    usable = [(keys, weight) for keys, weight in samples if keys.num_rows]
    if partitions <= 1 or not usable:
        return _empty_like(usable[0][0] if usable else None)
    candidates = pa.concat_tables([keys for keys, _ in usable], promote_options="permissive")
    weights = np.concatenate([np.full(keys.num_rows, weight) for keys, weight in usable])
    order = spec.sort_indices(candidates)
    ordered = candidates.take(order)
    ordered_weights = weights[order]
    rows = ordered.to_pylist()  # candidates are few (about 60 per partition): compared as Python tuples
    step = float(ordered_weights.sum()) / partitions
    cumulative, target = 0.0, step
    chosen: list[int] = []
    previous: tuple[Any, ...] | None = None
    for position, weight in enumerate(ordered_weights):
        if len(chosen) >= partitions - 1:
            break
        cumulative += float(weight)
        if cumulative >= target:
            key = tuple(rows[position].values())
            if previous is None or key != previous:
                chosen.append(position)
                target += step
                previous = key
    return ordered.take(chosen)


def partition_ids(spec: SortKeySpec, keys: pa.Table, bounds: pa.Table) -> np.ndarray:
    """The range partition of each row of ``keys`` (module doc, step 4), as int32."""
    if bounds.num_rows == 0:
        return np.zeros(keys.num_rows, dtype=np.int32)
    # Sorting rows and bounds together (stable, bounds last) puts a row equal to a bound before it; a row's
    # partition is the number of bounds sorted before it.
    combined = pa.concat_tables([keys, bounds.cast(keys.schema)])
    order = spec.sort_indices(combined)
    is_bound = order >= keys.num_rows
    bounds_before = np.cumsum(is_bound) - is_bound
    ids = np.empty(keys.num_rows, dtype=np.int32)
    ids[order[~is_bound]] = bounds_before[~is_bound]
    return ids


def _empty_like(keys: pa.Table | None) -> pa.Table:
    return keys.slice(0, 0) if keys is not None else pa.table({})
