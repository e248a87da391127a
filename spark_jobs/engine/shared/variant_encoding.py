"""The Parquet Variant binary encoding (VariantEncoding.md, version 1): read values, write primitives and objects.

A variant is two byte strings: the metadata (a dictionary of object keys) and the value. Used where the engine
meets variant bytes: reassembling shredded columns (``parquet.variant_shredding``) and reading the variant bounds
Iceberg stores in manifests (``planning.variant_bounds``).

1. ``VariantMetadata`` decodes a metadata dictionary and appends keys it lacks (clearing the sorted flag when an
   appended key breaks the order), re-encoding only when something was appended.
2. ``decode`` turns a value into Python: None, bool, int, float, ``Decimal``, str, bytes, ``date``,
   ``datetime`` (aware for the timestamptz kinds), ``time``, ``UUID``, ``VariantTimestampNanos`` for nanosecond
   timestamps, dict (objects) and list (arrays). ``primitive_kind`` names a value's primitive type id.
3. ``encode_object`` and ``encode_array`` build containers from already encoded values; ``encode_primitive`` a
   primitive from a Python value and the kind to store it as.
"""

from __future__ import annotations

import datetime as dt
import struct
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

# Basic types (the low two bits of a value's header byte).
PRIMITIVE, SHORT_STRING, OBJECT, ARRAY = 0, 1, 2, 3
# Primitive type ids (the header's upper six bits when the basic type is PRIMITIVE).
NULL, TRUE, FALSE, INT8, INT16, INT32, INT64, DOUBLE = 0, 1, 2, 3, 4, 5, 6, 7
DECIMAL4, DECIMAL8, DECIMAL16, DATE, TIMESTAMPTZ, TIMESTAMP_NTZ, FLOAT = 8, 9, 10, 11, 12, 13, 14
BINARY, STRING, TIME_NTZ, TIMESTAMPTZ_NANOS, TIMESTAMP_NTZ_NANOS, UUID = 15, 16, 17, 18, 19, 20
NULL_VALUE = bytes([NULL])
EMPTY_METADATA = bytes([0x01, 0x00, 0x00])  # version 1, no keys
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_INT_FORMATS = {INT8: "<b", INT16: "<h", INT32: "<i", INT64: "<q"}


class VariantError(ValueError):
    """Bytes that are not a valid version 1 variant."""


@dataclass(frozen=True)
class VariantTimestampNanos:
    """A nanosecond timestamp held by a variant (Python's datetime stops at microseconds)."""

    nanos: int
    adjusted_to_utc: bool


class VariantMetadata:
    """A variant metadata dictionary: key by id, id by key; keys may be appended."""

    def __init__(self, encoded: bytes) -> None:
        if not encoded or encoded[0] & 0x0F != 1:
            raise VariantError(f"variant metadata of version {encoded[0] & 0x0F if encoded else None}, expected 1")
        self.encoded = encoded
        self.sorted = bool(encoded[0] & 0x10)
        size = (encoded[0] >> 6) + 1
        count = _uint(encoded, 1, size)
        offsets = [_uint(encoded, 1 + size * (i + 1), size) for i in range(count + 1)]
        start = 1 + size * (count + 2)
        self.keys = [encoded[start + offsets[i] : start + offsets[i + 1]].decode() for i in range(count)]
        self._ids = {key: index for index, key in enumerate(self.keys)}
        self._appended = False

    def key(self, field_id: int) -> str:
        """The key of dictionary entry ``field_id``."""
        return self.keys[field_id]

    def id_of(self, key: str) -> int:
        """The id of ``key``, appended to the dictionary when missing."""
        found = self._ids.get(key)
        if found is not None:
            return found
        if self.sorted and self.keys and key < self.keys[-1]:
            self.sorted = False
        self._ids[key] = len(self.keys)
        self.keys.append(key)
        self._appended = True
        return self._ids[key]

    def to_bytes(self) -> bytes:
        """The encoded dictionary (the original bytes when nothing was appended)."""
        if not self._appended:
            return self.encoded
        data = [key.encode() for key in self.keys]
        offsets = [0]
        for item in data:
            offsets.append(offsets[-1] + len(item))
        size = _width(max(offsets[-1], len(data)))
        header = 0x01 | (0x10 if self.sorted else 0) | ((size - 1) << 6)
        parts = [bytes([header]), len(data).to_bytes(size, "little")]
        parts += [offset.to_bytes(size, "little") for offset in offsets]
        return b"".join(parts) + b"".join(data)


def metadata_length(encoded: bytes) -> int:
    """The number of bytes of the metadata dictionary at the start of ``encoded`` (a value may follow it)."""
    size = (encoded[0] >> 6) + 1
    count = _uint(encoded, 1, size)
    return 1 + size * (count + 2) + _uint(encoded, 1 + size * (count + 1), size)


