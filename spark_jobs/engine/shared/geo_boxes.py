"""Bounding boxes of geometry and geography values, and whether two of them intersect.

A row filter ``st_intersects(col, st_makeenvelope(xmin, ymin, xmax, ymax))`` compares boxes:

1. A row's box comes from its WKB (ISO or extended WKB, 2D/Z/M/ZM, every geometry type): x and y ranges of its
   coordinates, NaN skipped; an empty geometry (or one of only NaN) has no box and intersects nothing. For a
   geography the x range is the shortest arc of longitudes holding every vertex, so it may wrap the antimeridian
   (xmin > xmax), as the Iceberg spec lets geography bounds do.
2. A file's box comes from its manifest bounds (``bound_point``: x, y[, z, m] little-endian doubles).
3. ``intersects`` treats an x range with xmin > xmax as the two ranges [xmin, 180] and [-180, xmax] (geography
   only: the spec says such an object may match if it contains an x >= xmin or <= xmax); y ranges never wrap.
   Ranges touching at an edge intersect.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

_WKB_TYPES = 7  # point .. geometry collection


@dataclass(frozen=True)
class Box:
    """An x range (which may wrap for geography) and a y range."""

    xmin: float
    ymin: float
    xmax: float
    ymax: float


def bound_point(encoded: bytes) -> tuple[float, float] | None:
    """The x and y of a geo bound (Iceberg's bound serialization); None when it is not 16, 24 or 32 bytes."""
    if len(encoded) not in (16, 24, 32):
        return None
    x, y = struct.unpack_from("<dd", encoded)
    return x, y


def _x_ranges(box: Box, wraps: bool) -> list[tuple[float, float]]:
    if box.xmin <= box.xmax or not wraps:
        return [(box.xmin, box.xmax)]
    return [(box.xmin, math.inf), (-math.inf, box.xmax)]


def intersects(first: Box, second: Box, *, wraps: bool) -> bool:
    """True when the boxes share a point (module doc, step 3); ``wraps``: x ranges may cross the antimeridian."""
    if first.ymin > second.ymax or second.ymin > first.ymax:
        return False
    return any(
        low <= other_high and other_low <= high
        for low, high in _x_ranges(first, wraps)
        for other_low, other_high in _x_ranges(second, wraps)
    )


def wkb_box(wkb: bytes, *, geography: bool) -> Box | None:
    """The box of one WKB value (module doc, step 1); None when it has no coordinates. ValueError if malformed."""
    xs: list[float] = []
    ys: list[float] = []
    try:
        _read_geometry(memoryview(wkb), 0, xs, ys)
    except (struct.error, IndexError) as error:
        raise ValueError(f"malformed WKB ({error})") from None
    if not xs or not ys:
        return None
    if geography:
        xmin, xmax = _shortest_arc(xs)
    else:
        xmin, xmax = min(xs), max(xs)
    return Box(xmin, min(ys), xmax, max(ys))


def _shortest_arc(longitudes: list[float]) -> tuple[float, float]:
    """The smallest range of longitudes (possibly wrapping: start > end) holding every one."""
    ordered = sorted(set(longitudes))
    gap, start = (ordered[0] + 360.0) - ordered[-1], 0  # the gap across the antimeridian
    for index in range(1, len(ordered)):
        if ordered[index] - ordered[index - 1] > gap:
            gap, start = ordered[index] - ordered[index - 1], index
    return ordered[start], ordered[start - 1]


def _read_geometry(data: memoryview, offset: int, xs: list[float], ys: list[float]) -> int:
    """Append the geometry's coordinates at ``offset``; returns the offset after it."""
    order = "<" if data[offset] == 1 else ">"
    (code,) = struct.unpack_from(order + "I", data, offset + 1)
    offset += 5
    has_z, has_m = bool(code & 0x80000000), bool(code & 0x40000000)
    if code & 0x20000000:  # extended WKB: an SRID follows
        offset += 4
    code &= 0x0FFFFFFF
    dimension_code, kind = divmod(code, 1000)
    has_z = has_z or dimension_code in (1, 3)
    has_m = has_m or dimension_code in (2, 3)
    if not 1 <= kind <= _WKB_TYPES:
        raise ValueError(f"WKB geometry type {code} is not one of the OGC types 1-7")
    width = 2 + has_z + has_m
    point = struct.Struct(order + "d" * width)
    count = struct.Struct(order + "I")

    def points(start: int, number: int) -> int:
        for index in range(number):
            x, y = point.unpack_from(data, start + index * point.size)[:2]
            if not math.isnan(x):
                xs.append(x)
            if not math.isnan(y):
                ys.append(y)
        return start + number * point.size

    if kind == 1:
        return points(offset, 1)
    (number,) = count.unpack_from(data, offset)
    offset += 4
    if kind == 2:
        return points(offset, number)
    if kind == 3:
        for _ in range(number):
            (ring,) = count.unpack_from(data, offset)
            offset = points(offset + 4, ring)
        return offset
    for _ in range(number):  # multi-geometries and collections hold whole WKB geometries
        offset = _read_geometry(data, offset, xs, ys)
    return offset
