"""Boxes of WKB values and their intersection, across the antimeridian for geography."""

from __future__ import annotations

import math
import struct

import pytest

from spark_jobs.engine.shared.geo_boxes import Box, bound_point, intersects, wkb_box


def point(x: float, y: float, order: str = "<") -> bytes:
    return struct.pack(order + "BIdd", 1 if order == "<" else 0, 1, x, y)


def line(points: list[tuple[float, ...]], code: int = 2) -> bytes:
    width = len(points[0])
    return struct.pack("<BII", 1, code, len(points)) + b"".join(struct.pack("<" + "d" * width, *p) for p in points)


def test_boxes_of_every_kind_of_geometry():
    assert wkb_box(point(1, 2), geography=False) == Box(1, 2, 1, 2)
    assert wkb_box(point(1, 2, ">"), geography=False) == Box(1, 2, 1, 2)  # big-endian
    assert wkb_box(line([(0, 5), (3, -1)]), geography=False) == Box(0, -1, 3, 5)
    assert wkb_box(line([(0, 5, 9), (3, -1, 9)], code=1002), geography=False) == Box(0, -1, 3, 5)  # Z
    ring = struct.pack("<I", 3) + b"".join(struct.pack("<dd", *p) for p in [(0, 0), (4, 1), (0, 0)])
    polygon = struct.pack("<BII", 1, 3, 1) + ring
    collection = struct.pack("<BII", 1, 7, 2) + polygon + point(-2, 8)
    assert wkb_box(collection, geography=False) == Box(-2, 0, 4, 8)
    assert wkb_box(struct.pack("<BII", 1, 4, 0), geography=False) is None  # empty multipoint
    assert wkb_box(point(math.nan, math.nan), geography=False) is None  # POINT EMPTY
    with pytest.raises(ValueError, match="malformed WKB"):
        wkb_box(point(1, 2)[:10], geography=False)


def test_a_geography_takes_the_shortest_arc_of_longitudes():
    across = line([(179.0, 1.0), (-179.0, 2.0)])
    assert wkb_box(across, geography=True) == Box(179.0, 1.0, -179.0, 2.0)
    assert wkb_box(across, geography=False) == Box(-179.0, 1.0, 179.0, 2.0)


@pytest.mark.parametrize(
    ("first", "second", "wraps", "expected"),
    [
        (Box(0, 0, 1, 1), Box(1, 1, 2, 2), False, True),  # touching corners
        (Box(0, 0, 1, 1), Box(1.5, 0, 2, 1), False, False),
        (Box(0, 0, 1, 1), Box(0, 1.5, 1, 2), False, False),
        (Box(170, 0, -170, 1), Box(175, 0, 176, 1), True, True),  # the west part of a wrapped box
        (Box(170, 0, -170, 1), Box(-175, 0, -174, 1), True, True),  # the east part
        (Box(170, 0, -170, 1), Box(0, 0, 10, 1), True, False),
        (Box(170, 0, -170, 1), Box(160, 0, -175, 1), True, True),  # both wrap
    ],
)
def test_boxes_intersect_across_the_antimeridian_when_they_may_wrap(first, second, wraps, expected):
    assert intersects(first, second, wraps=wraps) is expected
    assert intersects(second, first, wraps=wraps) is expected


def test_bound_points_read_x_and_y_of_every_serialized_width():
    assert bound_point(struct.pack("<dd", 1, 2)) == (1, 2)
    assert bound_point(struct.pack("<dddd", 1, 2, math.nan, 4)) == (1, 2)
    assert bound_point(b"\x00" * 8) is None
