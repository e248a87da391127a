"""Rows of a variant-path comparison or a geo box test (the leaves ``predicates`` marks with a ``condition``).

1. Variant: each row's value (the engine's unshredded ``struct<metadata, value>``; shredded files are reassembled
   when read) is walked along the path (``variant_paths.value_at``), put in the comparison's domain, and compared;
   a NULL variant, a missing path or a value of another kind is NULL (only ``IS NULL`` holds). Metadata
   dictionaries are decoded once per distinct bytes.
2. Geo: each row's WKB gives its box (``geo_boxes.wkb_box``; a geography's x range may wrap the antimeridian);
   ``st_intersects`` holds where it meets the envelope, ``st_disjoint`` where it does not (an empty geometry is
   disjoint from everything); a NULL value satisfies neither. A column of little-endian 2D points only (the
   common case) is tested at once with numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.types import GeographyType

from spark_jobs.engine.parquet.predicates import ColumnPredicate
from spark_jobs.engine.shared import variant_encoding as ve
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.extended_predicates import SpatialCondition, VariantPathCondition
from spark_jobs.engine.shared.geo_boxes import intersects, wkb_box
from spark_jobs.engine.shared.variant_paths import compare, value_at


def extended_keep_mask(predicate: ColumnPredicate, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """True where the row satisfies the leaf (module doc)."""
    condition = predicate.condition
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if isinstance(column.type, pa.BaseExtensionType):
        column = column.storage
    if isinstance(condition, VariantPathCondition):
        return _variant_rows(condition, column)
    if isinstance(condition, SpatialCondition):
        return _spatial_rows(condition, column, geography=isinstance(predicate.field_type, GeographyType))
    raise TypeError(f"not a variant-path or geo leaf: {predicate!r}")


def _variant_rows(condition: VariantPathCondition, column: pa.Array) -> np.ndarray:
    metadata_column = column.field("metadata").to_pylist()
    value_column = column.field("value").to_pylist()
    valid = column.is_valid().to_pylist()
    dictionaries: dict[bytes, ve.VariantMetadata] = {}
    keep = np.zeros(len(column), dtype=bool)
    comparable = condition.value_type.comparable
    for row, (present, metadata, value) in enumerate(zip(valid, metadata_column, value_column, strict=True)):
        found: Any = None
        if present and metadata is not None and value:
            dictionary = dictionaries.get(metadata)
            if dictionary is None:
                dictionary = dictionaries[metadata] = ve.VariantMetadata(metadata)
            found = comparable(value_at(dictionary, value, condition.path))
        keep[row] = compare(condition.operation, found, condition.literals)
    return keep


def _spatial_rows(condition: SpatialCondition, column: pa.Array, *, geography: bool) -> np.ndarray:
    if pa.types.is_struct(column.type):  # Spark's form: a struct of srid and wkb
        column = column.field("wkb")
    points = _little_endian_points(column)
    if points is not None:
        return _points_meet(condition, points, column.is_valid().to_numpy(zero_copy_only=False), geography=geography)
    keep = np.zeros(len(column), dtype=bool)
    for row, wkb in enumerate(column.to_pylist()):
        if wkb is None:
            continue
        try:
            box = wkb_box(wkb, geography=geography)
        except ValueError as error:
            raise CorruptFileError(f"a geo value does not decode as WKB ({error})") from None
        meets = box is not None and intersects(box, condition.box, wraps=geography)
        keep[row] = meets if condition.intersects else not meets
    return keep


_POINT = np.dtype([("order", "u1"), ("kind", "<u4"), ("x", "<f8"), ("y", "<f8")])


def _little_endian_points(column: pa.Array) -> np.ndarray | None:
    """Every non-NULL value's x and y when all are little-endian 2D WKB points (one record each, NULLs as NaN);
    None otherwise (the values are then read one by one)."""
    present = column.drop_null()
    if not len(present) or pc.min(pc.binary_length(present)).as_py() != _POINT.itemsize:
        return None
    if pc.max(pc.binary_length(present)).as_py() != _POINT.itemsize:
        return None
    records = np.frombuffer(b"".join(present.to_pylist()), dtype=_POINT)
    if (records["order"] != 1).any() or (records["kind"] != 1).any():
        return None
    points = np.full((len(column), 2), np.nan)
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    points[valid, 0], points[valid, 1] = records["x"], records["y"]
    return points


def _points_meet(condition: SpatialCondition, points: np.ndarray, valid: np.ndarray, *, geography: bool) -> np.ndarray:
    """The box test on points at once (module doc, step 2); a point with a NaN coordinate is empty."""
    box = condition.box
    x, y = points[:, 0], points[:, 1]
    with np.errstate(invalid="ignore"):
        in_y = (y >= box.ymin) & (y <= box.ymax)
        if geography and box.xmin > box.xmax:
            in_x = (x >= box.xmin) | (x <= box.xmax)
        else:
            in_x = (x >= box.xmin) & (x <= box.xmax)
    meets = in_x & in_y  # NaN compares false: an empty point meets nothing
    return meets if condition.intersects else valid & ~meets