def primitive_kind(value: bytes) -> int | None:
    """The primitive type id of an encoded value (``STRING`` for a short string); None for objects and arrays."""
    basic = value[0] & 0x03
    if basic == SHORT_STRING:
        return STRING
    return value[0] >> 2 if basic == PRIMITIVE else None


def decode(metadata: VariantMetadata, value: bytes, offset: int = 0) -> Any:
    """The Python value of the variant value at ``value[offset:]`` (module doc, step 2)."""
    header = value[offset]
    basic, upper = header & 0x03, header >> 2
    if basic == SHORT_STRING:
        return value[offset + 1 : offset + 1 + upper].decode()
    if basic == OBJECT:
        return {key: decode(metadata, value, start) for key, start in object_fields(metadata, value, offset)}
    if basic == ARRAY:
        return [decode(metadata, value, start) for start in array_elements(value, offset)]
    return _decode_primitive(upper, value, offset + 1)


def object_fields(metadata: VariantMetadata, value: bytes, offset: int = 0) -> list[tuple[str, int]]:
    """(key, start of its value) of each field of the object at ``value[offset:]``, in key order."""
    upper = value[offset] >> 2
    offset_size, id_size, large = (upper & 0x03) + 1, ((upper >> 2) & 0x03) + 1, (upper >> 4) & 0x01
    count_size = 4 if large else 1
    count = _uint(value, offset + 1, count_size)
    ids_start = offset + 1 + count_size
    offsets_start = ids_start + count * id_size
    values_start = offsets_start + (count + 1) * offset_size
    return [
        (
            metadata.key(_uint(value, ids_start + i * id_size, id_size)),
            values_start + _uint(value, offsets_start + i * offset_size, offset_size),
        )
        for i in range(count)
    ]


def array_elements(value: bytes, offset: int = 0) -> list[int]:
    """The start of each element of the array at ``value[offset:]``."""
    upper = value[offset] >> 2
    offset_size, large = (upper & 0x03) + 1, (upper >> 2) & 0x01
    count_size = 4 if large else 1
    count = _uint(value, offset + 1, count_size)
    offsets_start = offset + 1 + count_size
    values_start = offsets_start + (count + 1) * offset_size
    return [values_start + _uint(value, offsets_start + i * offset_size, offset_size) for i in range(count)]


def value_length(value: bytes, offset: int = 0) -> int:
    """The number of bytes of the value at ``value[offset:]``."""
    header = value[offset]
    basic, upper = header & 0x03, header >> 2
    if basic == SHORT_STRING:
        return 1 + upper
    if basic in (OBJECT, ARRAY):
        large = (upper >> (4 if basic == OBJECT else 2)) & 0x01
        offset_size = (upper & 0x03) + 1
        count_size = 4 if large else 1
        count = _uint(value, offset + 1, count_size)
        id_size = ((upper >> 2) & 0x03) + 1 if basic == OBJECT else 0
        offsets_start = offset + 1 + count_size + count * id_size
        data_size = _uint(value, offsets_start + count * offset_size, offset_size)
        return offsets_start + (count + 1) * offset_size + data_size - offset
    return 1 + _primitive_size(upper, value, offset + 1)


def encode_object(metadata: VariantMetadata, fields: dict[str, bytes]) -> bytes:
    """An object of already encoded field values, keys resolved (or appended) in ``metadata``."""
    keys = sorted(fields)
    ids = [metadata.id_of(key) for key in keys]
    offsets = [0]
    for key in keys:
        offsets.append(offsets[-1] + len(fields[key]))
    id_size, offset_size = _width(max(ids, default=0)), _width(offsets[-1])
    large = len(keys) > 0xFF
    header = OBJECT | (((offset_size - 1) | ((id_size - 1) << 2) | (int(large) << 4)) << 2)
    parts = [bytes([header]), len(keys).to_bytes(4 if large else 1, "little")]
    parts += [field_id.to_bytes(id_size, "little") for field_id in ids]
    parts += [offset.to_bytes(offset_size, "little") for offset in offsets]
    return b"".join(parts) + b"".join(fields[key] for key in keys)


def encode_array(elements: list[bytes]) -> bytes:
    """An array of already encoded elements."""
    offsets = [0]
    for element in elements:
        offsets.append(offsets[-1] + len(element))
    offset_size, large = _width(offsets[-1]), len(elements) > 0xFF
    header = ARRAY | (((offset_size - 1) | (int(large) << 2)) << 2)
    parts = [bytes([header]), len(elements).to_bytes(4 if large else 1, "little")]
    parts += [offset.to_bytes(offset_size, "little") for offset in offsets]
    return b"".join(parts) + b"".join(elements)


