"""A written Parquet file's Iceberg column metrics: pyiceberg's, completed for format v3's types.

pyiceberg's ``data_file_statistics_from_parquet_metadata`` maps every Parquet leaf column to a field id and
aggregates its statistics under the table's metrics modes. It knows neither the variant type (two leaves,
``metadata`` and ``value``, under one field id) nor bounds for geo columns (Parquet keeps geospatial statistics
apart). ``file_statistics``:

1. Maps a variant's ``metadata`` leaf to the variant's field id, counts only (a row's variant is null exactly when
   its required ``metadata`` is), and its ``value`` leaf to nothing; like Iceberg Java, no size and no bounds for an
   unshredded variant.
2. Counts geometry and geography columns itself (pyarrow writes no plain statistics for them, only geospatial
   ones): value counts, sizes, null counts where the chunks carry them; a geometry column gets the bounds the
   spec defines from the file's geospatial statistics when every row group has them: the lower bound
   the point (xmin, ymin[, zmin][, mmin]), the upper (xmax, ymax[, zmax][, mmax]), little-endian doubles (z NaN
   when only m is known). Geography bounds (whose x range may wrap around the antimeridian) are left out.
3. Bounds of nanosecond timestamps from the chunks' raw INT64 statistics (pyiceberg takes pyarrow's Python
   values, which stop at microseconds: an upper bound below the largest value would prune rows away).
4. Everything else as pyiceberg computes it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from typing import Any

import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import (
    MetricModeTypes,
    MetricsMode,
    StatisticsCollector,
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
)
from pyiceberg.schema import Schema
from pyiceberg.types import BinaryType, GeographyType, GeometryType, TimestampNanoType, TimestamptzNanoType

from spark_jobs.engine.shared.iceberg_model import is_variant

_IGNORED_LEAF = -1  # a stand-in field id for leaves no metric is kept for
_COUNTS = MetricsMode(MetricModeTypes.COUNTS)
_WITH_BOUNDS = (MetricModeTypes.TRUNCATE, MetricModeTypes.FULL)
_NO_GEOMETRY: list[float] = []  # a chunk's box when it holds no geometry


def file_statistics(metadata: pq.FileMetaData, schema: Schema, properties: dict[str, str]) -> dict[str, Any]:
    """The metrics of a file written with ``schema`` (it stores every field), serialized (module doc)."""
    plan = compute_statistics_plan(schema, properties)
    paths = parquet_path_to_id_mapping(schema)
    variants = {field_id for field_id, collector in plan.items() if is_variant(collector.iceberg_type)}
    geo = {
        field_id: collector
        for field_id, collector in plan.items()
        if isinstance(collector.iceberg_type, GeometryType | GeographyType)
    }
    for path, field_id in list(paths.items()):
        if field_id in variants:
            del paths[path]
            paths[f"{path}.metadata"] = field_id
            paths[f"{path}.value"] = _IGNORED_LEAF
            collector = plan[field_id]
            if collector.mode.type != MetricModeTypes.NONE:
                plan[field_id] = StatisticsCollector(field_id, collector.iceberg_type, _COUNTS, collector.column_name)
        elif field_id in geo:
            paths[path] = _IGNORED_LEAF
    plan[_IGNORED_LEAF] = StatisticsCollector(_IGNORED_LEAF, BinaryType(), MetricsMode(MetricModeTypes.NONE), "")
    statistics = data_file_statistics_from_parquet_metadata(
        parquet_metadata=metadata, stats_columns=plan, parquet_column_mapping=paths
    ).to_serialized_dict()
    for field_id in (_IGNORED_LEAF, *variants):
        statistics["column_sizes"].pop(field_id, None)
    nanos = {
        field_id
        for field_id, collector in plan.items()
        if isinstance(collector.iceberg_type, TimestampNanoType | TimestamptzNanoType)
        and collector.mode.type in _WITH_BOUNDS
    }
    if nanos:
        _set_nanosecond_bounds(statistics, metadata, paths, nanos)
    if geo:
        _add_geo_metrics(
            statistics, metadata, {path: f for path, f in parquet_path_to_id_mapping(schema).items() if f in geo}, geo
        )
    return statistics


def _set_nanosecond_bounds(
    statistics: dict[str, Any], metadata: pq.FileMetaData, paths: dict[str, int], field_ids: set[int]
) -> None:
    """Exact bounds of nanosecond timestamp columns (module doc, step 3); none where a chunk has no statistics."""
    lowest: dict[int, int] = {}
    highest: dict[int, int] = {}
    unknown: set[int] = set()
    for field_id, column in _chunks_of(metadata, paths, field_ids):
        if not column.is_stats_set or not column.statistics.has_min_max:
            if not (column.is_stats_set and column.statistics.null_count == column.num_values):
                unknown.add(field_id)
            continue
        low, high = column.statistics.min_raw, column.statistics.max_raw
        lowest[field_id] = min(low, lowest.get(field_id, low))
        highest[field_id] = max(high, highest.get(field_id, high))
    for field_id in field_ids:
        statistics["lower_bounds"].pop(field_id, None)
        statistics["upper_bounds"].pop(field_id, None)
        if field_id in lowest and field_id not in unknown:
            statistics["lower_bounds"][field_id] = struct.pack("<q", lowest[field_id])
            statistics["upper_bounds"][field_id] = struct.pack("<q", highest[field_id])


def _chunks_of(metadata: pq.FileMetaData, paths: dict[str, int], field_ids: set[int]) -> Iterator[tuple[int, Any]]:
    """(field id, column chunk) of every row group's chunks of the columns of ``field_ids``."""
    for index in range(metadata.num_row_groups):
        row_group = metadata.row_group(index)
        for position in range(row_group.num_columns):
            column = row_group.column(position)
            field_id = paths.get(column.path_in_schema)
            if field_id in field_ids:
                yield field_id, column


