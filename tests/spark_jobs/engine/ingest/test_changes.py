"""The snapshot each ingest mode commits, and what every ingest commit carries."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update import AddSchemaUpdate, AssertCurrentSchemaId
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.snapshot_change import IDEMPOTENCY_KEY_PROPERTY
from spark_jobs.engine.ingest.changes import (
    MODE_PROPERTY,
    append_change,
    for_commit,
    overwrite_change,
    row_level_change,
    written_partitions,
)
from spark_jobs.engine.ingest.options import IngestOptions
from spark_jobs.engine.write.schema_check import SchemaCheck
from spark_jobs.engine.write.write_context import WriteContext, write_data, write_equality_delete_rows

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def _written(sql_catalog):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.t", SCHEMA)
    context = WriteContext.for_table(table)
    data = write_data(pa.table({"id": pa.array([1, 2], pa.int64())}), context, "d")
    deletes = write_equality_delete_rows(
        pa.table({"id": pa.array([1], pa.int64())}),
        context,
        key_names=["id"],
        spec_id=0,
        partition_values=(),
        task_tag="e",
    )
    return table, data, deletes


def test_appends_and_overwrites(sql_catalog) -> None:
    _, data, _ = _written(sql_catalog)
    assert append_change([]) is None
    append = append_change(data)
    assert append.operation == Operation.APPEND and append.is_pure_append
    assert written_partitions(data) == {(0, ())}
    assert overwrite_change([], set(), kept_free=None) is None
    dynamic = overwrite_change(data, {"old.parquet"}, kept_free={(0, ())})
    assert dynamic.removed_data_file_paths == {"old.parquet"} and dynamic.no_new_data_in_partitions == {(0, ())}
    assert overwrite_change(data, set(), kept_free=None).no_new_data_in_partitions is None


def test_row_level_operations_and_what_they_validate(sql_catalog) -> None:
    _, data, deletes = _written(sql_catalog)
    upsert = IngestOptions(mode="upsert", key=("id",))
    assert row_level_change([], upsert, set()) is None
    assert row_level_change([*data, *deletes], upsert, set()).operation == Operation.OVERWRITE
    assert row_level_change(data, upsert, set()).operation == Operation.APPEND
    position_delete = row_level_change(deletes, IngestOptions(mode="delete", key=("id",)), {"d.parquet"})
    assert position_delete.operation == Operation.DELETE and position_delete.no_new_data_in_partitions == set()
    assert position_delete.required_data_file_paths == {"d.parquet"}
    equality = IngestOptions(mode="delete", key=("id",), delete_mode="equality")
    assert row_level_change(deletes, equality, set()).no_new_data_in_partitions is None
    assert position_delete.removed_deletion_vectors == set() and position_delete.no_new_deletes_for_data_files == set()


def test_deletion_vectors_replace_the_old_ones_and_refuse_concurrent_deletes(sql_catalog) -> None:
    _, _, deletes = _written(sql_catalog)
    options = IngestOptions(mode="delete", key=("id",))
    old = {("old-dv.puffin", 4)}
    change = row_level_change(
        deletes,
        options,
        {"d.parquet"},
        replaced_vectors=old,
        replaced_position_deletes={"d-deletes.parquet"},
        deletion_vectors=True,
    )
    assert change.removed_deletion_vectors == old and change.removed_delete_file_paths == {"d-deletes.parquet"}
    assert change.no_new_deletes_for_data_files == {"d.parquet"} and change.required_data_file_paths == {"d.parquet"}


def test_every_commit_carries_its_key_its_mode_and_a_schema_change(sql_catalog) -> None:
    table, data, _ = _written(sql_catalog)
    options = IngestOptions(idempotency_key="dag.run.task", allow_schema_evolution=True)
    same = for_commit(append_change(data), table, options, SchemaCheck(table.schema()))
    assert same.summary_with_key() == {MODE_PROPERTY: "append", IDEMPOTENCY_KEY_PROPERTY: "dag.run.task"}
    assert same.extra_updates == () and same.extra_requirements == ()
    wider = Schema(*SCHEMA.fields, NestedField(2, "note", StringType(), required=False))
    evolved = for_commit(append_change(data), table, options, SchemaCheck(wider, added_columns=["note"]))
    assert isinstance(evolved.extra_updates[0], AddSchemaUpdate) and evolved.extra_updates[0].schema_ == wider
    (requirement,) = evolved.extra_requirements
    assert isinstance(requirement, AssertCurrentSchemaId)
    assert requirement.current_schema_id == table.metadata.current_schema_id
