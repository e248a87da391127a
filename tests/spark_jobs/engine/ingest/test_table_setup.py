"""The table an ingest writes to: created with its layout only when allowed; the source's schema checked against it."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.table.sorting import SortDirection
from pyiceberg.transforms import BucketTransform, DayTransform

from spark_jobs.engine.ingest.options import IngestOptions
from spark_jobs.engine.ingest.table_setup import check_source_schema, load_or_create_table
from spark_jobs.engine.shared.errors import TableNotFoundError, UserInputError

SOURCE = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ts", pa.timestamp("us", tz="UTC"))])


def test_a_missing_table_is_created_only_when_allowed_with_its_layout(sql_catalog) -> None:
    with pytest.raises(TableNotFoundError):
        load_or_create_table(sql_catalog, "ns.events", SOURCE, IngestOptions())
    options = IngestOptions(create_if_missing=True, partition_by="day(ts),bucket(4,id)", sort_by="id desc")
    table = load_or_create_table(sql_catalog, "ns.events", SOURCE, options)
    assert table.format_version == 2 and table.schema().column_names == ["id", "ts"]
    assert [type(f.transform) for f in table.spec().fields] == [DayTransform, BucketTransform]
    (order,) = table.sort_order().fields
    assert order.direction == SortDirection.DESC and table.schema().find_column_name(order.source_id) == "id"
    again = load_or_create_table(sql_catalog, "ns.events", SOURCE, options)
    assert again.metadata.table_uuid == table.metadata.table_uuid


def test_layout_columns_must_be_source_columns(sql_catalog) -> None:
    options = IngestOptions(create_if_missing=True, sort_by="price")
    with pytest.raises(UserInputError, match="--sort-by 'price': column 'price' is not a source column"):
        load_or_create_table(sql_catalog, "ns.events", SOURCE, options)


def test_keys_must_be_table_and_source_columns_and_delete_checks_keys_only(sql_catalog) -> None:
    table = load_or_create_table(sql_catalog, "ns.events", SOURCE, IngestOptions(create_if_missing=True))
    with pytest.raises(UserInputError, match=r"--key column\(s\) \['nope'\] are not columns of table ns\.events"):
        check_source_schema(table, SOURCE, IngestOptions(mode="delete", key=("nope",)))
    keys_only = pa.schema([pa.field("ts", pa.timestamp("us", tz="UTC"))])
    with pytest.raises(UserInputError, match=r"\['id'\] are missing from the source of table ns\.events"):
        check_source_schema(table, keys_only, IngestOptions(mode="delete", key=("id",)))
    ids = pa.schema([pa.field("id", pa.int32())])
    assert not check_source_schema(table, ids, IngestOptions(mode="delete", key=("id",))).evolves
    wider = SOURCE.append(pa.field("note", pa.string()))
    with pytest.raises(UserInputError, match="note"):
        check_source_schema(table, wider, IngestOptions())
    assert check_source_schema(table, wider, IngestOptions(allow_schema_evolution=True)).added_columns == ["note"]


def test_format_v3_types_cannot_be_keys(sql_catalog) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import GeometryType, LongType, NestedField, TimestampNanoType

    from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes

    allow_v3_metadata_writes()
    sql_catalog.create_namespace_if_not_exists("ns")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "g", GeometryType()),
        NestedField(3, "tn", TimestampNanoType()),
    )
    table = sql_catalog.create_table("ns.geo", schema, properties={"format-version": "3"})
    source = pa.schema([("id", pa.int64()), ("g", pa.binary()), ("tn", pa.timestamp("us"))])
    with pytest.raises(UserInputError, match=r"--key column\(s\) g \(geometry\), tn \(timestamp_ns\) of table ns\.geo"):
        check_source_schema(table, source, IngestOptions(mode="upsert", key=("id", "g", "tn")))
    assert check_source_schema(table, source, IngestOptions(mode="upsert", key=("id",))).schema == table.schema()
