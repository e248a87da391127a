"""pyiceberg's model completed for format v3: the variant type at any depth, the geo types as Java writes them, and
a v3 commit's metadata keeping the schemas exactly as they were read."""

from __future__ import annotations

import json

import pytest
from pyiceberg.exceptions import ValidationError
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.types import GeographyType, GeometryType, ListType, MapType

import spark_jobs  # noqa: F401 - registers the completions, as every process of ours does
from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes
from spark_jobs.engine.shared.iceberg_model import VariantType, is_variant, schema_text

# A schema as Iceberg Java 1.12 writes it: types pyiceberg spells otherwise, defaults in Java's own text.
JAVA_SCHEMA = (
    '{"type":"struct","schema-id":0,"fields":['
    '{"id":1,"name":"id","required":true,"type":"long"},'
    '{"id":2,"name":"v","required":false,"type":"variant"},'
    '{"id":3,"name":"g","required":false,"type":"geometry(OGC:CRS84)"},'
    '{"id":4,"name":"gg","required":false,"type":"geography(srid:4269, karney)"},'
    '{"id":5,"name":"vs","required":false,"type":{"type":"list","element-id":8,"element":"variant",'
    '"element-required":false}},'
    '{"id":6,"name":"m","required":false,"type":{"type":"map","key-id":9,"key":"string","value-id":10,'
    '"value":"variant","value-required":false}},'
    '{"id":7,"name":"ts","required":false,"type":"timestamp_ns",'
    '"initial-default":"2024-01-02T03:04:05.1","write-default":"2024-01-02T03:04:05.000000001"},'
    '{"id":11,"name":"n","required":false,"type":"unknown"},'
    '{"id":12,"name":"d","required":false,"type":"double","initial-default":1.0E10,"write-default":-0.0}]}'
)


def _metadata_text(uuid: str) -> str:
    return (
        '{"format-version":3,"table-uuid":"' + uuid + '","location":"file:/tmp/t","last-sequence-number":0,'
        '"last-updated-ms":1700000000000,"last-column-id":12,"current-schema-id":0,'
        '"schemas":[' + JAVA_SCHEMA + '],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],'
        '"last-partition-id":999,"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],'
        '"properties":{},"current-snapshot-id":-1,"next-row-id":0,"refs":{},"snapshots":[],"statistics":[],'
        '"snapshot-log":[],"metadata-log":[]}'
    )


def test_java_types_parse_at_every_depth():
    schema = Schema.model_validate_json(JAVA_SCHEMA)
    assert is_variant(schema.find_field("v").field_type)
    assert schema.find_field("g").field_type == GeometryType("OGC:CRS84")
    assert schema.find_field("gg").field_type == GeographyType("srid:4269", "karney")
    vs = schema.find_field("vs").field_type
    assert isinstance(vs, ListType) and is_variant(vs.element_type)
    m = schema.find_field("m").field_type
    assert isinstance(m, MapType) and is_variant(m.value_type)
    # pyiceberg's own round trip (what update_table_metadata does) keeps the variant type
    assert Schema.model_validate_json(schema.model_dump_json()) == schema
    assert str(VariantType()) == "variant" and VariantType().minimum_format_version() == 3
    ts = schema.find_field("ts")
    assert (ts.initial_default, ts.write_default) == (1_704_164_645_100_000_000, 1_704_164_645_000_000_001)


def test_a_v3_commit_writes_the_schemas_as_they_were_read():
    uuid = "11111111-2222-3333-4444-555555555555"
    metadata = TableMetadataUtil.parse_raw(_metadata_text(uuid))
    assert schema_text(uuid, 0) == JAVA_SCHEMA
    allow_v3_metadata_writes()
    changed = metadata.model_copy(update={"properties": {"k": "v"}})
    written = changed.model_dump_json()
    assert JAVA_SCHEMA in written  # byte for byte, with Java's spelling of types and defaults
    assert json.loads(written)["properties"] == {"k": "v"}
    # pyiceberg's model alone writes them otherwise
    assert changed.schemas[0].model_dump_json() != JAVA_SCHEMA


def test_a_schema_that_changed_since_it_was_read_is_written_from_the_model():
    uuid = "11111111-2222-3333-4444-666666666666"
    metadata = TableMetadataUtil.parse_raw(_metadata_text(uuid))
    allow_v3_metadata_writes()
    renamed = Schema(
        *(f.model_copy(update={"name": "key"}) if f.name == "id" else f for f in metadata.schemas[0].fields),
        schema_id=0,
    )
    written = json.loads(metadata.model_copy(update={"schemas": [renamed]}).model_dump_json())
    assert written["schemas"][0]["fields"][0]["name"] == "key"


@pytest.mark.parametrize("text", ["geometry(OGC:CRS84", "geography(a, b, c)"])
def test_malformed_geo_type_names_are_still_refused(text):
    with pytest.raises((ValueError, ValidationError)):
        Schema.model_validate_json(
            '{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"g","required":false,"type":"' + text + '"}]}'
        )
