"""Range bounds and partition ids as Spark's RangePartitioner draws them, over the sort keys of a rewrite."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField

from spark_jobs.engine.compaction.range_partitioning import (
    determine_bounds,
    partition_ids,
    sample_keys,
    sample_size_per_task,
)
from spark_jobs.engine.compaction.sort_keys import SortKeySpec

SCHEMA = Schema(NestedField(1, "k", LongType(), required=False))


def _spec(descending: bool = False) -> SortKeySpec:
    direction = SortDirection.DESC if descending else SortDirection.ASC
    field = SortField(source_id=1, transform=IdentityTransform(), direction=direction, null_order=NullOrder.NULLS_LAST)
    return SortKeySpec.for_sort_order(SCHEMA, SortOrder(field))


def _keys(spec: SortKeySpec, values: list) -> pa.Table:
    return spec.key_table(pa.table({"k": pa.array(values, pa.int64())}))


def test_sample_sizes_are_sparks():
    assert sample_size_per_task(partitions=4, tasks=2) == 120  # ceil(3 * 80 / 2)
    assert sample_size_per_task(partitions=100_000, tasks=3) == 1_000_000  # 1e6 in all, three times over
    keys = _keys(_spec(), list(range(1000)))
    sample, weight = sample_keys(keys, 100, seed=1)
    assert sample.num_rows == 100 and weight == 10.0
    assert sample_keys(keys, 100, seed=1)[0].equals(sample)  # a retried task draws the same rows


def test_bounds_split_the_weight_evenly_and_skip_duplicates():
    spec = _spec()
    keys = _keys(spec, list(range(100)))
    bounds = determine_bounds(spec, [(keys, 1.0)], 4)
    assert [row["_key0"] for row in bounds.to_pylist()] == [24, 49, 74]
    skewed = _keys(spec, [7] * 90 + list(range(10)))
    # 7 reaches the first target; the other 7s are skipped as duplicates, then 8 and 9 catch up the targets passed
    assert [row["_key0"] for row in determine_bounds(spec, [(skewed, 1.0)], 4).to_pylist()] == [7, 8, 9]


def test_equal_keys_share_a_partition_and_every_partition_holds_a_contiguous_range():
    spec = _spec(descending=True)
    rng = np.random.default_rng(3)
    values = [None if v % 17 == 0 else int(v) for v in rng.integers(0, 50, 2000)]
    keys = _keys(spec, values)
    bounds = determine_bounds(spec, [sample_keys(keys, 200, seed=2)], 5)
    ids = partition_ids(spec, keys, bounds)
    assert len(set(ids)) == bounds.num_rows + 1 >= 4
    by_partition: dict[int, set] = {}
    for value, partition in zip(values, ids, strict=True):
        by_partition.setdefault(int(partition), set()).add(value)
    for partition, members in by_partition.items():  # descending, nulls last: partitions go down the values
        for other, other_members in by_partition.items():
            if other > partition:
                assert not members & other_members
                lowest = min((v for v in members if v is not None), default=None)
                assert lowest is None or all(v is None or v <= lowest for v in other_members)
    assert by_partition[max(by_partition)] >= {None}  # nulls last: in the last partition


def test_a_key_equal_to_a_bound_goes_to_that_bounds_partition():
    spec = _spec()
    bounds = _keys(spec, [10, 20])
    assert partition_ids(spec, _keys(spec, [5, 10, 11, 20, 21, None]), bounds).tolist() == [0, 0, 1, 1, 2, 2]
