"""Source columns brought to the forms data files hold: Spark's variant and geo structs, WKB binary, microseconds
for nanosecond columns, and write defaults for what the source lacks, at any depth."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from pyiceberg.types import (
    GeographyType,
    GeometryType,
    IntegerType,
    ListType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
)

from spark_jobs.engine.shared.arrow_types import VARIANT_ARROW_TYPE, WkbType, schema_to_arrow
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.iceberg_model import VariantType
from spark_jobs.engine.write.column_forms import conformed_column, default_column

POINT = struct.pack("<BIdd", 1, 1, 1.0, 2.0)


def _spark_geo(kind: str, srids: list[int | None], values: list[bytes | None]) -> pa.StructArray:
    marks = {kind: "true", "srid": "4326"}
    fields = [pa.field("srid", pa.int32(), False), pa.field("wkb", pa.binary(), False, metadata=marks)]
    mask = pa.array([v is None for v in values])
    children = [pa.array([s or 0 for s in srids], pa.int32()), pa.array([v or b"" for v in values], pa.binary())]
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def test_spark_variant_struct_becomes_the_engine_variant() -> None:
    spark_form = pa.StructArray.from_arrays(
        [pa.array([b"\x0c\x01", b"\x00"]), pa.array([b"\x01\x00\x00", b"\x01\x00\x00"])],
        fields=[
            pa.field("value", pa.binary(), False),
            pa.field("metadata", pa.binary(), False, metadata={"variant": "true"}),
        ],
        mask=pa.array([False, True]),
    )
    conformed = conformed_column(spark_form, VariantType(), VARIANT_ARROW_TYPE, "v")
    assert conformed.type == VARIANT_ARROW_TYPE
    assert conformed.to_pylist() == [{"metadata": b"\x01\x00\x00", "value": b"\x0c\x01"}, None]


@pytest.mark.parametrize("geo_type", [GeometryType(), GeographyType()])
def test_spark_geo_structs_and_wkb_binary_become_wkb(geo_type) -> None:
    target = schema_to_arrow(geo_type)
    kind = "geometry" if isinstance(geo_type, GeometryType) else "geography"
    from_spark = conformed_column(_spark_geo(kind, [4326, None], [POINT, None]), geo_type, target, "g")
    from_binary = conformed_column(pa.array([POINT, None], pa.binary()), geo_type, target, "g")
    for conformed in (from_spark, from_binary):
        assert isinstance(conformed.type, WkbType) and conformed.storage.to_pylist() == [POINT, None]


def test_a_geo_value_of_another_srid_is_bad_input_naming_both() -> None:
    with pytest.raises(UserInputError, match=r"column 'g' holds geometry values of SRID 3857.*SRID 4326"):
        conformed_column(_spark_geo("geometry", [3857], [POINT]), GeometryType(), WkbType("OGC:CRS84"), "g")


def test_microseconds_become_nanoseconds_exactly() -> None:
    micros = pa.array([1_700_000_000_123_456, None], pa.timestamp("us"))
    conformed = conformed_column(micros, TimestampNanoType(), pa.timestamp("ns"), "t")
    assert conformed.cast(pa.int64()).to_pylist() == [1_700_000_000_123_456_000, None]


def test_missing_fields_take_their_write_default_at_any_depth() -> None:
    inner = StructType(
        NestedField(3, "a", IntegerType()),
        NestedField(4, "b", StringType(), initial_default="old", write_default="new"),
    )
    list_type = ListType(2, inner)
    target = schema_to_arrow(list_type)
    source = pa.array([[{"a": 1}, None], None], pa.list_(pa.struct([("a", pa.int32())])))
    conformed = conformed_column(source, list_type, target, "l")
    assert conformed.to_pylist() == [[{"a": 1, "b": "new"}, None], None]
    column = NestedField(5, "n", TimestampNanoType(), write_default=1_000_000_007)
    assert default_column(column, 2, pa.timestamp("ns")).cast(pa.int64()).to_pylist() == [1_000_000_007] * 2
    assert default_column(NestedField(6, "x", IntegerType()), 1, pa.int32()).to_pylist() == [None]
