"""The scan context: checked once on the driver, shipped as declared fields, rebuilt on the other side."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from pyiceberg.expressions import AlwaysTrue, BoundGreaterThan, GreaterThan
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType, StructType

from spark_jobs.engine.planning.scan_context import DEFAULT_BATCH_SIZE, ScanContext
from spark_jobs.engine.shared.errors import UserInputError

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "point", StructType(NestedField(4, "x", LongType(), required=False)), required=False),
)


def _context(**fields) -> ScanContext:
    return ScanContext(read_schema_json=SCHEMA.model_dump_json(), **{"output_field_ids": (2, 1), **fields})


def test_output_schema_has_the_output_fields_in_order_with_their_ids() -> None:
    output = _context().output_schema
    assert output.names == ["name", "id"]
    assert [field.metadata[b"PARQUET:field_id"] for field in output] == [b"2", b"1"]
    assert output.field("id").type == pa.int64()


def test_output_fields_must_be_top_level_fields_of_the_read_schema() -> None:
    with pytest.raises(UserInputError, match=r"output field ids \[4, 9\] are not top-level"):
        _context(output_field_ids=(1, 4, 9))


def test_the_filter_is_bound_by_name_to_the_read_schema_once() -> None:
    context = _context(row_filter=GreaterThan("ID", 5), case_sensitive=False)
    bound = context.bound_filter
    assert isinstance(bound, BoundGreaterThan)
    assert bound.term.ref().field.field_id == 1
    assert context.bound_filter is bound
    assert isinstance(_context().bound_filter, AlwaysTrue)
    with pytest.raises(ValueError, match="ID"):
        _ = _context(row_filter=GreaterThan("ID", 5)).bound_filter


def test_pickling_ships_the_declared_fields_and_rebuilds_the_rest() -> None:
    context = _context(row_filter=GreaterThan("id", 5), batch_size=7)
    _ = context.output_schema, context.bound_filter, context.io, context.field_types
    state = context.__getstate__()
    assert set(state) == {
        "read_schema_json",
        "output_field_ids",
        "row_filter",
        "case_sensitive",
        "io_properties",
        "table_location",
        "batch_size",
        "name_mapping_json",
    }
    copy = pickle.loads(pickle.dumps(context))
    assert copy == context
    assert copy.output_schema.equals(context.output_schema, check_metadata=True)
    assert isinstance(copy.io, PyArrowFileIO)
    assert copy.field_types[4] == LongType()
    assert copy.batch_size == 7
    assert _context().batch_size == DEFAULT_BATCH_SIZE
