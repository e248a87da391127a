"""Rows of variant-path comparisons and geo box tests, with SQL's NULL rules."""

from __future__ import annotations

import struct

import pyarrow as pa
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema
from pyiceberg.types import GeographyType, GeometryType, NestedField

from spark_jobs.engine.parquet.predicates import translate_filter
from spark_jobs.engine.parquet.row_filter import evaluate_rows
from spark_jobs.engine.planning.filter_parsing import parse_row_filter
from spark_jobs.engine.shared import variant_encoding as ve
from spark_jobs.engine.shared.arrow_types import VARIANT_ARROW_TYPE
from spark_jobs.engine.shared.iceberg_model import VariantType

SCHEMA = Schema(
    NestedField(1, "v", VariantType()), NestedField(2, "g", GeometryType()), NestedField(3, "gg", GeographyType())
)


def variant(value) -> dict[str, bytes] | None:
    if value is None:
        return None
    metadata = ve.VariantMetadata(ve.EMPTY_METADATA)
    if isinstance(value, dict):
        encoded = ve.encode_object(metadata, {key: _primitive(item) for key, item in value.items()})
    else:
        encoded = _primitive(value)
    return {"metadata": metadata.to_bytes(), "value": encoded}


def _primitive(value) -> bytes:
    if isinstance(value, str):
        return ve.encode_primitive(ve.STRING, value)
    if isinstance(value, float):
        return ve.encode_primitive(ve.DOUBLE, value)
    return ve.encode_primitive(ve.INT64 if abs(value) > 100 else ve.INT8, value)


def point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


VALUES = [{"a": 5}, {"a": 500}, {"a": 2.5}, {"a": "7"}, {"b": 1}, "plain", None, {"a": 7}]
POINTS = [point(0, 0), point(5, 5), None, point(179.5, 1), point(-179.5, 1), point(20, 20), point(1, 1), point(2, 2)]
COLUMNS = {
    1: pa.array([variant(v) for v in VALUES], VARIANT_ARROW_TYPE),
    2: pa.array(POINTS, pa.binary()),
    3: pa.array(POINTS, pa.binary()),
}


def rows(text: str) -> list[int]:
    node = translate_filter(bind(SCHEMA, parse_row_filter(text), True))
    return [index for index, keep in enumerate(evaluate_rows(node, COLUMNS, len(VALUES))) if keep]


def test_variant_paths_compare_values_of_the_type_kind_and_null_otherwise():
    assert rows("variant_get(v, '$.a', 'int') > 4") == [0, 1, 7]  # 2.5 is not rounded; the string "7" is NULL
    assert rows("variant_get(v, '$.a', 'double') < 3") == [2]
    assert rows("variant_get(v, '$.a', 'string') = '7'") == [3]
    assert rows("variant_get(v, '$.a', 'int') IS NULL") == [3, 4, 5, 6]
    assert rows("NOT variant_get(v, '$.a', 'int') > 4") == [2]  # NULLs stay out under NOT
    assert rows("variant_get(v, '$.a', 'int') IN (5, 7) OR variant_get(v, '$', 'string') = 'plain'") == [0, 5, 7]


def test_geo_boxes_with_nulls_and_the_antimeridian():
    assert rows("st_intersects(g, st_makeenvelope(0, 0, 5, 5))") == [0, 1, 6, 7]
    assert rows("st_disjoint(g, st_makeenvelope(0, 0, 5, 5))") == [3, 4, 5]  # the NULL matches neither
    assert rows("st_intersects(gg, st_makeenvelope(179, 0, -179, 2))") == [3, 4]
    assert rows("st_intersects(g, st_makeenvelope(-180, 0, 180, 2))") == [0, 3, 4, 6, 7]


def test_a_column_of_points_and_one_of_other_shapes_answer_alike():
    line = struct.pack("<BII", 1, 2, 2) + struct.pack("<dddd", 3, 3, 30, 30)  # not a point: read one by one
    empty = point(float("nan"), float("nan"))
    schema = Schema(NestedField(2, "g", GeometryType()))
    node = translate_filter(bind(schema, parse_row_filter("st_disjoint(g, st_makeenvelope(0, 0, 5, 5))"), True))
    points = pa.array([point(1, 1), empty, None, point(9, 9)], pa.binary())
    mixed = pa.array([point(1, 1), empty, None, point(9, 9), line], pa.binary())
    assert evaluate_rows(node, {2: points}, 4).tolist() == [False, True, False, True]
    assert evaluate_rows(node, {2: mixed}, 5).tolist() == [False, True, False, True, False]
