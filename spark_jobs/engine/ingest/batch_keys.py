"""An upsert or delete batch's distinct keys held in Arrow: their bounds, and the filter of the key scan.

When the batch's distinct keys are few enough to hold on the driver, they are collected once and then:
1. bounded: the smallest and largest value of each integer and string key column, so planning skips data files
   that cannot hold them (``key_bounds``);
2. shipped to the tasks that read the table's key columns, which keep only the rows whose key is in the batch
   (``rows_with_keys``): the positions to delete leave the task, not every row of every candidate file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


def key_bounds(keys: pa.Table, columns: Sequence[str]) -> list[tuple[Any, Any]] | None:
    """(min, max) of each of ``columns`` over the non-null ``keys``; None when there is no key."""
    if keys.num_rows == 0:
        return None
    bounds = []
    for name in columns:
        low_high = pc.min_max(keys.column(name))
        if low_high["min"].as_py() is None:
            return None
        bounds.append((low_high["min"].as_py(), low_high["max"].as_py()))
    return bounds


def rows_with_keys(rows: pa.RecordBatch, keys: pa.Table) -> pa.Table:
    """The rows of ``rows`` whose key (the columns of ``keys``, same types) is one of ``keys``' rows."""
    names = keys.column_names
    if len(names) == 1:
        value_set = keys.column(0).combine_chunks()
        return pa.Table.from_batches([rows.filter(pc.is_in(rows.column(names[0]), value_set=value_set))])
    table = pa.Table.from_batches([rows])
    matched = table.join(keys, keys=names, join_type="left semi")
    return matched.select(table.column_names).cast(table.schema)
