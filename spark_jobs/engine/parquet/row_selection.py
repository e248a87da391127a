"""Keep the selected rows of decoded columns, as cheaply as the column's layout allows.

Dropping a few deleted rows from a freshly decoded row group is on the hot path of every merge-on-read scan:

1. A fixed-width primitive chunk (integers, floats, dates, times, timestamps) without NULLs is viewed as a numpy
   array without copying, compressed with the boolean mask, and wrapped back into an Arrow array of the same type
   (numpy's boolean indexing is several times faster than Arrow's generic filter kernel here).
2. Any other chunk (NULLs, strings, nested, decimals) goes through Arrow's ``filter``.
3. Chunked columns are handled chunk by chunk with the matching slice of the mask.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from spark_jobs.engine.parquet.schema_projection import ArrowColumn


def select_rows(column: ArrowColumn, keep: np.ndarray) -> ArrowColumn:
    """The rows of ``column`` where ``keep`` is True, in order."""
    if isinstance(column, pa.ChunkedArray):
        chunks = []
        offset = 0
        for chunk in column.chunks:
            chunks.append(_select_chunk_rows(chunk, keep[offset : offset + len(chunk)]))
            offset += len(chunk)
        return pa.chunked_array(chunks, type=column.type)
    return _select_chunk_rows(column, keep)


def _select_chunk_rows(chunk: pa.Array, keep: np.ndarray) -> pa.Array:
    if _is_plain_fixed_width(chunk):
        values = np.frombuffer(chunk.buffers()[1], dtype=np.dtype(f"u{chunk.type.byte_width}"))
        selected = values[chunk.offset : chunk.offset + len(chunk)][keep]
        return pa.Array.from_buffers(chunk.type, len(selected), [None, pa.py_buffer(selected)])
    return chunk.filter(pa.array(keep, type=pa.bool_()))


def _is_plain_fixed_width(chunk: pa.Array) -> bool:
    arrow_type = chunk.type
    return (
        chunk.null_count == 0
        and (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_temporal(arrow_type))
        and not pa.types.is_interval(arrow_type)
        and arrow_type.bit_width in (8, 16, 32, 64)
    )
