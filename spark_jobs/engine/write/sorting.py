"""Order rows by an Iceberg sort order (its transforms, directions and null order) before they are written."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.partitioning import PartitionField
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortOrder

from spark_jobs.engine.write.partitioning import transformed_column


def sort_by_order(data: pa.Table, schema: Schema, sort_order: SortOrder | None) -> pa.Table:
    """``data`` sorted by ``sort_order``; unchanged when the order is empty (unsorted)."""
    if sort_order is None or sort_order.is_unsorted or data.num_rows < 2:
        return data
    keys = {}
    sort_keys = []
    for index, sort_field in enumerate(sort_order.fields):
        as_partition_field = PartitionField(
            source_id=sort_field.source_id, field_id=1000 + index, transform=sort_field.transform, name=f"s{index}"
        )
        name = f"_sort_{index}"
        keys[name] = transformed_column(data, schema, as_partition_field)
        direction = "ascending" if sort_field.direction == SortDirection.ASC else "descending"
        nulls = "at_start" if sort_field.null_order == NullOrder.NULLS_FIRST else "at_end"
        sort_keys.append((name, direction, nulls))
    indices = pc.sort_indices(pa.table(keys), sort_keys=sort_keys)
    return data.take(indices)
