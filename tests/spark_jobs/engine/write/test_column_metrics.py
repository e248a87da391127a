"""Column metrics of files holding format v3's types: variants counted once without bounds, geometry bounds from
the file's geospatial statistics as the spec's points, none for geography, nanosecond bounds as 8 bytes."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.types import GeographyType, GeometryType, LongType, NestedField, TimestampNanoType

from spark_jobs.engine.shared.arrow_types import VARIANT_ARROW_TYPE, WkbType, schema_to_arrow
from spark_jobs.engine.shared.iceberg_model import VariantType
from spark_jobs.engine.write.column_metrics import file_statistics

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "v", VariantType()),
    NestedField(3, "g", GeometryType()),
    NestedField(4, "gg", GeographyType()),
    NestedField(5, "tn", TimestampNanoType()),
)


def _point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def _wkb(values: list[bytes | None], wkb_type: WkbType) -> pa.ExtensionArray:
    return pa.ExtensionArray.from_storage(wkb_type, pa.array(values, pa.binary()))


def test_metrics_of_the_new_types(tmp_path) -> None:
    rows = pa.Table.from_arrays(
        [
            pa.array([1, 2, 3], pa.int64()),
            pa.array(
                [
                    {"metadata": b"\x01\x00\x00", "value": b"\x0c\x01"},
                    None,
                    {"metadata": b"\x01\x00\x00", "value": b"\x00"},
                ],
                VARIANT_ARROW_TYPE,
            ),
            _wkb([_point(-1.5, 2.0), _point(3.0, -4.0), None], WkbType("OGC:CRS84")),
            _wkb([_point(170.0, 1.0), None, None], WkbType("OGC:CRS84", "spherical")),
            pa.array([5, None, 1_000_000_000_000_000_001], pa.timestamp("ns")),
        ],
        schema=schema_to_arrow(SCHEMA),
    )
    path = tmp_path / "f.parquet"
    pq.write_table(rows, path, row_group_size=2)
    stats = file_statistics(pq.ParquetFile(path).metadata, SCHEMA, {})
    assert stats["value_counts"][2] == 3 and stats["null_value_counts"][2] == 1
    assert 2 not in stats["column_sizes"] and 2 not in stats["lower_bounds"]
    assert stats["value_counts"][3] == 3 and stats["column_sizes"][3] > 0
    assert stats["lower_bounds"][3] == struct.pack("<dd", -1.5, -4.0)
    assert stats["upper_bounds"][3] == struct.pack("<dd", 3.0, 2.0)
    assert 4 not in stats["lower_bounds"] and stats["value_counts"][4] == 3
    assert stats["lower_bounds"][5] == struct.pack("<q", 5)
    assert stats["upper_bounds"][5] == struct.pack("<q", 1_000_000_000_000_000_001)


def test_counts_mode_keeps_geometry_bounds_out(tmp_path) -> None:
    schema = Schema(NestedField(3, "g", GeometryType()))
    rows = pa.Table.from_arrays([_wkb([_point(1.0, 1.0)], WkbType("OGC:CRS84"))], schema=schema_to_arrow(schema))
    pq.write_table(rows, tmp_path / "f.parquet")
    stats = file_statistics(
        pq.ParquetFile(tmp_path / "f.parquet").metadata, schema, {"write.metadata.metrics.default": "counts"}
    )
    assert stats["lower_bounds"] == {} and stats["value_counts"] == {3: 1}