def encode_primitive(kind: int, value: Any, scale: int = 0) -> bytes:
    """A primitive of type id ``kind`` holding ``value`` (as ``decode`` gives it; ``scale`` for decimals)."""
    if value is None or kind == NULL:
        return NULL_VALUE
    if kind in (TRUE, FALSE):
        return bytes([(TRUE if value else FALSE) << 2])
    head = bytes([kind << 2])
    if kind in _INT_FORMATS:
        return head + struct.pack(_INT_FORMATS[kind], value)
    if kind in (DOUBLE, FLOAT):
        return head + struct.pack("<d" if kind == DOUBLE else "<f", value)
    if kind in (DECIMAL4, DECIMAL8, DECIMAL16):
        unscaled = int(Decimal(value).scaleb(scale))
        width = {DECIMAL4: 4, DECIMAL8: 8, DECIMAL16: 16}[kind]
        return head + bytes([scale]) + unscaled.to_bytes(width, "little", signed=True)
    if kind == DATE:
        return head + struct.pack("<i", (value - _EPOCH_DATE).days)
    if kind in (TIMESTAMPTZ, TIMESTAMP_NTZ):
        naive = value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
        return head + struct.pack("<q", (naive - _EPOCH) // dt.timedelta(microseconds=1))
    if kind in (TIMESTAMPTZ_NANOS, TIMESTAMP_NTZ_NANOS):
        nanos = value.nanos if isinstance(value, VariantTimestampNanos) else int(value)
        return head + struct.pack("<q", nanos)
    if kind == TIME_NTZ:
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return head + struct.pack("<q", micros)
    if kind in (BINARY, STRING):
        data = value.encode() if isinstance(value, str) else bytes(value)
        if kind == STRING and len(data) < 64:
            return bytes([SHORT_STRING | (len(data) << 2)]) + data
        return head + struct.pack("<I", len(data)) + data
    if kind == UUID:
        return head + (value.bytes if isinstance(value, uuid.UUID) else bytes(value))
    raise VariantError(f"unknown variant primitive type id {kind}")


def _decode_primitive(kind: int, data: bytes, at: int) -> Any:
    if kind == NULL:
        return None
    if kind in (TRUE, FALSE):
        return kind == TRUE
    if kind in _INT_FORMATS:
        return struct.unpack_from(_INT_FORMATS[kind], data, at)[0]
    if kind in (DOUBLE, FLOAT):
        return struct.unpack_from("<d" if kind == DOUBLE else "<f", data, at)[0]
    if kind in (DECIMAL4, DECIMAL8, DECIMAL16):
        width = {DECIMAL4: 4, DECIMAL8: 8, DECIMAL16: 16}[kind]
        unscaled = int.from_bytes(data[at + 1 : at + 1 + width], "little", signed=True)
        return Decimal(unscaled).scaleb(-data[at])
    if kind == DATE:
        return _EPOCH_DATE + dt.timedelta(days=struct.unpack_from("<i", data, at)[0])
    if kind in (TIMESTAMPTZ, TIMESTAMP_NTZ):
        moment = _EPOCH + dt.timedelta(microseconds=struct.unpack_from("<q", data, at)[0])
        return moment.replace(tzinfo=dt.UTC) if kind == TIMESTAMPTZ else moment
    if kind in (TIMESTAMPTZ_NANOS, TIMESTAMP_NTZ_NANOS):
        return VariantTimestampNanos(struct.unpack_from("<q", data, at)[0], kind == TIMESTAMPTZ_NANOS)
    if kind == TIME_NTZ:
        micros = struct.unpack_from("<q", data, at)[0]
        return (dt.datetime.min + dt.timedelta(microseconds=micros)).time()
    if kind in (BINARY, STRING):
        length = struct.unpack_from("<I", data, at)[0]
        raw = data[at + 4 : at + 4 + length]
        return raw.decode() if kind == STRING else bytes(raw)
    if kind == UUID:
        return uuid.UUID(bytes=bytes(data[at : at + 16]))
    raise VariantError(f"unknown variant primitive type id {kind}")


def _primitive_size(kind: int, data: bytes, at: int) -> int:
    fixed = {NULL: 0, TRUE: 0, FALSE: 0, INT8: 1, INT16: 2, INT32: 4, INT64: 8, DOUBLE: 8, FLOAT: 4, DATE: 4}
    fixed |= {TIMESTAMPTZ: 8, TIMESTAMP_NTZ: 8, TIME_NTZ: 8, TIMESTAMPTZ_NANOS: 8, TIMESTAMP_NTZ_NANOS: 8, UUID: 16}
    fixed |= {DECIMAL4: 5, DECIMAL8: 9, DECIMAL16: 17}
    if kind in fixed:
        return fixed[kind]
    if kind in (BINARY, STRING):
        return 4 + struct.unpack_from("<I", data, at)[0]
    raise VariantError(f"unknown variant primitive type id {kind}")


def _uint(data: bytes, at: int, size: int) -> int:
    return int.from_bytes(data[at : at + size], "little")


def _width(largest: int) -> int:
    """The fewest bytes (1 to 4) that hold ``largest`` unsigned."""
    for size in (1, 2, 3):
        if largest < 1 << (8 * size):
            return size
    return 4
