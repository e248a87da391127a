"""Metadata columns by name: which a table offers, Java's unified ``_partition`` type, and each file's values."""

from __future__ import annotations

from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
from pyiceberg.types import DateType, IntegerType, LongType, NestedField, StringType, TimestampType

from spark_jobs.engine.planning.metadata_columns import (
    FILE_PATH,
    PARTITION_ID,
    SPEC_ID,
    metadata_column_names,
    metadata_field,
    partition_type,
    with_file_constants,
)
from spark_jobs.engine.planning.scan_tasks import DataFileSlice

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "ts", TimestampType()),
)


def _table(sql_catalog, format_version: int):
    from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes

    allow_v3_metadata_writes()
    sql_catalog.create_namespace_if_not_exists("m")
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))
    table = sql_catalog.create_table(
        f"m.t{format_version}", SCHEMA, partition_spec=spec, properties={"format-version": str(format_version)}
    )
    with table.update_spec() as update:
        update.add_field("ts", DayTransform(), "ts_day")
        update.remove_field("category")
    with table.update_spec() as update:
        update.add_field("id", BucketTransform(4), "id_bucket")
    return sql_catalog.load_table(f"m.t{format_version}")


def test_lineage_columns_exist_from_v3_on(sql_catalog):
    assert "_row_id" not in metadata_column_names(_table(sql_catalog, 2))
    v3 = _table(sql_catalog, 3)
    assert metadata_field(v3, "_row_id").field_id == 2147483540
    assert metadata_field(v3, "name") is None


def test_partition_type_is_the_union_of_every_spec_by_partition_field_id(sql_catalog):
    table = _table(sql_catalog, 2)
    unified = partition_type(table)
    assert [(f.name, f.field_type) for f in unified.fields] == [
        ("category", StringType()),
        ("ts_day", DateType()),
        ("id_bucket", IntegerType()),
    ]
    assert all(not f.required for f in unified.fields)


def test_each_file_gets_its_path_spec_and_partition_values(sql_catalog):
    table = _table(sql_catalog, 2)
    old = DataFileSlice("file:///a.parquet", 10, 1, spec_id=0, partition=("c1",))
    new = DataFileSlice("file:///b.parquet", 10, 1, spec_id=2, partition=(19000, 3))
    wanted = [FILE_PATH.field_id, SPEC_ID.field_id, PARTITION_ID]
    first, second = with_file_constants(table, [old, new], wanted)
    assert first.partition_constants == {
        FILE_PATH.field_id: "file:///a.parquet",
        SPEC_ID.field_id: 0,
        PARTITION_ID: {"category": "c1", "ts_day": None, "id_bucket": None},
    }
    assert second.partition_constants[PARTITION_ID] == {"category": None, "ts_day": 19000, "id_bucket": 3}
    assert with_file_constants(table, [old], [1, 2]) == [old]  # no metadata column asked for: as planned
