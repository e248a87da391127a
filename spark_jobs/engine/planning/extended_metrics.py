"""Which files' metrics allow a match of a variant-path comparison or a geo box test (the forms of
``filter_parsing``), one boolean per file as ``metrics_filter`` decides for pyiceberg's predicates.

1. A file whose column holds only nulls matches neither form (a NULL variant or geo value is NULL under both), but
   for ``IS NULL`` on a path.
2. Variant: the manifest's lower and upper bounds of the column are variant objects keyed by normalized JSON path
   (``$['a']['b']``), each holding the bound of that field over the file (the spec's "Bounds for Variant"). A
   comparison rules a file out only when the path's bound is of the kind the comparison's type compares (numbers
   with numbers...) and lies beyond the literal as the operation needs; ``!=``, NOT IN and ``IS [NOT] NULL`` on a
   path never rule a file out by bounds. A missing bound, a path with an array index, or a bound of another
   kind keeps the file.
3. Geometry and geography: the bounds are the corner points of a box holding every value (x, y[, z, m]); a file
   whose box does not meet the envelope cannot hold an intersecting value. For a geography, an x lower bound above
   the upper one wraps the antimeridian (``geo_boxes.intersects``). ``st_disjoint`` is never ruled out by bounds
   (an empty geometry has no box yet is disjoint from everything).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from spark_jobs.engine.planning.file_statistics import FileStatistics
from spark_jobs.engine.shared import variant_encoding as ve
from spark_jobs.engine.shared.extended_predicates import BoundSpatialPredicate, BoundVariantPathPredicate
from spark_jobs.engine.shared.geo_boxes import Box, bound_point, intersects
from spark_jobs.engine.shared.variant_paths import bound_value, bounds_rule_out


def variant_path_may_match(
    statistics: FileStatistics, predicate: BoundVariantPathPredicate, nulls_only: np.ndarray
) -> np.ndarray:
    """For each file, False when its metrics prove no row's path value matches (module doc, steps 1 and 2)."""
    condition = predicate.condition
    if condition.operation == "is_null":
        return np.ones(statistics.num_files, dtype=bool)
    may_match = ~nulls_only
    key = condition.bound_key
    if key is None:
        return may_match
    field_id = predicate.term.ref().field.field_id
    lowers = statistics.raw_bounds("lower_bounds", field_id)
    uppers = statistics.raw_bounds("upper_bounds", field_id)
    dictionaries: dict[bytes, ve.VariantMetadata] = {}
    for index in np.flatnonzero(may_match):
        lower = _path_bound(lowers[index], key, condition.value_type.comparable, dictionaries)
        upper = _path_bound(uppers[index], key, condition.value_type.comparable, dictionaries)
        may_match[index] = not bounds_rule_out(condition.operation, lower, upper, condition.literals)
    return may_match


def _path_bound(
    serialized: bytes | None,
    key: str,
    comparable: Callable[[Any], Any],
    dictionaries: dict[bytes, ve.VariantMetadata],
) -> Any:
    """The bound of one path in the comparison's domain; None when absent or of another kind."""
    if serialized is None:
        return None
    try:
        return comparable(bound_value(serialized, key, dictionaries))
    except ValueError:
        return None  # a bound this reader cannot decode proves nothing


def spatial_may_match(
    statistics: FileStatistics, predicate: BoundSpatialPredicate, nulls_only: np.ndarray
) -> np.ndarray:
    """For each file, False when its box cannot meet the envelope (module doc, steps 1 and 3)."""
    may_match = ~nulls_only
    condition = predicate.condition
    if not condition.intersects:
        return may_match
    field_id = predicate.term.ref().field.field_id
    lowers = statistics.raw_bounds("lower_bounds", field_id)
    uppers = statistics.raw_bounds("upper_bounds", field_id)
    for index in np.flatnonzero(may_match):
        lower_bytes, upper_bytes = lowers[index], uppers[index]
        lower = bound_point(lower_bytes) if lower_bytes is not None else None
        upper = bound_point(upper_bytes) if upper_bytes is not None else None
        if lower is None or upper is None or any(math.isnan(value) for value in (*lower, *upper)):
            continue
        if not predicate.is_geography and lower[0] > upper[0]:
            continue  # not a box a geometry column can have: proves nothing
        file_box = Box(lower[0], lower[1], upper[0], upper[1])
        may_match[index] = intersects(file_box, condition.box, wraps=predicate.is_geography)
    return may_match