def _add_geo_metrics(
    statistics: dict[str, Any], metadata: pq.FileMetaData, paths: dict[str, int], geo: dict[int, StatisticsCollector]
) -> None:
    """Geo columns' sizes, counts and (geometry) bounds into ``statistics`` (module doc, step 2)."""
    nulls: dict[int, int | None] = {}
    for field_id, column in _chunks_of(metadata, paths, set(paths.values())):
        sizes = statistics["column_sizes"]
        sizes[field_id] = sizes.get(field_id, 0) + column.total_compressed_size
        if geo[field_id].mode.type == MetricModeTypes.NONE:
            continue
        counts = statistics["value_counts"]
        counts[field_id] = counts.get(field_id, 0) + column.num_values
        known = column.is_stats_set and column.statistics.has_null_count
        so_far = nulls.get(field_id, 0)
        nulls[field_id] = so_far + column.statistics.null_count if known and so_far is not None else None
    statistics["null_value_counts"].update({f: count for f, count in nulls.items() if count is not None})
    geometries = {
        f
        for f, c in geo.items()
        if isinstance(c.iceberg_type, GeometryType)
        and c.mode.type not in (MetricModeTypes.NONE, MetricModeTypes.COUNTS)
    }
    for field_id, (lower, upper) in _geometry_bounds(metadata, paths, geometries).items():
        statistics["lower_bounds"][field_id] = lower
        statistics["upper_bounds"][field_id] = upper


def _geometry_bounds(
    metadata: pq.FileMetaData, paths: dict[str, int], field_ids: set[int]
) -> dict[int, tuple[bytes, bytes]]:
    """Field id -> (lower, upper) bound of each geometry column whose every row group has a bounding box."""
    if not field_ids:
        return {}
    boxes: dict[int, list[float]] = {}
    missing: set[int] = set()
    for field_id, column in _chunks_of(metadata, paths, field_ids):
        box = _box_of(column)
        if box is _NO_GEOMETRY:
            continue
        if box is None:
            missing.add(field_id)
        elif field_id in boxes:
            boxes[field_id] = [
                min(a, b) if i % 2 == 0 else max(a, b)
                for i, (a, b) in enumerate(zip(boxes[field_id], box, strict=True))
            ]
        else:
            boxes[field_id] = box
    return {field_id: _serialized(box) for field_id, box in boxes.items() if field_id not in missing}


def _box_of(column: Any) -> list[float] | None:
    """[xmin, xmax, ymin, ymax, zmin, zmax, mmin, mmax] of a column chunk's geospatial statistics (NaN where a
    dimension is absent); ``_NO_GEOMETRY`` for a chunk of nulls only (pyarrow records no type and no bound);
    None without x and y bounds."""
    stats = getattr(column, "geo_statistics", None)
    if stats is None:
        return None
    if stats.geospatial_types is None and stats.xmin is None and stats.xmax is None:
        return _NO_GEOMETRY
    values = [stats.xmin, stats.xmax, stats.ymin, stats.ymax, stats.zmin, stats.zmax, stats.mmin, stats.mmax]
    if any(value is None or math.isnan(value) for value in values[:4]) or values[0] > values[1]:
        return None
    return [math.nan if value is None else float(value) for value in values]


def _serialized(box: list[float]) -> tuple[bytes, bytes]:
    """The spec's bound points of a box: x, y, then z and m where known (z NaN when only m is)."""
    xmin, xmax, ymin, ymax, zmin, zmax, mmin, mmax = box
    has_z, has_m = not math.isnan(zmin), not math.isnan(mmin)
    lower, upper = [xmin, ymin], [xmax, ymax]
    if has_z or has_m:
        lower.append(zmin)
        upper.append(zmax)
    if has_m:
        lower.append(mmin)
        upper.append(mmax)
    return struct.pack(f"<{len(lower)}d", *lower), struct.pack(f"<{len(upper)}d", *upper)
