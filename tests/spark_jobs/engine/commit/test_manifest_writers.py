"""Manifests carry the spec's entry schema: every field's Avro type as format/spec.md defines it, per field id."""

from __future__ import annotations

import json

import pyarrow as pa
from pyiceberg.avro.file import AvroFile
from pyiceberg.manifest import DataFileContent, ManifestContent, ManifestEntry
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.table.manifest_entries import read_live_entries, referenced_data_file
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import (
    WriteContext,
    write_data,
    write_equality_delete_rows,
    write_position_delete_rows,
)

# format/spec.md, "Manifest Entry Fields" and "Data File Fields" (v2): field id -> Avro type of the value.
SPEC_V2_TYPES = {
    0: "int",
    1: "long",
    3: "long",
    4: "long",
    134: "int",
    100: "string",
    101: "string",
    103: "long",
    104: "long",
    108: ("map", "int", "long"),
    109: ("map", "int", "long"),
    110: ("map", "int", "long"),
    137: ("map", "int", "long"),
    125: ("map", "int", "bytes"),
    128: ("map", "int", "bytes"),
    131: "bytes",
    132: ("array", "long"),
    135: ("array", "int"),
    140: "int",
    143: "string",
}


def _value_type(avro_type):
    """The Avro type of a field's values, optional unions unwrapped; maps as Iceberg writes them (arrays of k/v)."""
    if isinstance(avro_type, list):
        (avro_type,) = [t for t in avro_type if t != "null"]
    if isinstance(avro_type, str):
        return avro_type
    if avro_type["type"] == "array" and avro_type.get("logicalType") == "map":
        key, value = avro_type["items"]["fields"]
        return ("map", _value_type(key["type"]), _value_type(value["type"]))
    if avro_type["type"] == "array":
        return ("array", _value_type(avro_type["items"]))
    return avro_type["type"]


def _field_types(avro_schema) -> dict[int, object]:
    types = {}
    for field in avro_schema["fields"]:
        types[field["field-id"]] = _value_type(field["type"])
        nested = field["type"]
        if isinstance(nested, list):
            nested = next(t for t in nested if t != "null")
        if isinstance(nested, dict) and nested.get("type") == "record":
            types.update(_field_types(nested))
    return types


def _header_schema(table, manifest) -> dict:
    with AvroFile[ManifestEntry](table.io.new_input(manifest.manifest_path)) as reader:
        return json.loads(reader.header.meta["avro.schema"])


def test_delete_and_data_manifests_declare_the_spec_types_of_every_field(sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType()))
    table = sql_catalog.create_table("ns.t", schema, properties={"format-version": "2"})
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]})
    data = [to_data_file(f) for f in write_data(rows, WriteContext.for_table(table), "a")]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=data))
    keys = pa.table({"id": pa.array([2], pa.int64()), "s": ["b"]})
    deletes = [
        to_data_file(f)
        for f in write_equality_delete_rows(
            keys, WriteContext.for_table(table), key_names=["id", "s"], spec_id=0, partition_values=(), task_tag="d"
        )
    ]
    commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=deletes))

    manifests = table.current_snapshot().manifests(table.io)
    assert {m.content for m in manifests} == {ManifestContent.DATA, ManifestContent.DELETES}
    for manifest in manifests:
        declared = _field_types(_header_schema(table, manifest))
        wrong = {fid: (declared.get(fid), want) for fid, want in SPEC_V2_TYPES.items() if declared.get(fid) != want}
        assert not wrong, f"{manifest.content.name} manifest: field id -> (written, spec) {wrong}"
    (delete_manifest,) = [m for m in manifests if m.content == ManifestContent.DELETES]
    (entry,) = read_live_entries(delete_manifest, table.io)
    assert entry.data_file.content == DataFileContent.EQUALITY_DELETES and entry.data_file.equality_ids == [1, 2]


def test_a_position_delete_files_single_target_is_kept_as_referenced_data_file(sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table(
        "ns.p", Schema(NestedField(1, "id", LongType())), properties={"format-version": "2"}
    )
    (data_file,) = [
        to_data_file(f)
        for f in write_data(pa.table({"id": pa.array([1, 2], pa.int64())}), WriteContext.for_table(table), "a")
    ]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=[data_file]))
    positions = pa.table({"file_path": [data_file.file_path], "pos": pa.array([0], pa.int64())})
    deletes = [
        to_data_file(f) for f in write_position_delete_rows(positions, WriteContext.for_table(table), 0, (), "d")
    ]
    commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=deletes))
    (delete_manifest,) = [
        m for m in table.current_snapshot().manifests(table.io) if m.content == ManifestContent.DELETES
    ]
    (entry,) = read_live_entries(delete_manifest, table.io)
    assert referenced_data_file(entry.data_file) == data_file.file_path
