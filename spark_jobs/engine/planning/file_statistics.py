"""Column statistics of many files at once: per field id, one array a file, decoded from the manifest columns.

A manifest holds each file's statistics as maps from field id to a count or to a bound's bytes
(``value_counts``, ``null_value_counts``, ``nan_value_counts``, ``lower_bounds``, ``upper_bounds``). A filter
names a few fields; for each of them:

1. Counts: the map's entries whose key is the field id, scattered to their files (``present`` says which files
   have one).
2. Bounds: the same, then the bytes decoded as the spec's single-value serialization, as pyiceberg's
   ``conversions.from_bytes`` decodes them: fixed-width little-endian numbers (ints, longs, dates, times,
   timestamps, floats, doubles; a 4-byte bound of a long or double column comes from before a type promotion)
   become numpy arrays; UTF-8 strings an object array of ``str``; every other type (decimal, UUID, binary, fixed,
   types added later) goes value by value through ``from_bytes`` itself.
3. Each array is decoded once per set of files and kept (``FileStatistics`` is built per manifest and filter).

Bounds the spec's serialization cannot hold are errors as in pyiceberg (a string that is not UTF-8, a length no
type has): the files' statistics are not what their manifest says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.conversions import from_bytes
from pyiceberg.types import (
    BooleanType,
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

# Little-endian numpy dtypes of fixed-width bounds by their byte width, per Iceberg type.
_INTEGER_WIDTHS = {4: "<i4", 8: "<i8"}
_FLOAT_WIDTHS = {4: "<f4", 8: "<f8"}
_NUMERIC_DTYPES: dict[type[IcebergType], dict[int, str]] = {
    IntegerType: {4: "<i4"},
    DateType: {4: "<i4"},
    LongType: _INTEGER_WIDTHS,
    TimeType: {8: "<i8"},
    TimestampType: {8: "<i8"},
    TimestamptzType: {8: "<i8"},
    TimestampNanoType: {8: "<i8"},
    TimestamptzNanoType: {8: "<i8"},
    FloatType: {4: "<f4"},
    DoubleType: _FLOAT_WIDTHS,
    BooleanType: {1: "u1"},
}


@dataclass(frozen=True)
class Counts:
    """One count per file (0 where absent) and whether the file has one."""

    values: np.ndarray
    present: np.ndarray

    def get_equals(self, expected: int) -> np.ndarray:
        """Files whose count is present and equal to ``expected`` (pyiceberg's ``counts.get(id) == expected``)."""
        return self.present & (self.values == expected)

    def truthy(self) -> np.ndarray:
        """Files whose count is present and non-zero (pyiceberg's walrus tests on counts)."""
        return self.present & (self.values != 0)


@dataclass(frozen=True)
class Bounds:
    """One decoded bound per file and whether the file has one; ``is_nan`` marks NaN float bounds."""

    values: np.ndarray  # numeric dtype, or object (absent entries hold a placeholder of the right type)
    present: np.ndarray
    is_nan: np.ndarray


class FileStatistics:
    """The statistics of every entry of manifest columns, per field id, decoded on first use."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table
        self.num_files = table.num_rows
        self._parents: dict[str, np.ndarray] = {}
        self._maps: dict[str, pa.MapArray] = {}
        self._counts: dict[tuple[str, int], Counts] = {}
        self._bounds: dict[tuple[str, int], Bounds] = {}

    def counts(self, name: str, field_id: int) -> Counts:
        """``value_counts``, ``null_value_counts`` or ``nan_value_counts`` of one field (module doc, step 1)."""
        key = (name, field_id)
        found = self._counts.get(key)
        if found is None:
            rows, values = self._entries_for(name, field_id)
            counts = np.zeros(self.num_files, dtype=np.int64)
            present = np.zeros(self.num_files, dtype=bool)
            counts[rows] = values.fill_null(0).to_numpy(zero_copy_only=False)
            present[rows] = values.is_valid().to_numpy(zero_copy_only=False)
            found = self._counts[key] = Counts(counts, present)
        return found

    def bounds(self, name: str, field_id: int, field_type: PrimitiveType) -> Bounds:
        """``lower_bounds`` or ``upper_bounds`` of one field, decoded as its type (module doc, step 2)."""
        key = (name, field_id)
        found = self._bounds.get(key)
        if found is None:
            rows, values = self._entries_for(name, field_id)
            found = self._bounds[key] = _decode_bounds(self.num_files, rows, values, field_type)
        return found

    def raw_bounds(self, name: str, field_id: int) -> list[bytes | None]:
        """``lower_bounds`` or ``upper_bounds`` of one field as the manifest holds them, one per file (None: none);
        for types whose bounds are not single values (variant, geometry, geography)."""
        rows, values = self._entries_for(name, field_id)
        raw: list[bytes | None] = [None] * self.num_files
        for row, value in zip(rows.tolist(), values.to_pylist(), strict=True):
            raw[row] = value
        return raw

    def _entries_for(self, name: str, field_id: int) -> tuple[np.ndarray, pa.Array]:
        """The files that have an entry for ``field_id`` in map column ``name``, and the entries' values."""
        column = self._maps.get(name)
        if column is None:
            column = self._maps[name] = self._table.column(name).combine_chunks()
        offsets = column.offsets.to_numpy(zero_copy_only=False)
        start, end = int(offsets[0]), int(offsets[-1])
        if start == end:
            return np.zeros(0, dtype=np.int64), pa.array([], column.type.item_type)
        parents = self._parents.get(name)
        if parents is None:
            parents = self._parents[name] = np.repeat(np.arange(self.num_files), np.diff(offsets))
        keys = column.keys.slice(start, end - start).to_numpy(zero_copy_only=False)
        matches = np.flatnonzero(keys == field_id)
        items = column.items.slice(start, end - start)
        return parents[matches], items.take(pa.array(matches))


def _decode_bounds(num_files: int, rows: np.ndarray, values: pa.Array, field_type: PrimitiveType) -> Bounds:
    present = np.zeros(num_files, dtype=bool)
    present[rows] = values.is_valid().to_numpy(zero_copy_only=False)
    rows = rows[values.is_valid().to_numpy(zero_copy_only=False)]
    values = values.drop_null()
    widths = _NUMERIC_DTYPES.get(type(field_type))
    if widths is not None:
        decoded = _decode_fixed_width(num_files, rows, values, widths, field_type)
        if decoded is not None:
            return decoded
    if isinstance(field_type, StringType):
        strings = np.full(num_files, "", dtype=object)
        strings[rows] = np.asarray([bytes(value).decode("utf-8") for value in values.to_pylist()], dtype=object)
        return Bounds(strings, present, np.zeros(num_files, dtype=bool))
    decoded_values: list[Any] = [from_bytes(field_type, value) for value in values.to_pylist()]
    placeholder = decoded_values[0] if decoded_values else None
    objects = np.full(num_files, placeholder, dtype=object)
    if decoded_values:
        objects[rows] = np.asarray([*decoded_values, None], dtype=object)[:-1]
    is_nan = np.zeros(num_files, dtype=bool)
    return Bounds(objects, present, is_nan)


def _decode_fixed_width(
    num_files: int, rows: np.ndarray, values: pa.Array, widths: dict[int, str], field_type: PrimitiveType
) -> Bounds | None:
    """Fixed-width bounds as numbers; None when a bound's width is not one the type has (decoded one by one)."""
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False) if len(values) else np.zeros(0, int)
    if not set(np.unique(lengths).tolist()) <= set(widths):
        return None
    floating = isinstance(field_type, (FloatType, DoubleType))
    numbers = np.zeros(num_files, dtype=np.float64 if floating else np.int64)
    data = _contiguous_bytes(values)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    for width, dtype in widths.items():
        chosen = np.flatnonzero(lengths == width)
        if not len(chosen):
            continue
        if len(chosen) == len(lengths):  # every bound has this width: the bytes are the numbers back to back
            decoded = np.frombuffer(data.tobytes(), dtype=dtype)
        else:
            picked = (starts[chosen][:, None] + np.arange(width)).ravel()
            decoded = np.frombuffer(data[picked].tobytes(), dtype=dtype)
        numbers[rows[chosen]] = decoded.astype(numbers.dtype)
    present = np.zeros(num_files, dtype=bool)
    present[rows] = True
    if isinstance(field_type, BooleanType):
        return Bounds(numbers != 0, present, np.zeros(num_files, dtype=bool))
    is_nan = np.isnan(numbers) if floating else np.zeros(num_files, dtype=bool)
    return Bounds(numbers, present, is_nan)


def _contiguous_bytes(values: pa.Array) -> np.ndarray:
    """The bytes of a binary array's values, back to back, as a uint8 array."""
    _, offsets_buffer, data_buffer = values.buffers()[:3]
    if data_buffer is None or offsets_buffer is None or not len(values):
        return np.zeros(0, dtype=np.uint8)
    offset_type = np.int64 if pa.types.is_large_binary(values.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=offset_type)[values.offset : values.offset + len(values) + 1]
    return np.frombuffer(data_buffer, dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
