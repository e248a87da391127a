"""Files pruned by their manifest bounds for variant paths and geo boxes; what the bounds cannot prove is kept."""

from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import GeographyType, GeometryType, LongType, NestedField

from spark_jobs.engine.planning.file_statistics import FileStatistics
from spark_jobs.engine.planning.filter_parsing import parse_row_filter
from spark_jobs.engine.planning.metrics_filter import MetricsFilter
from spark_jobs.engine.shared import variant_encoding as ve
from spark_jobs.engine.shared.iceberg_model import VariantType

SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "v", VariantType()),
    NestedField(3, "g", GeometryType()),
    NestedField(4, "gg", GeographyType()),
)
_COUNTS = pa.map_(pa.int32(), pa.int64())
_BOUNDS = pa.map_(pa.int32(), pa.binary())


def variant_bound(**paths: tuple[int, object]) -> bytes:
    """A serialized variant bound: normalized path -> (primitive kind, value); keys given as a__b for $['a']['b']."""
    metadata = ve.VariantMetadata(ve.EMPTY_METADATA)
    fields = {
        "$" + "".join(f"['{part}']" for part in key.split("__")): ve.encode_primitive(kind, value)
        for key, (kind, value) in paths.items()
    }
    value = ve.encode_object(metadata, fields)
    return metadata.to_bytes() + value


def point(x: float, y: float) -> bytes:
    return struct.pack("<dd", x, y)


def may_match(files: list[dict], row_filter: str) -> list[bool]:
    def column(name, arrow_type):
        return pa.array([list(f[name].items()) if name in f else None for f in files], arrow_type)

    table = pa.table(
        {
            "value_counts": column("value_counts", _COUNTS),
            "null_value_counts": column("null_value_counts", _COUNTS),
            "nan_value_counts": column("nan_value_counts", _COUNTS),
            "lower_bounds": column("lower_bounds", _BOUNDS),
            "upper_bounds": column("upper_bounds", _BOUNDS),
        }
    )
    records = np.full(len(files), 10, dtype=np.int64)
    return MetricsFilter(SCHEMA, parse_row_filter(row_filter)).may_match(FileStatistics(table), records).tolist()


VARIANT_FILES = [
    {
        "lower_bounds": {2: variant_bound(a=(ve.INT8, 0), s=(ve.STRING, "b"))},
        "upper_bounds": {2: variant_bound(a=(ve.INT8, 9), s=(ve.STRING, "d"))},
    },
    {
        "lower_bounds": {2: variant_bound(a=(ve.INT64, 10), o__b=(ve.DOUBLE, 1.5))},
        "upper_bounds": {2: variant_bound(a=(ve.INT64, 19), o__b=(ve.DOUBLE, 2.5))},
    },
    {},  # no bounds at all
    {"lower_bounds": {2: variant_bound(a=(ve.STRING, "a"))}, "upper_bounds": {2: variant_bound(a=(ve.STRING, "z"))}},
    {"value_counts": {2: 10}, "null_value_counts": {2: 10}},  # only NULL variants
]


def test_variant_path_bounds_prune_files_that_cannot_match():
    assert may_match(VARIANT_FILES, "variant_get(v, '$.a', 'int') >= 12") == [False, True, True, True, False]
    assert may_match(VARIANT_FILES, "variant_get(v, '$.a', 'bigint') = 5") == [True, False, True, True, False]
    assert may_match(VARIANT_FILES, "variant_get(v, '$.a', 'double') IN (3.5, 30)") == [True, False, True, True, False]
    assert may_match(VARIANT_FILES, "variant_get(v, '$.o.b', 'double') > 2.5") == [True, False, True, True, False]
    assert may_match(VARIANT_FILES, "variant_get(v, '$.s', 'string') < 'b'") == [False, True, True, True, False]


def test_negations_and_null_tests_on_paths_are_not_pruned_by_bounds():
    assert may_match(VARIANT_FILES, "NOT variant_get(v, '$.a', 'int') < 12") == [False, True, True, True, False]
    assert may_match(VARIANT_FILES, "variant_get(v, '$.a', 'int') != 5") == [True, True, True, True, False]
    assert may_match(VARIANT_FILES, "variant_get(v, '$.a', 'int') IS NULL") == [True] * 5
    assert may_match(VARIANT_FILES, "variant_get(v, '$.a[0]', 'int') = 100") == [True, True, True, True, False]


GEO_FILES = [
    {"lower_bounds": {3: point(0, 0), 4: point(170, -10)}, "upper_bounds": {3: point(10, 10), 4: point(-170, 10)}},
    {"lower_bounds": {3: point(20, 0), 4: point(-20, -10)}, "upper_bounds": {3: point(30, 10), 4: point(20, 10)}},
    {},  # no bounds: Iceberg Java 1.12 writes none for geo columns
    {"lower_bounds": {3: point(math.nan, 0)}, "upper_bounds": {3: point(5, 5)}},
    {"value_counts": {3: 10, 4: 10}, "null_value_counts": {3: 10, 4: 10}},
]


def test_geometry_boxes_prune_files_whose_box_misses_the_envelope():
    assert may_match(GEO_FILES, "st_intersects(g, st_makeenvelope(12, 0, 19, 5))") == [False, False, True, True, False]
    assert may_match(GEO_FILES, "st_intersects(g, st_makeenvelope(10, 10, 19, 50))") == [True, False, True, True, False]
    assert may_match(GEO_FILES, "st_disjoint(g, st_makeenvelope(-100, -100, 100, 100))") == [True] * 4 + [False]


def test_geography_boxes_may_wrap_the_antimeridian():
    # the first file's box runs from 170 east across the antimeridian to -170
    expected = [True, False, True, True, False]
    assert may_match(GEO_FILES, "st_intersects(gg, st_makeenvelope(175, 0, 179, 5))") == expected
    assert may_match(GEO_FILES, "st_intersects(gg, st_makeenvelope(-175, 0, -171, 5))")[:2] == [True, False]
    assert may_match(GEO_FILES, "st_intersects(gg, st_makeenvelope(0, 0, 5, 5))")[:2] == [False, True]
    assert may_match(GEO_FILES, "st_intersects(gg, st_makeenvelope(160, 0, -178, 5))")[:2] == [True, False]
    assert may_match(GEO_FILES, "st_intersects(gg, st_makeenvelope(0, 20, 5, 25))")[:2] == [False, False]
