"""Z-order values: each column's order-preserving byte form, their bits interleaved, as Iceberg Java computes them.

Java's ``ZOrderByteUtils`` and ``SparkZOrderUDF``, vectorized over Arrow arrays with numpy:

1. Byte form of each column (every null is all zero bytes, as Java's ``PRIMITIVE_EMPTY``):
   - integers of any width: the value as a long XOR ``0x8000000000000000`` (sign bit flipped), 8 bytes big-endian;
   - floats and doubles: the double's IEEE bits (every NaN as the canonical ``0x7ff8000000000000``, as
     ``Double.doubleToLongBits``); negative numbers get every bit flipped, others the sign bit; 8 bytes big-endian;
   - strings (and UUIDs, which Spark reads as their text): UTF-8, cut at ``var-length-contribution`` bytes (a
     character that does not fit whole is left out, as Java's ``CharsetEncoder`` does) and right-padded with zeros;
     binary and fixed: cut or zero-padded to ``var-length-contribution`` bytes;
   - booleans: ``0x81`` for true, ``0x00`` for false, then seven zero bytes;
   - timestamps with zone: whole seconds since the epoch, floored (Spark's cast of a timestamp to long), as a long;
     timestamps without zone: microseconds, as a long (Java's ``TIMESTAMP_NTZ`` form);
   - dates: days since the epoch, as a long (see below).
2. Interleaving (``ZOrderByteUtils.interleaveBits``): output bits are taken from the columns in turn, most
   significant first (bit 7 of byte 0 of column 0, of column 1, ..., then bit 6 of byte 0 of each column, ...); a
   column without a byte at the current position is skipped. The output is the sum of the byte forms' widths, capped
   at ``max-output-size`` bytes. Values compare as unsigned bytes, lexicographically.
3. Types Java refuses (decimal, time, nested types) are refused with Java's message.

Where this differs from Iceberg Java 1.10.2, on purpose:
- Dates: Spark 3.5 casts a date to long as null (non-ANSI), so Java gives every date the same zero bytes and a date
  column does not order anything. Here a date contributes its days since the epoch, which keeps it ordered.
- Doubles: 1.10.2 builds the flip mask with ``lval >> 31`` instead of ``lval >> 63`` (corrected upstream since), which
  does not preserve the order of every double; here the corrected form.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyarrow as pa
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    UUIDType,
)

from spark_jobs.engine.shared.errors import UserInputError

PRIMITIVE_BUFFER_SIZE = 8
DEFAULT_VAR_LENGTH_CONTRIBUTION = PRIMITIVE_BUFFER_SIZE
DEFAULT_MAX_OUTPUT_SIZE = 2**31 - 1  # Java's Integer.MAX_VALUE: every byte interleaved
_SIGN_BIT = np.uint64(0x8000000000000000)
_CANONICAL_NAN_BITS = np.int64(0x7FF8000000000000)
_LONG_MIN = np.int64(-(2**63))
_FIXED_WIDTH_TYPES = (
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    BooleanType,
    DateType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
)
_VARIABLE_WIDTH_TYPES = (StringType, UUIDType, BinaryType, FixedType)


def check_zorder_type(table_name: str, column: str, field_type: IcebergType) -> None:
    """Refuse a column type z-order has no byte form for (step 3), with Java's wording."""
    if not isinstance(field_type, _FIXED_WIDTH_TYPES + _VARIABLE_WIDTH_TYPES):
        raise UserInputError(
            f"table {table_name}: cannot use column {column} of type {field_type} in ZOrdering, the type is unsupported"
        )


def byte_width(field_type: IcebergType, var_length_contribution: int) -> int:
    """How many bytes a column of this type contributes."""
    return var_length_contribution if isinstance(field_type, _VARIABLE_WIDTH_TYPES) else PRIMITIVE_BUFFER_SIZE


def ordered_bytes(
    values: pa.Array | pa.ChunkedArray, field_type: IcebergType, var_length_contribution: int
) -> np.ndarray:
    """The byte form of every value (module doc, step 1): a ``(rows, width)`` uint8 matrix."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(field_type, BooleanType):
        return _boolean_bytes(values)
    if isinstance(field_type, (FloatType, DoubleType)):
        return _double_bytes(values)
    if isinstance(field_type, (StringType, UUIDType)):
        return _string_bytes(
            _uuid_text(values) if isinstance(field_type, UUIDType) else values, var_length_contribution
        )
    if isinstance(field_type, (BinaryType, FixedType)):
        return _truncated_or_filled(values, var_length_contribution)
    return _long_bytes(_as_longs(values, field_type), values.is_null().to_numpy(zero_copy_only=False))


def interleave_bits(columns: list[np.ndarray], output_size: int) -> np.ndarray:
    """Interleave the columns' bits (module doc, step 2) into a ``(rows, output_size)`` uint8 matrix."""
    widths = tuple(column.shape[1] for column in columns)
    order = _interleave_order(widths, output_size)
    bits = np.unpackbits(np.concatenate(columns, axis=1), axis=1)
    return np.packbits(bits[:, order], axis=1)


