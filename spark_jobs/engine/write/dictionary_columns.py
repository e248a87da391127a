"""Which Parquet columns a file dictionary-encodes: those where a dictionary is smaller than plain values.

Parquet writers start every column with a dictionary. parquet-mr (Iceberg Java's writer) gives it up after the first
page when the dictionary plus its indices are not smaller than the plain values; Arrow's writer only gives it up
when the dictionary page outgrows its limit, after hashing and encoding values into a dictionary it then discards.
Deciding up front, as parquet-mr decides after its first page, saves that work on high-cardinality columns.

1. A sample of the rows to write (their first ``SAMPLE_ROWS``) stands for the file's first page.
2. Each top-level column of a primitive type (not boolean) is measured over the sample: plain size (values, with
   4 length bytes each for strings and binary) against dictionary size (the distinct values' plain size plus one
   index of ``ceil(log2(distinct))`` bits per value).
3. The column keeps its dictionary when the dictionary is smaller and fits the dictionary page limit (the table's
   ``write.parquet.dict-size-bytes``, past which the writer falls back to plain pages anyway); nested columns keep
   theirs on every leaf (Arrow's default, unchanged). The result lists Parquet leaf paths.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc

SAMPLE_ROWS = 65_536
_LENGTH_BYTES = 4  # the length prefix of each plain-encoded binary value


def dictionary_columns(data: pa.Table, page_limit: int) -> list[str]:
    """The Parquet leaf paths of ``data``'s columns worth a dictionary of at most ``page_limit`` bytes (module doc).

    The result is pyarrow's ``use_dictionary``; ``page_limit`` its ``dictionary_pagesize_limit``.
    """
    sample = data.slice(0, SAMPLE_ROWS)
    chosen: list[str] = []
    for field in data.schema:
        if pa.types.is_nested(field.type):
            chosen.extend(_leaf_paths(field.name, field.type))
        elif _dictionary_pays(_storage(sample.column(field.name)), _storage_type(field.type), page_limit):
            chosen.append(field.name)
    return chosen


def _dictionary_pays(column: pa.ChunkedArray, data_type: pa.DataType, page_limit: int) -> bool:
    """Whether a dictionary of ``column``'s values is smaller than the values plain, and within the page limit."""
    if pa.types.is_boolean(data_type) or pa.types.is_null(data_type):
        return False
    values = column.drop_null()
    count = len(values)
    if count == 0:
        return True
    distinct = pc.unique(values)
    width = _plain_width(data_type)
    if width is None:  # variable width: the values' bytes plus a length each
        plain = _binary_bytes(values) + _LENGTH_BYTES * count
        dictionary = _binary_bytes(distinct) + _LENGTH_BYTES * len(distinct)
    else:
        plain = width * count
        dictionary = width * len(distinct)
    indices = count * max(1, math.ceil(math.log2(max(2, len(distinct))))) / 8
    return dictionary <= page_limit and dictionary + indices < plain


def _storage_type(data_type: pa.DataType) -> pa.DataType:
    """An extension type's storage type (e.g. WKB's binary), else the type itself."""
    return data_type.storage_type if isinstance(data_type, pa.BaseExtensionType) else data_type


def _storage(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """An extension column's storage (what Parquet encodes), else the column itself."""
    if not isinstance(column.type, pa.BaseExtensionType):
        return column
    return pa.chunked_array([chunk.storage for chunk in column.chunks], type=column.type.storage_type)


def _plain_width(data_type: pa.DataType) -> int | None:
    """Bytes per plain-encoded value of a fixed-width type (decimals as Parquet stores them); None for binary."""
    if pa.types.is_decimal(data_type):
        precision = data_type.precision
        return 4 if precision <= 9 else 8 if precision <= 18 else math.ceil((precision * math.log2(10) + 1) / 8)
    if pa.types.is_fixed_size_binary(data_type):
        return int(data_type.byte_width)
    try:
        return max(1, data_type.bit_width // 8)
    except ValueError:  # not fixed width: string, binary and their large variants
        return None


def _binary_bytes(values: pa.Array | pa.ChunkedArray) -> int:
    """Total bytes of the (non-null) string or binary ``values``."""
    total = pc.sum(pc.binary_length(values)).as_py()
    return int(total or 0)


def _leaf_paths(prefix: str, data_type: pa.DataType) -> list[str]:
    """The Parquet leaf column paths under a column of ``data_type`` (lists and maps as Arrow writes them)."""
    if pa.types.is_struct(data_type):
        return [path for field in data_type for path in _leaf_paths(f"{prefix}.{field.name}", field.type)]
    if pa.types.is_map(data_type):
        entries = f"{prefix}.key_value"
        return _leaf_paths(f"{entries}.key", data_type.key_type) + _leaf_paths(f"{entries}.value", data_type.item_type)
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type) or pa.types.is_fixed_size_list(data_type):
        return _leaf_paths(f"{prefix}.list.element", data_type.value_type)
    return [prefix]
