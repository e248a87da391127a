"""The Parquet leaf columns of one file, resolved by Iceberg field id, and their raw values made comparable.

Statistics, page indexes and bloom filters are stored per leaf column in the file's physical type; predicates carry
Iceberg literals of the read schema's type. This module joins the two:

1. Walk the file's Arrow schema depth first (the order of Parquet leaves), reading ``PARQUET:field_id`` from each
   field, and pair each leaf with the Parquet column descriptor at the same index (physical and logical type).
2. Record for each leaf the id of its top-level field, whether it sits under a list or map (its statistics then
   describe elements, not rows), and its Iceberg type in the file schema.
3. ``decode_raw`` turns a raw physical value (statistics ``min_raw`` or a page index bound) into the comparable
   domain: integers for int/long/date/time (micros)/timestamp (micros), floats, ``Decimal`` for decimals, and bytes
   for strings (UTF-8 order equals code point order), binary, fixed and uuid. ``None`` means "cannot compare".
4. ``comparable_literal`` puts an Iceberg literal into the same domain.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.types import (
    BinaryType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    StringType,
    UUIDType,
)

FIELD_ID_KEY = b"PARQUET:field_id"


@dataclass(frozen=True)
class LeafColumn:
    """One Parquet leaf column with what pruning needs to interpret its statistics."""

    index: int  # position among the file's leaf columns (ColumnChunk index in each row group)
    field_id: int | None
    top_level_field_id: int | None
    path: str
    physical_type: str  # BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
    logical_type: str  # NONE, STRING, DECIMAL, DATE, TIME, TIMESTAMP, UUID, INT, JSON, ENUM, ...
    time_unit: str | None  # "milliseconds" / "microseconds" / "nanoseconds" for TIME and TIMESTAMP
    scale: int
    type_length: int
    is_repeated: bool  # under a list or map: statistics describe elements, not rows
    is_unsigned: bool = False  # an unsigned INT annotation: bounds use unsigned order, Iceberg has no such type

    @property
    def is_floating(self) -> bool:
        """True for FLOAT and DOUBLE columns, whose bounds ignore NaN."""
        return self.physical_type in ("FLOAT", "DOUBLE")


def file_leaf_columns(parquet_schema: pq.ParquetSchema, arrow_schema: pa.Schema) -> list[LeafColumn]:
    """The file's leaf columns in Parquet order, each paired with its field id and top-level field id."""
    leaf_ids: list[tuple[int | None, int | None, bool]] = []
    for top_field in arrow_schema:
        top_id = _field_id(top_field)
        _collect_leaf_ids(top_field, top_id, False, leaf_ids)
    if len(leaf_ids) != len(parquet_schema):
        raise ValueError(f"Arrow schema has {len(leaf_ids)} leaves, Parquet schema {len(parquet_schema)}")
    leaves = []
    for index, (field_id, top_id, repeated) in enumerate(leaf_ids):
        column = parquet_schema.column(index)
        logical = column.logical_type
        logical_details = json.loads(logical.to_json())
        leaves.append(
            LeafColumn(
                index=index,
                field_id=field_id,
                top_level_field_id=top_id,
                path=column.path,
                physical_type=column.physical_type,
                logical_type=logical.type,
                time_unit=logical_details.get("timeUnit"),
                is_unsigned=logical_details.get("isSigned") is False,
                scale=max(column.scale, 0),
                type_length=column.length,
                is_repeated=repeated or column.max_repetition_level > 0,
            )
        )
    return leaves


def _field_id(arrow_field: pa.Field) -> int | None:
    metadata = arrow_field.metadata or {}
    raw = metadata.get(FIELD_ID_KEY)
    return int(raw) if raw is not None else None


def _collect_leaf_ids(
    arrow_field: pa.Field, top_id: int | None, repeated: bool, out: list[tuple[int | None, int | None, bool]]
) -> None:
    arrow_type = arrow_field.type
    if isinstance(arrow_type, pa.BaseExtensionType):
        arrow_type = arrow_type.storage_type
    if pa.types.is_struct(arrow_type):
        for index in range(arrow_type.num_fields):
            _collect_leaf_ids(arrow_type.field(index), top_id, repeated, out)
    elif pa.types.is_map(arrow_type):
        _collect_leaf_ids(arrow_type.key_field, top_id, True, out)
        _collect_leaf_ids(arrow_type.item_field, top_id, True, out)
    elif pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        _collect_leaf_ids(arrow_type.value_field, top_id, True, out)
    else:
        out.append((_field_id(arrow_field), top_id, repeated))


_PLAIN_FORMATS = {"INT32": "<i", "INT64": "<q", "FLOAT": "<f", "DOUBLE": "<d"}


def decode_plain(encoded: bytes, leaf: LeafColumn) -> Any:
    """A raw physical value from its PLAIN bytes (page index bounds), as ``Statistics.min_raw`` would give it."""
    fmt = _PLAIN_FORMATS.get(leaf.physical_type)
    if fmt is not None:
        return struct.unpack(fmt, encoded)[0]
    if leaf.physical_type == "BOOLEAN":
        return bool(encoded[0]) if encoded else None
    if leaf.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        return bytes(encoded)
    return None  # INT96 and anything unknown: no ordering we trust


_TIME_UNIT_TO_MICROS = {"milliseconds": 1000, "microseconds": 1}


def decode_raw(raw: Any, leaf: LeafColumn, is_upper_bound: bool) -> Any:
    """A raw physical bound in the comparable domain, or None when it cannot be compared safely."""
    if raw is None:
        return None
    physical, logical = leaf.physical_type, leaf.logical_type
    if physical == "INT96" or leaf.is_unsigned or logical in ("ENUM", "JSON", "BSON", "INTERVAL", "UNKNOWN", "FLOAT16"):
        # INT96 has no usable order; unsigned ints and the rest have no Iceberg counterpart to compare with.
        return None
    if logical == "DECIMAL":
        unscaled = raw if isinstance(raw, int) else int.from_bytes(raw, "big", signed=True)
        return Decimal(unscaled).scaleb(-leaf.scale)
    if logical in ("TIME", "TIMESTAMP"):
        if leaf.time_unit == "nanoseconds":
            return -(-raw // 1000) if is_upper_bound else raw // 1000
        factor = _TIME_UNIT_TO_MICROS.get(leaf.time_unit or "")
        return raw * factor if factor else None
    if physical in ("FLOAT", "DOUBLE"):
        return None if math.isnan(raw) else float(raw)
    return raw


def comparable_literal(value: Any, iceberg_type: IcebergType) -> Any:
    """An Iceberg literal value in the domain ``decode_raw`` produces for the same column."""
    if isinstance(iceberg_type, StringType):
        return value.encode("utf-8") if isinstance(value, str) else value
    if isinstance(iceberg_type, (BinaryType, FixedType, UUIDType)):
        return value.bytes if hasattr(value, "bytes") else bytes(value)
    if isinstance(iceberg_type, FloatType):
        return struct.unpack("<f", struct.pack("<f", value))[0]  # float columns compare in 32-bit precision
    if isinstance(iceberg_type, DoubleType):
        return float(value)
    if isinstance(iceberg_type, DecimalType):
        return Decimal(value)
    return value
