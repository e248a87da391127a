"""Field ids of a Parquet file's Arrow schema resolve to name paths through structs, not into lists or maps."""

from __future__ import annotations

import pyarrow as pa

from spark_jobs.engine.deletes.parquet_field_ids import column_at_path, field_id_paths
from tests.spark_jobs.engine.deletes.delete_file_writers import field_with_id


def test_paths_reach_struct_children_and_skip_list_elements() -> None:
    struct_type = pa.struct([field_with_id("code", pa.string(), 12)])
    list_type = pa.list_(field_with_id("element", pa.int32(), 22))
    schema = pa.schema(
        [
            field_with_id("id", pa.int64(), 1),
            field_with_id("location", struct_type, 11),
            field_with_id("tags", list_type, 21),
            pa.field("no_id", pa.int32()),
        ]
    )

    assert field_id_paths(schema) == {1: ("id",), 11: ("location",), 12: ("location", "code"), 21: ("tags",)}


def test_column_at_a_nested_path_is_null_where_the_parent_is_null() -> None:
    struct_type = pa.struct([pa.field("code", pa.string())])
    table = pa.table({"location": pa.array([{"code": "x"}, None, {"code": None}], struct_type)})

    assert column_at_path(table, ("location", "code")).to_pylist() == ["x", None, None]
