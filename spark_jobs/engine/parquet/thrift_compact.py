"""A small reader (and writer) of the Thrift compact protocol, enough for Parquet's footer, page index and bloom
filter headers.

Parquet stores its metadata as Thrift structs in the compact protocol; pyarrow parses the footer but exposes
neither the page index nor bloom filter headers, so we decode those structs ourselves. The reader is generic: a
struct becomes a ``dict`` from field id to value, without a schema.

1. A struct is a sequence of field headers: one byte whose high nibble is the field-id delta (0 means a zigzag
   varint id follows) and whose low nibble is the value type; a zero byte ends the struct.
2. Booleans live in the field header's type nibble (1 = true, 2 = false); i16/i32/i64 are zigzag varints; a double
   is 8 little-endian bytes; binary is a varint length plus bytes.
3. A list or set starts with one byte: element count in the high nibble (15 = a varint count follows) and element
   type in the low nibble; list booleans are one byte each (1 = true).
4. A map starts with a varint count and, when non-empty, one byte of key type (high) and value type (low).
5. ``list_element_spans`` finds where each struct of a top-level list field lies in a buffer (to copy it unchanged);
   ``CompactWriter`` writes structs of i32, i64, binary, lists and nested structs, field ids ascending.
"""

from __future__ import annotations

import struct
from typing import Any

from spark_jobs.engine.shared.errors import CorruptFileError

_TYPE_BOOLEAN_TRUE = 1
_TYPE_BOOLEAN_FALSE = 2
_TYPE_BYTE = 3
_TYPE_I16 = 4
_TYPE_I32 = 5
_TYPE_I64 = 6
_TYPE_DOUBLE = 7
_TYPE_BINARY = 8
_TYPE_LIST = 9
_TYPE_SET = 10
_TYPE_MAP = 11
_TYPE_STRUCT = 12
_MAX_NESTING = 64


class CompactReader:
    """Decodes Thrift compact-protocol values from a bytes buffer, tracking the read position."""

    def __init__(self, buffer: bytes | memoryview, position: int = 0, *, source: str = "<buffer>") -> None:
        self.buffer = memoryview(buffer)
        self.position = position
        self.source = source  # named in errors: which file and structure was being decoded

    def read_struct(self, depth: int = 0) -> dict[int, Any]:
        """Read one struct: a dict from field id to its decoded value."""
        if depth > _MAX_NESTING:
            raise CorruptFileError(f"{self.source}: Thrift structs nested deeper than {_MAX_NESTING}")
        values: dict[int, Any] = {}
        field_id = 0
        while True:
            header = self._read_byte()
            if header == 0:
                return values
            delta, value_type = header >> 4, header & 0x0F
            field_id = field_id + delta if delta else _zigzag(self._read_varint())
            if value_type == _TYPE_BOOLEAN_TRUE:
                values[field_id] = True
            elif value_type == _TYPE_BOOLEAN_FALSE:
                values[field_id] = False
            else:
                values[field_id] = self._read_value(value_type, depth)

    def _read_value(self, value_type: int, depth: int) -> Any:
        if value_type in (_TYPE_I16, _TYPE_I32, _TYPE_I64):
            return _zigzag(self._read_varint())
        if value_type == _TYPE_BINARY:
            length = self._read_varint()
            return self._read_bytes(length)
        if value_type == _TYPE_STRUCT:
            return self.read_struct(depth + 1)
        if value_type in (_TYPE_LIST, _TYPE_SET):
            return self._read_list(depth)
        if value_type == _TYPE_BYTE:
            return struct.unpack("b", self._read_bytes(1))[0]
        if value_type == _TYPE_DOUBLE:
            return struct.unpack("<d", self._read_bytes(8))[0]
        if value_type == _TYPE_MAP:
            return self._read_map(depth)
        if value_type in (_TYPE_BOOLEAN_TRUE, _TYPE_BOOLEAN_FALSE):  # a list element boolean: one byte
            return self._read_byte() == _TYPE_BOOLEAN_TRUE
        raise CorruptFileError(f"{self.source}: unknown Thrift compact type {value_type} at byte {self.position}")

    def _read_list(self, depth: int) -> list[Any]:
        header = self._read_byte()
        size, element_type = header >> 4, header & 0x0F
        if size == 15:
            size = self._read_varint()
        if element_type in (_TYPE_BOOLEAN_TRUE, _TYPE_BOOLEAN_FALSE):
            return [self._read_byte() == _TYPE_BOOLEAN_TRUE for _ in range(size)]
        return [self._read_value(element_type, depth + 1) for _ in range(size)]

    def _read_map(self, depth: int) -> dict[Any, Any]:
        size = self._read_varint()
        if size == 0:
            return {}
        types = self._read_byte()
        key_type, value_type = types >> 4, types & 0x0F
        return {self._read_value(key_type, depth + 1): self._read_value(value_type, depth + 1) for _ in range(size)}

    def _read_varint(self) -> int:
        result = 0
        shift = 0
        while True:
            byte = self._read_byte()
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7
            if shift > 70:
                raise CorruptFileError(f"{self.source}: Thrift varint longer than 10 bytes at byte {self.position}")

    def _read_byte(self) -> int:
        if self.position >= len(self.buffer):
            raise CorruptFileError(f"{self.source}: Thrift data ends early at byte {self.position}")
        byte = self.buffer[self.position]
        self.position += 1
        return byte

    def _read_bytes(self, length: int) -> bytes:
        end = self.position + length
        if length < 0 or end > len(self.buffer):
            raise CorruptFileError(
                f"{self.source}: Thrift value of {length} bytes runs past the end at {self.position}"
            )
        value = bytes(self.buffer[self.position : end])
        self.position = end
        return value


