"""Files without field ids are read through the table's name mapping, as the Iceberg spec resolves them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table.name_mapping import MappedField, NameMapping

from spark_jobs.engine.parquet.file_columns import FIELD_ID_KEY
from spark_jobs.engine.parquet.name_mapping import apply_name_mapping
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import UnsupportedFeatureError


def _id(field: pa.Field) -> int | None:
    return int(field.metadata[FIELD_ID_KEY]) if field.metadata and FIELD_ID_KEY in field.metadata else None


MAPPING = NameMapping(
    [
        MappedField(field_id=1, names=["id", "ident"]),
        MappedField(field_id=2, names=["point"], fields=[MappedField(field_id=3, names=["x"])]),
        MappedField(field_id=4, names=["tags"], fields=[MappedField(field_id=5, names=["element"])]),
        MappedField(
            field_id=6,
            names=["attrs"],
            fields=[MappedField(field_id=7, names=["key"]), MappedField(field_id=8, names=["value"])],
        ),
    ]
)


def test_ids_come_from_any_of_the_mapped_names_and_nested_fields_by_position_or_name() -> None:
    schema = pa.schema(
        [
            pa.field("ident", pa.int64()),
            pa.field("point", pa.struct([pa.field("x", pa.float64())])),
            pa.field("tags", pa.list_(pa.field("item", pa.string()))),
            pa.field("attrs", pa.map_(pa.string(), pa.int32())),
            pa.field("not_in_the_table", pa.int32()),
        ]
    )
    mapped = apply_name_mapping(schema, MAPPING, "f.parquet")
    assert [_id(field) for field in mapped] == [1, 2, 4, 6, None]
    assert _id(mapped.field("point").type.field(0)) == 3
    assert _id(mapped.field("tags").type.value_field) == 5
    assert (_id(mapped.field("attrs").type.key_field), _id(mapped.field("attrs").type.item_field)) == (7, 8)


def test_a_nested_field_the_mapping_lacks_is_an_error_naming_it() -> None:
    schema = pa.schema([pa.field("point", pa.struct([pa.field("x", pa.float64()), pa.field("z", pa.float64())]))])
    with pytest.raises(UnsupportedFeatureError, match=r"f\.parquet: the name mapping has no field for point\.z"):
        apply_name_mapping(schema, MAPPING, "f.parquet")


def test_added_files_without_ids_read_back_through_the_mapping_with_filters_and_renames(
    sql_catalog, tmp_path: Path
) -> None:
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table(
        "ns.imported", schema=pa.schema([("id", pa.int64()), ("category", pa.string()), ("price", pa.float64())])
    )
    path = tmp_path / "imported.parquet"
    pq.write_table(
        pa.table(
            {
                "id": pa.array(range(1000), pa.int64()),
                "category": pa.array(["a", "b"] * 500),
                "price": pa.array([i / 4 for i in range(1000)]),
            }
        ),
        path,
        row_group_size=100,
    )
    assert _id(pq.read_schema(path).field("id")) is None
    table.add_files([f"file://{path}"])
    table = sql_catalog.load_table("ns.imported")
    assert table.metadata.properties.get("schema.name-mapping.default")

    rows = open_read_session(table.catalog, table, row_filter="id >= 900 and category = 'a'").to_arrow()
    assert rows.num_rows == 50
    assert rows.column("price").to_pylist() == [i / 4 for i in range(900, 1000, 2)]
    session = open_read_session(table.catalog, table, row_filter="id >= 900")
    session.to_arrow()
    assert session.metrics.row_groups_pruned_by_statistics == 9  # the manifest's metrics and the footer agree on ids

    with table.update_schema() as update:
        update.rename_column("category", "kind")
    renamed = sql_catalog.load_table("ns.imported")
    result = open_read_session(renamed.catalog, renamed, columns=["id", "kind"], row_filter="id < 3").to_arrow()
    assert result.to_pylist() == [{"id": 0, "kind": "a"}, {"id": 1, "kind": "b"}, {"id": 2, "kind": "a"}]
