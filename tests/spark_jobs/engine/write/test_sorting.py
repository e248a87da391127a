"""Rows ordered by a sort order: each field's transform, direction and null order."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform, TruncateTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.write.sorting import sort_by_order

SCHEMA = Schema(NestedField(1, "k", StringType(), required=False), NestedField(2, "v", LongType(), required=False))
ROWS = pa.table({"k": ["bx", None, "ay", "bz", "aa"], "v": pa.array([1, 2, None, 4, 5], pa.int64())})


def test_unsorted_tables_keep_their_row_order() -> None:
    assert sort_by_order(ROWS, SCHEMA, None) is ROWS
    assert sort_by_order(ROWS, SCHEMA, UNSORTED_SORT_ORDER) is ROWS


def test_directions_null_orders_and_transforms_apply_field_by_field() -> None:
    order = SortOrder(
        SortField(
            source_id=1, transform=TruncateTransform(1), direction=SortDirection.ASC, null_order=NullOrder.NULLS_FIRST
        ),
        SortField(
            source_id=2, transform=IdentityTransform(), direction=SortDirection.DESC, null_order=NullOrder.NULLS_LAST
        ),
    )
    ordered = sort_by_order(ROWS, SCHEMA, order)
    # truncate(1) of k: null first, then "a" (v desc, null last), then "b" (v desc)
    assert ordered.column("k").to_pylist() == [None, "aa", "ay", "bz", "bx"]
    assert ordered.column("v").to_pylist() == [2, 5, None, 4, 1]
