"""A written file's description survives the trip executor -> driver and becomes the DataFile the commit needs."""

from __future__ import annotations

import pickle

import pyarrow as pa
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.table.manifest_entries import referenced_data_file
from spark_jobs.engine.write.file_entries import describe_file, to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data, write_equality_delete_rows

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "part", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="part"))


def test_a_written_data_file_becomes_the_data_file_the_commit_adds(sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC)
    rows = pa.table({"id": pa.array([5, 9, None], pa.int64()), "part": ["x", "x", "x"]})
    (described,) = pickle.loads(pickle.dumps(write_data(rows, WriteContext.for_table(table), "t")))
    data_file = to_data_file(described)
    assert data_file.content == DataFileContent.DATA and data_file.file_format == FileFormat.PARQUET
    assert (data_file.file_path, data_file.spec_id, data_file.record_count) == (described["file_path"], 0, 3)
    assert data_file.partition[0] == "x" and len(data_file.partition) == 1
    assert data_file.null_value_counts[1] == 1 and data_file.value_counts[1] == 3
    assert data_file.lower_bounds[1] == (5).to_bytes(8, "little") and data_file.upper_bounds[1] == (9).to_bytes(
        8, "little"
    )


def test_equality_deletes_keep_their_field_ids_and_scoped_position_deletes_their_target(sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.t", SCHEMA)
    keys = pa.table({"id": pa.array([1, 2], pa.int64())})
    context = WriteContext.for_table(table)
    (described,) = write_equality_delete_rows(
        keys, context, key_names=["id"], spec_id=0, partition_values=(), task_tag="d"
    )
    deletes = to_data_file(described)
    assert deletes.content == DataFileContent.EQUALITY_DELETES and deletes.equality_ids == [1]
    scoped = describe_file(
        content=DataFileContent.POSITION_DELETES,
        file_path="s3://b/t/data/p.parquet",
        file_size_in_bytes=100,
        spec_id=0,
        partition_values=[],
        statistics={"record_count": 2},
        referenced_data_file="s3://b/t/data/d.parquet",
    )
    position_deletes = to_data_file(scoped)
    assert position_deletes.content == DataFileContent.POSITION_DELETES
    assert referenced_data_file(position_deletes) == "s3://b/t/data/d.parquet" and position_deletes.record_count == 2


def test_a_written_file_is_a_frozen_value_with_only_its_declared_fields() -> None:
    import dataclasses

    import pytest

    from spark_jobs.engine.write.file_entries import WrittenFile

    written = describe_file(
        content=DataFileContent.DATA,
        file_path="file:///t/a.parquet",
        file_size_in_bytes=10,
        spec_id=0,
        partition_values=["x"],
        statistics={"record_count": 2, "split_offsets": [4]},
    )
    assert isinstance(written, WrittenFile) and written.partition_values == ("x",) and written.split_offsets == (4,)
    assert written.partition_key == (0, ("x",)) and written.is_data
    with pytest.raises(dataclasses.FrozenInstanceError):
        written.record_count = 3  # type: ignore[misc]
    with pytest.raises(KeyError):
        written["deleted_from_data_files_typo"]
    assert written["file_path"] == written.file_path
    assert pickle.loads(pickle.dumps(written)) == written
