"""Partition values from Arrow agree with pyiceberg's own (Python) transforms, for every transform kind."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from pyiceberg.types import DateType, LongType, NestedField, StringType, TimestamptzType

from spark_jobs.engine.write.partitioning import split_by_partition, transformed_column

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "ts", TimestamptzType(), required=False),
    NestedField(4, "day", DateType(), required=False),
)
UTC = datetime.UTC
DATA = pa.table(
    {
        "id": pa.array([1, 17, -5, None, 123456789], pa.int64()),
        "name": ["apple", "banana", "a", None, "cherry pie"],
        "ts": pa.array(
            [
                datetime.datetime(2024, 1, 5, 10, 30, tzinfo=UTC),
                datetime.datetime(1969, 12, 31, 23, 59, tzinfo=UTC),
                datetime.datetime(2024, 2, 29, 0, 0, tzinfo=UTC),
                None,
                datetime.datetime(2030, 7, 1, 1, 0, tzinfo=UTC),
            ],
            pa.timestamp("us", tz="UTC"),
        ),
        "day": pa.array(
            [datetime.date(2024, 1, 5), datetime.date(1969, 12, 31), None, datetime.date(2000, 2, 29), None],
            pa.date32(),
        ),
    }
)
_INTERNAL = {
    "id": lambda v: v,
    "name": lambda v: v,
    "ts": lambda v: (
        None if v is None else (v - datetime.datetime(1970, 1, 1, tzinfo=UTC)) // datetime.timedelta(microseconds=1)
    ),
    "day": lambda v: None if v is None else (v - datetime.date(1970, 1, 1)).days,
}


@pytest.mark.parametrize(
    ("source_id", "column", "transform"),
    [
        (1, "id", IdentityTransform()),
        (1, "id", BucketTransform(16)),
        (1, "id", TruncateTransform(10)),
        (2, "name", BucketTransform(8)),
        (2, "name", TruncateTransform(3)),
        (3, "ts", YearTransform()),
        (3, "ts", MonthTransform()),
        (3, "ts", DayTransform()),
        (3, "ts", HourTransform()),
        (3, "ts", IdentityTransform()),
        (4, "day", DayTransform()),
        (4, "day", MonthTransform()),
        (4, "day", IdentityTransform()),
    ],
)
def test_partition_values_match_pyicebergs_transform(source_id, column, transform) -> None:
    field = PartitionField(source_id=source_id, field_id=1000, transform=transform, name="p")
    computed = transformed_column(DATA, SCHEMA, field).to_pylist()
    python_transform = transform.transform(SCHEMA.find_field(source_id).field_type)
    expected = [python_transform(_INTERNAL[column](v)) for v in DATA.column(column).to_pylist()]
    assert computed == expected


def test_split_by_partition_covers_every_row_once_with_its_values() -> None:
    spec = PartitionSpec(
        PartitionField(source_id=3, field_id=1000, transform=DayTransform(), name="ts_day"),
        PartitionField(source_id=1, field_id=1001, transform=BucketTransform(2), name="id_bucket"),
    )
    parts = list(split_by_partition(DATA, SCHEMA, spec))
    assert sum(rows.num_rows for _, rows in parts) == DATA.num_rows
    day = DayTransform().transform(TimestamptzType())
    bucket = BucketTransform(2).transform(LongType())
    for values, rows in parts:
        for row in rows.to_pylist():
            assert values == (day(_INTERNAL["ts"](row["ts"])), bucket(row["id"]))
    assert len({values for values, _ in parts}) == len(parts)
