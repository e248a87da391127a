"""An upsert or delete batch's distinct keys held in Arrow: their bounds, and the filter of the key scan.

When the batch's distinct keys are few enough to hold on the driver, they are collected once, grouped with their
row counts (and the nulls of required columns), and then:
0. checked (``checked_batch_keys``): no null in a required column, no null key, and in an upsert no key twice,
   with the same errors as the checks Spark runs one by one for larger batches;
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

from spark_jobs.engine.shared.errors import RequiredColumnNullsError, UserInputError

ROWS_COLUMN = "_rows"  # the rows of the batch holding a group's key
NULLS_PREFIX = "_nulls_"  # + a required column's name: that column's nulls in the group's rows


def checked_batch_keys(
    groups: pa.Table, key: Sequence[str], *, unique: bool, required: Sequence[str], table_name: str
) -> pa.Table:
    """The batch's distinct keys from its key groups (key columns, ``ROWS_COLUMN``, ``NULLS_PREFIX`` columns).

    Raises what the row checks raise, in their order: nulls in a required column (``required``: the columns whose
    nulls were counted), a null key, and with ``unique`` a key in more than one row.
    """
    with_nulls = {}
    for name in required:
        count = pc.sum(groups.column(NULLS_PREFIX + name)).as_py() or 0
        if count:
            with_nulls[name] = count
    if with_nulls:
        raise RequiredColumnNullsError(with_nulls, table=table_name)
    null_key = pc.is_null(groups.column(key[0]))
    for name in key[1:]:
        null_key = pc.or_(null_key, pc.is_null(groups.column(name)))
    null_rows = pc.sum(groups.column(ROWS_COLUMN).filter(null_key)).as_py() or 0
    if null_rows:
        raise UserInputError(f"{null_rows} source row(s) have a null in key column(s) {list(key)} (table {table_name})")
    if unique:
        duplicated = pc.sum(pc.greater(groups.column(ROWS_COLUMN), 1)).as_py() or 0
        if duplicated:
            raise UserInputError(
                f"{duplicated} key value(s) of {list(key)} occur more than once in the upsert batch "
                f"(table {table_name})"
            )
    return groups.select(list(key))


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