def _zigzag(value: int) -> int:
    """Decode a zigzag-encoded integer (0, -1, 1, -2, ... are 0, 1, 2, 3, ...)."""
    return (value >> 1) ^ -(value & 1)


def read_struct(buffer: bytes | memoryview, *, source: str = "<buffer>") -> tuple[dict[int, Any], int]:
    """Decode one struct at the start of ``buffer``; return it with the number of bytes it took."""
    reader = CompactReader(buffer, source=source)
    return reader.read_struct(), reader.position


def list_element_spans(buffer: bytes | memoryview, field_id: int, *, source: str = "<buffer>") -> list[tuple[int, int]]:
    """(start, end) of each element of the list field ``field_id`` of the struct at the start of ``buffer``."""
    reader = CompactReader(buffer, source=source)
    current = 0
    while True:
        header = reader._read_byte()
        if header == 0:
            return []
        delta, value_type = header >> 4, header & 0x0F
        current = current + delta if delta else _zigzag(reader._read_varint())
        if value_type in (_TYPE_BOOLEAN_TRUE, _TYPE_BOOLEAN_FALSE):
            continue
        if current != field_id or value_type != _TYPE_LIST:
            reader._read_value(value_type, 0)
            continue
        list_header = reader._read_byte()
        size, element_type = list_header >> 4, list_header & 0x0F
        if size == 15:
            size = reader._read_varint()
        spans = []
        for _ in range(size):
            start = reader.position
            reader._read_value(element_type, 1)
            spans.append((start, reader.position))
        return spans


class CompactWriter:
    """Builds one Thrift compact-protocol struct; fields must be added in ascending id order."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self._last_field_id = 0

    def i32(self, field_id: int, value: int) -> CompactWriter:
        """An i32 field."""
        self._field_header(field_id, _TYPE_I32)
        self._varint(_to_zigzag(value))
        return self

    def i64(self, field_id: int, value: int) -> CompactWriter:
        """An i64 field."""
        self._field_header(field_id, _TYPE_I64)
        self._varint(_to_zigzag(value))
        return self

    def binary(self, field_id: int, value: bytes) -> CompactWriter:
        """A binary (or string) field."""
        self._field_header(field_id, _TYPE_BINARY)
        self._varint(len(value))
        self.buffer += value
        return self

    def struct(self, field_id: int, value: CompactWriter) -> CompactWriter:
        """A struct field, from a finished writer."""
        self._field_header(field_id, _TYPE_STRUCT)
        self.buffer += value.finish()
        return self

    def i32_list(self, field_id: int, values: list[int]) -> CompactWriter:
        """A list<i32> field."""
        self._list_header(field_id, _TYPE_I32, len(values))
        for value in values:
            self._varint(_to_zigzag(value))
        return self

    def binary_list(self, field_id: int, values: list[bytes]) -> CompactWriter:
        """A list<binary> field."""
        self._list_header(field_id, _TYPE_BINARY, len(values))
        for value in values:
            self._varint(len(value))
            self.buffer += value
        return self

    def struct_list(self, field_id: int, encoded_structs: list[bytes]) -> CompactWriter:
        """A list<struct> field of structs already encoded (each ending with its stop byte)."""
        self._list_header(field_id, _TYPE_STRUCT, len(encoded_structs))
        for encoded in encoded_structs:
            self.buffer += encoded
        return self

    def finish(self) -> bytes:
        """The struct's bytes, stop byte included."""
        return bytes(self.buffer) + b"\x00"

    def _field_header(self, field_id: int, value_type: int) -> None:
        delta = field_id - self._last_field_id
        if not 0 < delta <= 15:
            raise ValueError(f"Thrift fields must be written in ascending id order within 15: {field_id}")
        self.buffer.append((delta << 4) | value_type)
        self._last_field_id = field_id

    def _list_header(self, field_id: int, element_type: int, size: int) -> None:
        self._field_header(field_id, _TYPE_LIST)
        if size < 15:
            self.buffer.append((size << 4) | element_type)
        else:
            self.buffer.append(0xF0 | element_type)
            self._varint(size)

    def _varint(self, value: int) -> None:
        while value >= 0x80:
            self.buffer.append((value & 0x7F) | 0x80)
            value >>= 7
        self.buffer.append(value)


def _to_zigzag(value: int) -> int:
    """Zigzag-encode a signed 64-bit integer."""
    return (value << 1) ^ (value >> 63)
