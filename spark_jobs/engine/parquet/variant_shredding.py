"""A variant column of a data file, shredded or not, as the engine's unshredded variant Arrow column.

Parquet stores a variant as a group of ``metadata`` and ``value``; a shredded one (VariantShredding.md) also has
``typed_value``: a column of one primitive type, a group of object fields (each again ``value`` / ``typed_value``)
or a list of such elements, with ``value`` holding what did not fit the typed column. Iceberg Java 1.12 writes
shredded variants when ``write.parquet.shred-variants`` is set. Per row:

1. No ``typed_value`` in the file: the ``metadata`` and ``value`` columns are the variant as they are (no copy).
2. ``typed_value`` null: ``value`` is the variant (for a nested object field, both null means the field is absent).
3. ``typed_value`` a primitive: encoded as the variant primitive of its Parquet type (int8 -> int8, decimal(p, s)
   -> decimal4/8/16 by precision, timestamps by unit and zone, string, binary, uuid, ...).
4. ``typed_value`` an object: its shredded fields (steps 2-5 recursively) together with the fields of the object in
   ``value`` (a partially shredded object), keys taken from the row's metadata dictionary and appended to it when
   missing there.
5. ``typed_value`` a list: an array of its elements (steps 2-5 recursively).
A top-level row whose group is null is a null variant (SQL NULL); one with neither value is the variant null.
"""

from __future__ import annotations

import struct

import pyarrow as pa

from spark_jobs.engine.shared import variant_encoding as ve
from spark_jobs.engine.shared.arrow_types import VARIANT_ARROW_TYPE
from spark_jobs.engine.shared.errors import CorruptFileError

_INTEGER_KINDS = {8: ve.INT8, 16: ve.INT16, 32: ve.INT32, 64: ve.INT64}


def is_shredded(array: pa.Array) -> bool:
    """True when the file's variant group has a ``typed_value`` column."""
    return array.type.get_field_index("typed_value") >= 0


def unshredded_variant(array: pa.Array, source: str) -> pa.Array:
    """The engine's variant column (``struct<metadata, value>``) of a file's variant group (module doc)."""
    metadata_column = array.field("metadata")
    if not is_shredded(array):
        value_column = array.field("value").cast(pa.binary())
        values = value_column.fill_null(ve.NULL_VALUE) if value_column.null_count else value_column
        return pa.StructArray.from_arrays(
            [metadata_column.cast(pa.binary()), values], fields=list(VARIANT_ARROW_TYPE), mask=_null_mask(array)
        )
    try:
        dictionaries = _row_dictionaries(metadata_column.to_pylist())
        values = _reassembled(array, dictionaries)
    except (ve.VariantError, IndexError, struct.error, UnicodeDecodeError) as error:
        raise CorruptFileError(f"{source}: a shredded variant column does not decode ({error})") from error
    is_null = array.is_null().to_pylist()
    metadata_out = [
        None if null else dictionary.to_bytes() for null, dictionary in zip(is_null, dictionaries, strict=True)
    ]
    value_out = [None if null else (value or ve.NULL_VALUE) for null, value in zip(is_null, values, strict=True)]
    return pa.StructArray.from_arrays(
        [pa.array(metadata_out, pa.binary()), pa.array(value_out, pa.binary())],
        fields=list(VARIANT_ARROW_TYPE),
        mask=_null_mask(array),
    )


def _null_mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _row_dictionaries(encoded: list[bytes | None]) -> list[ve.VariantMetadata]:
    """One metadata dictionary per row, shared between rows with the same bytes (appended keys included)."""
    shared: dict[bytes, ve.VariantMetadata] = {}
    empty = ve.EMPTY_METADATA
    return [shared.setdefault(item or empty, ve.VariantMetadata(item or empty)) for item in encoded]


def _reassembled(group: pa.Array, dictionaries: list[ve.VariantMetadata]) -> list[bytes | None]:
    """Each row's encoded value of a ``value`` / ``typed_value`` group; None where both are null."""
    value_index = group.type.get_field_index("value")
    values = group.field(value_index).to_pylist() if value_index >= 0 else [None] * len(group)
    typed_index = group.type.get_field_index("typed_value")
    if typed_index < 0:
        return values
    typed = group.field(typed_index)
    typed_values = _typed_values(typed, values, dictionaries)
    return [
        typed_value if typed_value is not None else value
        for value, typed_value in zip(values, typed_values, strict=True)
    ]


