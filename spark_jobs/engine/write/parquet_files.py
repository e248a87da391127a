"""Write Arrow rows of one partition to Parquet files rolled at the target size, and describe each file.

1. Writer options from the table properties: codec (default zstd) and level, row group and page limits, the page
   index on, bloom filters for every column with ``write.parquet.bloom-filter-enabled.column.<name>=true``.
2. Rows go in chunks (about one row group each, sized from the in-memory row width); after each chunk the bytes
   written so far are checked and the file is closed once it reaches ``write.target-file-size-bytes``.
3. Each closed file is described with pyiceberg's column metrics (``data_file_statistics_from_parquet_metadata``
   under the table's metrics modes) as a plain dict (``commit.file_entries.describe_file``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import (
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
)
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.table import TableProperties
from pyiceberg.utils.properties import property_as_int

from spark_jobs.engine.commit.file_entries import describe_file

BLOOM_FILTER_PREFIX = "write.parquet.bloom-filter-enabled.column."
DEFAULT_CODEC = "zstd"
# A chunk is at most this many rows; the rows per chunk also follow the target size.
_MAX_CHUNK_ROWS = 1_048_576


@dataclass(frozen=True)
class FileTarget:
    """Where and how one partition's files are written."""

    io: FileIO
    new_path: Callable[[], str]  # a fresh file path on each call
    schema: Schema  # the schema the file holds (field ids)
    properties: dict[str, str]
    spec_id: int
    partition_values: tuple[Any, ...]
    content: DataFileContent = DataFileContent.DATA
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    referenced_data_file: str | None = None


def write_files(data: pa.Table, target: FileTarget) -> list[dict[str, Any]]:
    """Write ``data`` (already in the file's Arrow schema, ordered) to one or more files; describe each."""
    if data.num_rows == 0:
        return []
    target_bytes = property_as_int(
        target.properties,
        TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
        TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
    )
    row_group_rows = property_as_int(
        target.properties, TableProperties.PARQUET_ROW_GROUP_LIMIT, TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT
    )
    row_bytes = max(1, data.nbytes // max(1, data.num_rows))
    chunk_rows = max(1, min(_MAX_CHUNK_ROWS, row_group_rows or _MAX_CHUNK_ROWS, target_bytes // row_bytes))
    described = []
    offset = 0
    while offset < data.num_rows:
        written, offset = _write_one_file(data, offset, chunk_rows, target_bytes, target)
        described.append(written)
    return described


def _write_one_file(
    data: pa.Table, offset: int, chunk_rows: int, target_bytes: int, target: FileTarget
) -> tuple[dict[str, Any], int]:
    """Write chunks from ``offset`` until the file reaches the target size; returns its description and the end."""
    path = target.new_path()
    output = target.io.new_output(path)
    stream = output.create(overwrite=False)
    try:
        writer = pq.ParquetWriter(stream, data.schema, **_writer_options(target, data))
        while offset < data.num_rows:
            chunk = data.slice(offset, chunk_rows)
            writer.write_table(chunk, row_group_size=chunk.num_rows)
            offset += chunk.num_rows
            if stream.tell() >= target_bytes:
                break
        writer.close()
        metadata = writer.writer.metadata
    finally:
        stream.close()
    statistics = data_file_statistics_from_parquet_metadata(
        parquet_metadata=metadata,
        stats_columns=compute_statistics_plan(target.schema, target.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(target.schema),
    )
    description = describe_file(
        content=target.content,
        file_path=path,
        file_size_in_bytes=len(target.io.new_input(path)),
        spec_id=target.spec_id,
        partition_values=list(target.partition_values),
        statistics=statistics.to_serialized_dict(),
        equality_ids=list(target.equality_ids) if target.equality_ids else None,
        sort_order_id=target.sort_order_id,
        referenced_data_file=target.referenced_data_file,
    )
    return description, offset


def _writer_options(target: FileTarget, data: pa.Table) -> dict[str, Any]:
    """pyarrow ParquetWriter options from the table properties (codec, level, pages, page index, bloom filters)."""
    properties = target.properties
    codec = properties.get(TableProperties.PARQUET_COMPRESSION, DEFAULT_CODEC)
    if codec == "uncompressed":
        codec = "none"
    options: dict[str, Any] = {
        "compression": codec,
        "compression_level": property_as_int(properties, TableProperties.PARQUET_COMPRESSION_LEVEL, None),
        "data_page_size": property_as_int(
            properties, TableProperties.PARQUET_PAGE_SIZE_BYTES, TableProperties.PARQUET_PAGE_SIZE_BYTES_DEFAULT
        ),
        "write_page_index": True,
        "store_decimal_as_integer": True,
    }
    bloom_columns = {
        key.removeprefix(BLOOM_FILTER_PREFIX): {"ndv": max(1, data.num_rows), "fpp": 0.01}
        for key, value in properties.items()
        if key.startswith(BLOOM_FILTER_PREFIX) and str(value).lower() == "true"
    }
    bloom_columns = {name: bloom for name, bloom in bloom_columns.items() if name in data.column_names}
    if bloom_columns:
        options["bloom_filter_options"] = bloom_columns
    return options
