"""The write context: what executors need to write a table's files, shipped as plain values, and its entry points."""

from __future__ import annotations

import pickle
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortField, SortOrder
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.shared.errors import RequiredColumnNullsError
from spark_jobs.engine.write.write_context import WriteContext, write_data, write_data_stream

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "part", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="part"))


def _table(sql_catalog, **kwargs):
    sql_catalog.create_namespace("ns")
    return sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"}, **kwargs)


def _rows() -> pa.Table:
    return pa.table({"part": ["b", "a", "b", "a"], "id": pa.array([4, 3, 2, 1], pa.int32())})


def test_the_context_ships_declared_fields_and_rebuilds_the_rest(sql_catalog) -> None:
    table = _table(sql_catalog)
    context = WriteContext.for_table(table)
    _ = context.schema, context.io, context.locations
    copy = pickle.loads(pickle.dumps(context))
    assert set(copy.__dict__) == set(WriteContext.__dataclass_fields__)
    assert copy.schema == table.schema() and copy.spec() == table.spec() and copy.sort_order is None
    assert copy.write_id == context.write_id != WriteContext.for_table(table).write_id


def test_write_data_writes_one_sorted_file_per_partition_named_by_the_write(sql_catalog) -> None:
    order = SortOrder(SortField(source_id=1, transform=IdentityTransform()))
    table = _table(sql_catalog, sort_order=order)
    context = WriteContext.for_table(table)
    written = write_data(_rows(), context, "task-7")
    by_partition = {tuple(item["partition_values"]): item for item in written}
    assert set(by_partition) == {("a",), ("b",)}
    for (part,), item in by_partition.items():
        path = urlparse(item["file_path"]).path
        assert f"/part={part}/" in path and context.write_id in path and "-task-7-" in path and "-data" in path
        rows = pq.read_table(path)
        assert rows.column("id").to_pylist() == sorted(rows.column("id").to_pylist())
        assert rows.schema.field("id").type == pa.int64()  # cast to the table's type
        assert item["record_count"] == 2 and item["sort_order_id"] == order.order_id


def test_streamed_batches_write_the_same_rows_as_a_table(sql_catalog) -> None:
    table = _table(sql_catalog)
    context = WriteContext.for_table(table)
    batches = _rows().to_batches(max_chunksize=1)
    written = write_data_stream(batches, context, "stream", _rows().schema)
    ids = sorted(
        i for item in written for i in pq.read_table(urlparse(item["file_path"]).path).column("id").to_pylist()
    )
    assert ids == [1, 2, 3, 4] and len(written) == 2


def test_nulls_in_a_required_column_are_counted_over_every_batch_and_stop_the_writing(sql_catalog, tmp_path) -> None:
    sql_catalog.create_namespace("ns")
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "part", StringType()))
    table = sql_catalog.create_table("ns.required", schema, properties={"format-version": "2"})
    context = WriteContext.for_table(table)
    good = pa.record_batch({"id": pa.array([1, 2], pa.int64()), "part": ["a", "b"]})
    bad = pa.record_batch({"id": pa.array([None, 3, None], pa.int64()), "part": ["a", "b", "c"]})
    with pytest.raises(RequiredColumnNullsError, match=r"'id' in 4 row\(s\)") as raised:
        write_data_stream([good, bad, good, bad], context, "task-1", good.schema)
    assert raised.value.null_counts == {"id": 4}
    with pytest.raises(RequiredColumnNullsError, match=r"'id' in 2 row\(s\)"):
        write_data(pa.Table.from_batches([good, bad]), context, "task-2")
    assert write_data_stream([good], context, "task-3", good.schema)  # rows without nulls are written