def zorder_values(
    columns: list[pa.Array | pa.ChunkedArray],
    field_types: list[IcebergType],
    *,
    var_length_contribution: int = DEFAULT_VAR_LENGTH_CONTRIBUTION,
    max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE,
) -> pa.FixedSizeBinaryArray:
    """The z-order value of every row of ``columns`` as fixed-width binary (compared as unsigned bytes)."""
    forms = [
        ordered_bytes(column, field_type, var_length_contribution)
        for column, field_type in zip(columns, field_types, strict=True)
    ]
    output_size = output_width(field_types, var_length_contribution, max_output_size)
    interleaved = interleave_bits(forms, output_size)
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(output_size), len(interleaved), [None, pa.py_buffer(np.ascontiguousarray(interleaved))]
    )


def output_width(field_types: list[IcebergType], var_length_contribution: int, max_output_size: int) -> int:
    """The interleaved value's width: the sum of the columns' widths, at most ``max_output_size``."""
    return min(sum(byte_width(t, var_length_contribution) for t in field_types), max_output_size)


@lru_cache(maxsize=64)
def _interleave_order(widths: tuple[int, ...], output_size: int) -> np.ndarray:
    """For each output bit, its index in the concatenated input bits (Java's loop, run once per shape)."""
    offsets = np.cumsum((0, *widths))[:-1] * 8
    order = np.empty(output_size * 8, dtype=np.int64)
    column, source_byte, source_bit = 0, 0, 7
    for position in range(output_size * 8):
        order[position] = offsets[column] + source_byte * 8 + (7 - source_bit)
        if position == output_size * 8 - 1:
            break
        while True:
            column += 1
            if column == len(widths):
                column = 0
                source_bit -= 1
                if source_bit == -1:
                    source_byte += 1
                    source_bit = 7
            if widths[column] > source_byte:
                break
    return order


def _as_longs(values: pa.Array, field_type: IcebergType) -> np.ndarray:
    """Integers, dates and timestamps as the long Java orders them by (nulls as 0, masked later)."""
    if pa.types.is_timestamp(values.type):
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[values.type.unit]
        raw = values.cast(pa.int64()).fill_null(0).to_numpy()
        if isinstance(field_type, (TimestamptzType, TimestamptzNanoType)):
            return np.floor_divide(raw, per_second)
        return (
            np.floor_divide(raw, per_second // 1_000_000) if per_second > 1_000_000 else raw * (1_000_000 // per_second)
        )
    if pa.types.is_date(values.type):
        values = values.cast(pa.int32())
    return values.cast(pa.int64()).fill_null(0).to_numpy()


def _long_bytes(longs: np.ndarray, nulls: np.ndarray) -> np.ndarray:
    flipped = longs.astype(np.int64).view(np.uint64) ^ _SIGN_BIT
    matrix = flipped.astype(">u8").view(np.uint8).reshape(-1, PRIMITIVE_BUFFER_SIZE).copy()
    matrix[nulls] = 0
    return matrix


def _double_bytes(values: pa.Array) -> np.ndarray:
    doubles = values.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    bits = doubles.view(np.int64).copy()
    bits[np.isnan(doubles)] = _CANONICAL_NAN_BITS
    bits ^= (bits >> np.int64(63)) | _LONG_MIN
    matrix = bits.view(np.uint64).astype(">u8").view(np.uint8).reshape(-1, PRIMITIVE_BUFFER_SIZE).copy()
    matrix[values.is_null().to_numpy(zero_copy_only=False)] = 0
    return matrix


def _boolean_bytes(values: pa.Array) -> np.ndarray:
    matrix = np.zeros((len(values), PRIMITIVE_BUFFER_SIZE), dtype=np.uint8)
    matrix[:, 0] = np.where(values.fill_null(False).to_numpy(zero_copy_only=False), 0x81, 0x00)
    return matrix


def _byte_matrix(values: pa.Array, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The first ``width`` bytes of each binary value, zero-padded; with the values' offsets, lengths and data."""
    binary = values.cast(pa.large_binary())
    _, offsets_buffer, data_buffer = binary.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[binary.offset : binary.offset + len(binary) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    lengths = np.where(binary.is_null().to_numpy(zero_copy_only=False), 0, lengths)
    positions = np.arange(width)
    present = positions[None, :] < lengths[:, None]
    index = np.where(present, starts[:, None] + positions[None, :], 0)
    matrix = np.where(present, data[index] if len(data) else 0, 0).astype(np.uint8)
    return matrix, starts, lengths, data


def _truncated_or_filled(values: pa.Array, width: int) -> np.ndarray:
    return _byte_matrix(values, width)[0]


def _string_bytes(values: pa.Array, width: int) -> np.ndarray:
    """UTF-8 bytes cut at a character boundary within ``width``, zero-padded."""
    matrix, starts, lengths, data = _byte_matrix(values, width)
    cut = np.flatnonzero(lengths > width)
    if len(cut):
        first_left_out = data[starts[cut] + width]
        straddling = cut[(first_left_out & 0xC0) == 0x80]  # the character at the cut continues past it
        if len(straddling):
            rows = matrix[straddling]
            is_lead = (rows & 0xC0) != 0x80
            last_lead = width - 1 - np.argmax(is_lead[:, ::-1], axis=1)
            rows[np.arange(width)[None, :] >= last_lead[:, None]] = 0
            matrix[straddling] = rows
    return matrix


def _uuid_text(values: pa.Array) -> pa.Array:
    """UUIDs as Spark reads them: lower-case text with dashes."""
    import uuid

    raw = values.cast(pa.binary(16)) if not pa.types.is_fixed_size_binary(values.type) else values
    return pa.array([None if v is None else str(uuid.UUID(bytes=v)) for v in raw.to_pylist()], pa.string())
