"""Write Arrow rows of one partition to Parquet files rolled at the target size, and describe each file.

1. Writer options from the table properties: codec (default zstd) and level, row group and page limits, the page
   index on, bloom filters for every column with ``write.parquet.bloom-filter-enabled.column.<name>=true``;
   dictionaries of at most ``write.parquet.dict-size-bytes`` (2 MiB unless set, as Iceberg Java writes), only on
   the columns where they pay, judged from the file's first rows (``dictionary_columns``).
2. Rows go in chunks (about one row group each, sized from the in-memory row width); after each chunk the bytes
   written so far are checked and the file is closed once it reaches ``write.target-file-size-bytes``.
   ``RollingParquetWriter`` takes the rows as they come (batch by batch) and holds at most one chunk;
   ``write_files`` writes a table already in memory through it.
3. Each closed file is described with its column metrics under the table's metrics modes (``column_metrics``:
   pyiceberg's, completed for format v3's types) as a plain dict (``file_entries.describe_file``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.table import TableProperties

from spark_jobs.engine.table.properties import int_property
from spark_jobs.engine.write.column_metrics import file_statistics
from spark_jobs.engine.write.dictionary_columns import dictionary_columns
from spark_jobs.engine.write.file_entries import WrittenFile, describe_file

BLOOM_FILTER_PREFIX = "write.parquet.bloom-filter-enabled.column."
DEFAULT_CODEC = "zstd"
# A chunk is at most this many rows; the rows per chunk also follow the target size.
_MAX_CHUNK_ROWS = 1_048_576

_BYTES = "an integer number of bytes"


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


def write_files(data: pa.Table, target: FileTarget) -> list[WrittenFile]:
    """Write ``data`` (already in the file's Arrow schema, ordered) to one or more files; describe each."""
    if data.num_rows == 0:
        return []
    writer = RollingParquetWriter(target, data.schema, row_bytes=_row_bytes(data), bloom_ndv=data.num_rows)
    writer.write(data)
    return writer.close()


class RollingParquetWriter:
    """Rows written as they come, a row group at a time, into files rolled at the target size (module doc, 2-3).

    Only the rows of the row group being filled are held (at most one chunk); a file is closed and described as soon
    as it reaches the target size. ``row_bytes`` (the in-memory row width the chunk size follows) and ``bloom_ndv``
    (the distinct-value estimate bloom filters are sized for) default to estimates from the first rows written.
    """

    def __init__(
        self, target: FileTarget, schema: pa.Schema, *, row_bytes: int | None = None, bloom_ndv: int | None = None
    ) -> None:
        self._target = target
        self._schema = schema
        self._target_bytes = int_property(
            target.properties,
            TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
            TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
            expected=_BYTES,
        )
        self._row_bytes = row_bytes
        self._bloom_ndv = bloom_ndv
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._file: _OpenFile | None = None
        self._written: list[WrittenFile] = []

    @property
    def chunk_rows(self) -> int:
        """Rows per row group: the row group limit, at most what fits the target size (module doc, step 2)."""
        row_group_rows = int_property(
            self._target.properties,
            TableProperties.PARQUET_ROW_GROUP_LIMIT,
            TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT,
            expected="an integer number of rows",
        )
        row_bytes = self._row_bytes or 1
        return max(1, min(_MAX_CHUNK_ROWS, row_group_rows or _MAX_CHUNK_ROWS, self._target_bytes // row_bytes))

    def write(self, rows: pa.Table | pa.RecordBatch) -> None:
        """Buffer ``rows`` (in the file's Arrow schema) and write every full chunk."""
        if rows.num_rows == 0:
            return
        table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
        if self._row_bytes is None:
            self._row_bytes = _row_bytes(table)
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.chunk_rows:
            self._flush(final=False)

    def close(self) -> list[WrittenFile]:
        """Write what is buffered, close the open file; the descriptions of every file written."""
        self._flush(final=True)
        if self._file is not None:
            self._written.append(self._file.close())
            self._file = None
        return self._written

    def _flush(self, *, final: bool) -> None:
        """Write the buffered rows chunk by chunk (a partial last chunk only when ``final``), rolling files."""
        if not self._pending_rows:
            return
        data = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        chunk_rows = self.chunk_rows
        offset = 0
        while data.num_rows - offset >= chunk_rows or (final and offset < data.num_rows):
            chunk = data.slice(offset, chunk_rows)
            if self._file is None:
                ndv = self._bloom_ndv or max(chunk_rows, self._target_bytes // (self._row_bytes or 1))
                self._file = _OpenFile(self._target, self._schema, _writer_options(self._target, data, ndv))
            self._file.write(chunk)
            offset += chunk.num_rows
            if self._file.position >= self._target_bytes:
                self._written.append(self._file.close())
                self._file = None
        rest = data.slice(offset)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows


class _OpenFile:
    """One Parquet file being written; ``close`` returns its description with column metrics."""

    def __init__(self, target: FileTarget, schema: pa.Schema, options: dict[str, Any]) -> None:
        self._target = target
        self.path = target.new_path()
        self._stream = target.io.new_output(self.path).create(overwrite=False)
        try:
            self._writer = pq.ParquetWriter(self._stream, schema, **options)
        except BaseException:
            self._stream.close()
            raise

    @property
    def position(self) -> int:
        """Bytes written to the file so far."""
        return self._stream.tell()

    def write(self, chunk: pa.Table) -> None:
        """Write ``chunk`` as one row group."""
        try:
            self._writer.write_table(chunk, row_group_size=chunk.num_rows)
        except BaseException:
            self._stream.close()
            raise

    def close(self) -> WrittenFile:
        """Finish the file and describe it (module doc, step 3)."""
        try:
            self._writer.close()
            metadata = self._writer.writer.metadata
        finally:
            self._stream.close()
        target = self._target
        statistics = file_statistics(metadata, target.schema, target.properties)
        return describe_file(
            content=target.content,
            file_path=self.path,
            file_size_in_bytes=len(target.io.new_input(self.path)),
            spec_id=target.spec_id,
            partition_values=list(target.partition_values),
            statistics=statistics,
            equality_ids=list(target.equality_ids) if target.equality_ids else None,
            sort_order_id=target.sort_order_id,
            referenced_data_file=target.referenced_data_file,
        )


def _row_bytes(data: pa.Table) -> int:
    """The in-memory width of one row of ``data`` (at least 1)."""
    return max(1, data.nbytes // max(1, data.num_rows))


def _writer_options(target: FileTarget, data: pa.Table, bloom_ndv: int) -> dict[str, Any]:
    """pyarrow ParquetWriter options: codec, level, pages, page index, bloom filters (table properties), dictionaries.

    ``data`` holds the file's first rows: the columns worth a dictionary are judged from them.
    """
    properties = target.properties
    codec = properties.get(TableProperties.PARQUET_COMPRESSION, DEFAULT_CODEC)
    if codec == "uncompressed":
        codec = "none"
    dictionary_limit = int_property(
        properties,
        TableProperties.PARQUET_DICT_SIZE_BYTES,
        TableProperties.PARQUET_DICT_SIZE_BYTES_DEFAULT,
        expected=_BYTES,
    )
    options: dict[str, Any] = {
        "compression": codec,
        "compression_level": int_property(properties, TableProperties.PARQUET_COMPRESSION_LEVEL, None),
        "data_page_size": int_property(
            properties,
            TableProperties.PARQUET_PAGE_SIZE_BYTES,
            TableProperties.PARQUET_PAGE_SIZE_BYTES_DEFAULT,
            expected=_BYTES,
        ),
        "write_page_index": True,
        "store_decimal_as_integer": True,
        "dictionary_pagesize_limit": dictionary_limit,
        "use_dictionary": dictionary_columns(data, dictionary_limit),
    }
    bloom_columns = {
        key.removeprefix(BLOOM_FILTER_PREFIX): {"ndv": max(1, bloom_ndv), "fpp": 0.01}
        for key, value in properties.items()
        if key.startswith(BLOOM_FILTER_PREFIX) and str(value).lower() == "true"
    }
    bloom_columns = {name: bloom for name, bloom in bloom_columns.items() if name in data.column_names}
    if bloom_columns:
        options["bloom_filter_options"] = bloom_columns
    return options