def _typed_values(
    typed: pa.Array, values: list[bytes | None], dictionaries: list[ve.VariantMetadata]
) -> list[bytes | None]:
    if pa.types.is_struct(typed.type):
        return _objects(typed, values, dictionaries)
    if pa.types.is_list(typed.type) or pa.types.is_large_list(typed.type):
        return _arrays(typed, dictionaries)
    return _primitives(typed)


def _objects(typed: pa.Array, values: list[bytes | None], dictionaries: list[ve.VariantMetadata]) -> list[bytes | None]:
    shredded = {field.name: _reassembled(typed.field(field.name), dictionaries) for field in typed.type}
    present = typed.is_valid().to_pylist()
    objects: list[bytes | None] = []
    for row, dictionary in enumerate(dictionaries):
        if not present[row]:
            objects.append(None)
            continue
        fields: dict[str, bytes] = {}
        residual = values[row]
        if residual is not None and residual[0] & 0x03 == ve.OBJECT:
            for key, start in ve.object_fields(dictionary, residual):
                fields[key] = residual[start : start + ve.value_length(residual, start)]
        for name, column in shredded.items():
            shredded_value = column[row]
            if shredded_value is not None:
                fields[name] = shredded_value
        objects.append(ve.encode_object(dictionary, fields))
    return objects


def _arrays(typed: pa.Array, dictionaries: list[ve.VariantMetadata]) -> list[bytes | None]:
    offsets = typed.offsets.to_pylist()
    element_rows = [row for row in range(len(typed)) for _ in range(offsets[row + 1] - offsets[row])]
    elements = typed.values.slice(offsets[0], offsets[-1] - offsets[0])
    encoded = _reassembled(elements, [dictionaries[row] for row in element_rows])
    present = typed.is_valid().to_pylist()
    return [
        ve.encode_array(
            [item or ve.NULL_VALUE for item in encoded[offsets[row] - offsets[0] : offsets[row + 1] - offsets[0]]]
        )
        if present[row]
        else None
        for row in range(len(typed))
    ]


def _primitives(typed: pa.Array) -> list[bytes | None]:
    """Each row's typed value as a variant primitive (module doc, step 3); None where null."""
    arrow_type = typed.type
    if isinstance(arrow_type, pa.BaseExtensionType):
        typed, arrow_type = typed.storage, arrow_type.storage_type
    kind, scale = _kind_of(arrow_type)
    if pa.types.is_temporal(arrow_type):
        raw = typed.view(pa.int32() if kind == ve.DATE else pa.int64()).to_pylist()
        fmt = "<i" if kind == ve.DATE else "<q"
        return [None if item is None else bytes([kind << 2]) + struct.pack(fmt, item) for item in raw]
    return [None if item is None else ve.encode_primitive(kind, item, scale) for item in typed.to_pylist()]


def _kind_of(arrow_type: pa.DataType) -> tuple[int, int]:
    """The variant primitive type id (and decimal scale) a shredded column of ``arrow_type`` holds."""
    if pa.types.is_boolean(arrow_type):
        return ve.TRUE, 0
    if pa.types.is_integer(arrow_type):
        return _INTEGER_KINDS[arrow_type.bit_width], 0
    if pa.types.is_float32(arrow_type):
        return ve.FLOAT, 0
    if pa.types.is_float64(arrow_type):
        return ve.DOUBLE, 0
    if pa.types.is_decimal(arrow_type):
        kind = ve.DECIMAL4 if arrow_type.precision <= 9 else ve.DECIMAL8 if arrow_type.precision <= 18 else ve.DECIMAL16
        return kind, arrow_type.scale
    if pa.types.is_date32(arrow_type):
        return ve.DATE, 0
    if pa.types.is_timestamp(arrow_type):
        nanos = arrow_type.unit == "ns"
        if arrow_type.tz is not None:
            return (ve.TIMESTAMPTZ_NANOS if nanos else ve.TIMESTAMPTZ), 0
        return (ve.TIMESTAMP_NTZ_NANOS if nanos else ve.TIMESTAMP_NTZ), 0
    if pa.types.is_time64(arrow_type):
        return ve.TIME_NTZ, 0
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return ve.STRING, 0
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return ve.BINARY, 0
    if pa.types.is_fixed_size_binary(arrow_type) and arrow_type.byte_width == 16:
        return ve.UUID, 0
    raise ve.VariantError(f"a shredded variant column of Arrow type {arrow_type}, which Variant has no type for")
