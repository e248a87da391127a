"""Partition values of Arrow rows per an Iceberg partition spec, and the split of a table by partition.

1. Per partition field, the source column as Iceberg's internal values (dates as days, timestamps as
   microseconds), then the transform: pyiceberg's ``Transform.pyarrow_transform`` when its native helper
   (pyiceberg-core) is installed, else the Python transform applied once per distinct source value.
2. ``split_by_partition`` groups rows by their partition tuple and returns one Arrow slice per partition with the
   tuple of internal partition values (what a manifest entry's partition Record holds).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.exceptions import NotInstalledError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform, Transform
from pyiceberg.types import (
    DateType,
    IcebergType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

from spark_jobs.engine.shared.arrow_types import schema_to_arrow

_PARTITION_COLUMN = "_partition_{}"
log = logging.getLogger(__name__)
_FALLBACKS_LOGGED: set[str] = set()


def transformed_column(data: pa.Table, schema: Schema, partition_field: PartitionField) -> pa.Array:
    """The partition field's values for every row of ``data`` (Iceberg internal representation)."""
    source = schema.find_field(partition_field.source_id)
    column = data.column(schema.find_column_name(partition_field.source_id)).combine_chunks()
    return transform_values(column, source.field_type, partition_field.transform)


def transform_values(column: pa.Array, source_type: IcebergType, transform: Transform[Any, Any]) -> pa.Array:
    """``transform`` applied to every value of ``column`` (of Iceberg type ``source_type``), as internal values."""
    internal = _internal_values(column, source_type)
    if isinstance(transform, IdentityTransform):
        return internal
    try:
        return _as_internal(transform.pyarrow_transform(source_type)(column))
    except (ImportError, NotInstalledError, NotImplementedError, TypeError, ValueError, pa.ArrowException) as error:
        _log_fallback_once(str(transform), error)
    apply = transform.transform(source_type)
    distinct = pc.unique(internal)
    results = [apply(value) for value in distinct.to_pylist()]
    result_type = transform.result_type(source_type)

    arrow_type = schema_to_arrow(result_type)
    return _as_internal(pc.take(pa.array(results, type=arrow_type), pc.index_in(internal, value_set=distinct)))


def split_by_partition(
    data: pa.Table, schema: Schema, spec: PartitionSpec
) -> Iterator[tuple[tuple[Any, ...], pa.Table]]:
    """One (partition values, rows) pair per distinct partition of ``data``; unpartitioned: ((), data)."""
    if spec.is_unpartitioned():
        yield (), data
        return
    names = [_PARTITION_COLUMN.format(index) for index in range(len(spec.fields))]
    keyed = data
    for name, partition_field in zip(names, spec.fields, strict=True):
        keyed = keyed.append_column(name, transformed_column(data, schema, partition_field))
    for partition in keyed.select(names).group_by(names, use_threads=False).aggregate([]).to_pylist():
        mask = None
        for name in names:
            value = partition[name]
            condition = pc.is_null(keyed.column(name)) if value is None else pc.equal(keyed.column(name), value)
            mask = condition if mask is None else pc.and_(mask, condition)
        yield tuple(partition[name] for name in names), data.filter(mask)


def _internal_values(column: pa.Array, field_type: IcebergType) -> pa.Array:
    """Dates as int32 days, times and timestamps as int64 (micro- or nanoseconds), other types unchanged."""
    if isinstance(field_type, DateType):
        return column.cast(pa.int32())
    if isinstance(field_type, (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType, TimeType)):
        return column.cast(pa.int64())
    return column


def _as_internal(values: pa.Array) -> pa.Array:
    """Transform results as partition Records hold them: dates as int32 days, timestamps as int64."""
    if pa.types.is_date(values.type):
        return values.cast(pa.int32())
    if pa.types.is_timestamp(values.type) or pa.types.is_time(values.type):
        return values.cast(pa.int64())
    return values


def _log_fallback_once(transform: str, error: BaseException) -> None:
    """Say once per transform and process why the per-value Python transform is used instead of Arrow's."""
    if transform not in _FALLBACKS_LOGGED:
        _FALLBACKS_LOGGED.add(transform)
        log.info("partition transform %s computed per distinct value (no Arrow kernel: %s)", transform, error)
