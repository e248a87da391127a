"""Leaf columns by field id, and raw Parquet bounds decoded into the comparable domain."""

from __future__ import annotations

import struct
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.types import FixedType, FloatType, StringType, UUIDType

from spark_jobs.engine.parquet.file_columns import comparable_literal, decode_plain, decode_raw, file_leaf_columns


def _field(name: str, arrow_type: pa.DataType, field_id: int, nullable: bool = True) -> pa.Field:
    return pa.field(name, arrow_type, nullable=nullable, metadata={b"PARQUET:field_id": str(field_id).encode()})


def _leaves(schema: pa.Schema):
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    parquet_file = pq.ParquetFile(pa.BufferReader(sink.getvalue()))
    return file_leaf_columns(parquet_file.schema, parquet_file.schema_arrow)


def test_leaves_carry_field_ids_top_level_ids_and_repetition() -> None:
    map_type = pa.map_(_field("key", pa.string(), 5, nullable=False), _field("value", pa.int32(), 6))
    leaves = _leaves(
        pa.schema(
            [
                _field("id", pa.int64(), 1),
                _field("point", pa.struct([_field("x", pa.float64(), 3), _field("y", pa.float64(), 4)]), 2),
                _field("tags", map_type, 7),
                _field("items", pa.list_(_field("element", pa.int32(), 9)), 8),
            ]
        )
    )
    assert [(leaf.field_id, leaf.top_level_field_id, leaf.is_repeated) for leaf in leaves] == [
        (1, 1, False),
        (3, 2, False),
        (4, 2, False),
        (5, 7, True),
        (6, 7, True),
        (9, 8, True),
    ]
    assert [leaf.index for leaf in leaves] == list(range(6))


def test_raw_bounds_decode_per_logical_type() -> None:
    leaves = {
        leaf.path: leaf
        for leaf in _leaves(
            pa.schema(
                [
                    _field("dec_fixed", pa.decimal128(20, 3), 1),
                    _field("ts_ms", pa.timestamp("ms"), 2),
                    _field("ts_ns", pa.timestamp("ns", tz="UTC"), 3),
                    _field("t_ms", pa.time32("ms"), 4),
                    _field("f", pa.float32(), 5),
                    _field("s", pa.string(), 6),
                    _field("u8", pa.uint8(), 7),
                ]
            )
        )
    }
    assert decode_raw((-1234).to_bytes(9, "big", signed=True), leaves["dec_fixed"], False) == Decimal("-1.234")
    assert decode_raw(5, leaves["ts_ms"], False) == 5000
    assert decode_raw(1500, leaves["ts_ns"], False) == 1
    assert decode_raw(1500, leaves["ts_ns"], True) == 2  # an upper bound rounds up
    assert decode_raw(7, leaves["t_ms"], False) == 7000
    assert decode_raw(float("nan"), leaves["f"], False) is None
    assert decode_raw(b"abc", leaves["s"], False) == b"abc"
    assert decode_raw(200, leaves["u8"], False) is None  # unsigned order: never compared
    assert decode_plain(struct.pack("<f", 1.5), leaves["f"]) == 1.5
    assert decode_plain(b"xyz", leaves["s"]) == b"xyz"


def test_literals_take_the_same_domain() -> None:
    assert comparable_literal("é", StringType()) == "é".encode()
    assert comparable_literal(b"\x01" * 16, UUIDType()) == b"\x01" * 16
    assert comparable_literal(b"ab", FixedType(2)) == b"ab"
    assert comparable_literal(0.1, FloatType()) == struct.unpack("<f", struct.pack("<f", 0.1))[0]
