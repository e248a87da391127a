"""What loading a delete file reads from storage, for the ``delete_bytes_read`` counter.

Counted from the Parquet footer: the compressed bytes of the column chunks read, plus the footer itself and its
8-byte tail (length and magic).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import pyarrow.parquet as pq

from spark_jobs.engine.parquet.footer_cache import TRAILER_SIZE


def footer_bytes(metadata: pq.FileMetaData) -> int:
    """Bytes of a Parquet footer as read from the end of the file."""
    return metadata.serialized_size + TRAILER_SIZE


def compressed_bytes_of_columns(
    metadata: pq.FileMetaData, row_groups: Iterable[int], top_level_names: Collection[str]
) -> int:
    """Compressed bytes of every leaf column under ``top_level_names`` in ``row_groups``."""
    leaves = [
        index
        for index in range(metadata.num_columns)
        if metadata.schema.column(index).path.split(".")[0] in top_level_names
    ]
    return sum(
        metadata.row_group(row_group).column(leaf).total_compressed_size for row_group in row_groups for leaf in leaves
    )
