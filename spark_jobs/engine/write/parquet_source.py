"""Parquet source files read with pyarrow where the writer runs, for an ingest that needs no Spark SQL on them.

Read through Spark, a Parquet source is decoded in the JVM, each row converted to Arrow and sent to a Python
worker that writes it again. Read with pyarrow inside the writing task, the rows never leave Arrow. The rows and
the table schema must be the ones Spark's reader would give, so only sources whose meaning is plain qualify;
anything else (``plan_parquet_source`` returns None) goes through Spark as before.

1. List the source: one file, or a directory's files, names starting with ``_`` or ``.`` skipped (as Spark does).
   A glob, a directory with subdirectories (Spark's partition discovery) or without files does not qualify.
2. Read every footer (a few threads): all files must have one schema of flat columns of plain types (no dictionary,
   unsigned, nested or nanosecond columns). Every column is nullable, as Spark reads files. INT96 timestamps
   qualify only where Spark reads them as they are stored (``_int96_read_as_stored``): files written by Spark 3.1
   or later without its legacy INT96 marker, with ``int96_as_timestamp`` given by the caller (Spark's settings);
   they are read as microseconds (nanoseconds truncated, as Spark does) and typed UTC timestamps.
3. Cut the files into row groups and pack them, in file order, into tasks of at most
   ``min(max_task_bytes, max(total / parallelism, 4 MiB))`` bytes, Spark's own split size for files: a task per
   slot of the cluster, none larger than ``spark.sql.files.maxPartitionBytes``. As in Spark, every file a task
   opens counts 4 MiB (``spark.sql.files.openCostInBytes``) on top of its compressed bytes, in the total too: four
   equal files on two slots make two tasks of two files, not three tasks of which the last runs alone.
4. A task streams its runs' record batches (``read_source_task``) into the data writer.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyiceberg.io import FileIO

from spark_jobs.engine.shared.errors import UserInputError

_GLOB_CHARACTERS = set("*?[{")
_FOOTER_THREADS = 4
_BATCH_ROWS = 65_536
_OPEN_COST_BYTES = 4 * 1024 * 1024  # Spark's spark.sql.files.openCostInBytes: the smallest task worth its start
# Footer keys Spark writes: its version, and the marker of INT96 values rebased to the Julian calendar.
_SPARK_VERSION_KEY = b"org.apache.spark.version"
_SPARK_LEGACY_INT96_KEY = b"org.apache.spark.legacyINT96"
_INT96_UNIT = "us"  # INT96 values read as microseconds, as Spark reads them


@dataclass(frozen=True)
class SourceRun:
    """Consecutive row groups of one source file, read by one task."""

    path: str
    row_groups: tuple[int, ...]
    compressed_bytes: int
    rows: int


@dataclass(frozen=True)
class ParquetSource:
    """A Parquet source planned for reading in the writing tasks: its schema and each task's runs of row groups."""

    uri: str
    arrow_schema: pa.Schema
    tasks: tuple[tuple[SourceRun, ...], ...]
    # Nulls per column from the footers' statistics (None: some row group does not say).
    null_counts: dict[str, int | None]

    @property
    def rows(self) -> int:
        """Rows in the whole source (from the footers)."""
        return sum(run.rows for task in self.tasks for run in task)


def plan_parquet_source(
    uri: str, io: FileIO, *, parallelism: int, max_task_bytes: int, int96_as_timestamp: bool = False
) -> ParquetSource | None:
    """The source at ``uri`` planned for pyarrow reads (module doc), or None when it does not qualify.

    ``int96_as_timestamp``: Spark reads INT96 columns as UTC timestamps, unconverted (its defaults:
    ``spark.sql.parquet.int96AsTimestamp`` on, ``spark.sql.parquet.int96TimestampConversion`` off).
    """
    if any(character in _GLOB_CHARACTERS for character in uri):
        return None
    located = _file_system(io, uri)
    if located is None:
        return None
    file_system, path, scheme_prefix = located
    info = file_system.get_file_info(path)
    if info.type == pafs.FileType.File:
        paths = [path]
    elif info.type == pafs.FileType.Directory:
        entries = file_system.get_file_info(pafs.FileSelector(path, recursive=False))
        visible = [e for e in entries if not posixpath.basename(e.path).startswith(("_", "."))]
        if any(e.type != pafs.FileType.File for e in visible):
            return None  # subdirectories: Spark would discover partition columns
        paths = sorted(e.path for e in visible)
    else:
        return None  # missing: Spark's reader reports it
    if not paths:
        return None
    with ThreadPoolExecutor(max_workers=min(_FOOTER_THREADS, len(paths))) as pool:
        footers = list(pool.map(lambda p: _read_footer(file_system, p, uri), paths))
    schema = footers[0][1]
    if any(not s.equals(schema) for _, s in footers) or not _plain_columns(footers[0][0], schema):
        return None
    if _int96_columns(footers[0][0]) and not (
        int96_as_timestamp and all(_int96_read_as_stored(metadata) for metadata, _ in footers)
    ):
        return None
    runs = [
        SourceRun(scheme_prefix + p, (index,), _compressed_bytes(metadata, index), metadata.row_group(index).num_rows)
        for p, (metadata, _) in zip(paths, footers, strict=True)
        for index in range(metadata.num_row_groups)
    ]
    nullable = _as_planned(schema, _int96_columns(footers[0][0]))
    tasks = _pack(runs, parallelism=parallelism, max_task_bytes=max_task_bytes)
    return ParquetSource(uri, nullable, tasks, _null_counts([metadata for metadata, _ in footers], schema))


def read_source_task(task: tuple[SourceRun, ...], io: FileIO, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The record batches of one task's runs, in order, with ``schema`` (the planned, nullable one).

    An INT96 column arrives as naive microseconds and is given the planned UTC type without a copy.
    """
    for run in task:
        with io.new_input(run.path).open() as stream:
            parquet_file = pq.ParquetFile(stream, coerce_int96_timestamp_unit=_INT96_UNIT)
            int96 = _int96_columns(parquet_file.metadata)
            if _columns(_as_planned(parquet_file.schema_arrow, int96)) != _columns(schema):
                raise UserInputError(f"source file {run.path} changed while it was ingested (its schema differs)")
            for batch in parquet_file.iter_batches(
                batch_size=_BATCH_ROWS, row_groups=list(run.row_groups), use_threads=True
            ):
                columns = [
                    column.view(schema.field(i).type) if i in int96 else column
                    for i, column in enumerate(batch.columns)
                ]
                yield pa.RecordBatch.from_arrays(columns, schema=schema)


def _file_system(io: FileIO, uri: str) -> tuple[pafs.FileSystem, str, str] | None:
    """The pyarrow file system of ``io`` holding ``uri``, the path in it, and the prefix that makes it a URI again."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    if not isinstance(io, PyArrowFileIO):
        return None
    scheme, netloc, path = io.parse_location(uri, io.properties)
    if scheme == "file":
        path = os.path.abspath(path)  # relative to the working directory, as Spark resolves it
    prefix = "" if scheme == "file" else f"{scheme}://"
    return io.fs_by_scheme(scheme, netloc), path, prefix


def _read_footer(file_system: pafs.FileSystem, path: str, uri: str) -> tuple[pq.FileMetaData, pa.Schema]:
    """A source file's footer and Arrow schema (no metadata); a file that is not Parquet is bad input."""
    try:
        with file_system.open_input_file(path) as stream:
            parquet_file = pq.ParquetFile(stream, coerce_int96_timestamp_unit=_INT96_UNIT)
            return parquet_file.metadata, parquet_file.schema_arrow.remove_metadata()
    except (pa.ArrowInvalid, OSError) as error:
        raise UserInputError(f"cannot read source {uri} (parquet): file {path}: {error}") from error


def _plain_columns(metadata: pq.FileMetaData, schema: pa.Schema) -> bool:
    """True when every column is flat and of a type Spark reads as pyarrow does (INT96: see ``_int96_columns``)."""
    if metadata.num_columns != len(schema):
        return False  # a nested column has several leaves
    return all(_plain_type(field.type) for field in schema)


def _int96_columns(metadata: pq.FileMetaData) -> frozenset[int]:
    """Indexes of the (flat) columns stored as INT96 timestamps."""
    return frozenset(i for i in range(metadata.num_columns) if metadata.schema.column(i).physical_type == "INT96")


def _int96_read_as_stored(metadata: pq.FileMetaData) -> bool:
    """True when Spark reads this file's INT96 values without rebasing them between calendars.

    Spark rebases a file's INT96 values from the Julian calendar when the file was written by Spark before 3.1 or
    carries the legacy INT96 marker; a file no Spark wrote is read by the session's rebase mode (which may fail on
    old values). Only files Spark 3.1+ wrote in the proleptic Gregorian calendar are read as stored.
    """
    key_value = metadata.metadata or {}
    version = key_value.get(_SPARK_VERSION_KEY)
    if version is None or _SPARK_LEGACY_INT96_KEY in key_value:
        return False
    return _version_tuple(version.decode("utf-8", "replace")) >= (3, 1)


def _version_tuple(version: str) -> tuple[int, ...]:
    """``3.5.9`` -> (3, 5, 9); parsing stops at the first part that is not a number."""
    parts = []
    for part in version.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def _as_planned(schema: pa.Schema, int96: frozenset[int]) -> pa.Schema:
    """A file's Arrow schema as planned: every column nullable, INT96 columns UTC microseconds."""
    return pa.schema(
        [pa.field(f.name, pa.timestamp(_INT96_UNIT, tz="UTC") if i in int96 else f.type) for i, f in enumerate(schema)]
    )


def _plain_type(arrow_type: pa.DataType) -> bool:
    """Types read the same by Spark and pyarrow, and mapped to one Iceberg type; and nanosecond timestamps, which
    Spark cannot read (``PARQUET_TYPE_ILLEGAL``) and pyarrow reads exactly (into ``timestamp_ns`` columns)."""
    if pa.types.is_timestamp(arrow_type):
        return arrow_type.unit in ("us", "ns") and arrow_type.tz in (None, "UTC", "+00:00")
    return (
        pa.types.is_boolean(arrow_type)
        or arrow_type in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64())
        or pa.types.is_decimal128(arrow_type)
        or pa.types.is_date32(arrow_type)
        or pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
    )


def _columns(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    return [(f.name, f.type) for f in schema]


def _null_counts(footers: list[pq.FileMetaData], schema: pa.Schema) -> dict[str, int | None]:
    """Nulls per (flat) column over every row group of every file; None where a row group has no null count."""
    counts: dict[str, int | None] = {}
    for index, field in enumerate(schema):
        total: int | None = 0
        for metadata in footers:
            for group in range(metadata.num_row_groups):
                statistics = metadata.row_group(group).column(index).statistics
                if statistics is None or not statistics.has_null_count or total is None:
                    total = None
                    break
                total += statistics.null_count
        counts[field.name] = total
    return counts


def _compressed_bytes(metadata: pq.FileMetaData, row_group: int) -> int:
    group = metadata.row_group(row_group)
    return sum(group.column(i).total_compressed_size for i in range(group.num_columns))


def _pack(runs: list[SourceRun], *, parallelism: int, max_task_bytes: int) -> tuple[tuple[SourceRun, ...], ...]:
    """Runs in order into tasks of at most the module doc's bytes, packed as Spark packs file splits.

    Each file's row groups are first cut into splits of at most the limit (a split is one run of adjacent row
    groups); splits then fill tasks in order, each counting its bytes plus the open cost, a task closed when the
    next split would take it over the limit (module doc, step 3).
    """
    files = len({run.path for run in runs})
    total = sum(run.compressed_bytes for run in runs) + files * _OPEN_COST_BYTES
    per_slot = -(-total // max(parallelism, 1))
    limit = max(min(max_task_bytes, max(per_slot, _OPEN_COST_BYTES)), 1)
    splits: list[SourceRun] = []
    for run in runs:
        last = splits[-1] if splits else None
        if last is not None and last.path == run.path and last.compressed_bytes + run.compressed_bytes <= limit:
            splits[-1] = SourceRun(
                run.path,
                last.row_groups + run.row_groups,
                last.compressed_bytes + run.compressed_bytes,
                last.rows + run.rows,
            )
        else:
            splits.append(run)
    tasks: list[list[SourceRun]] = []
    size = 0
    for split in splits:
        if not tasks or (size and size + split.compressed_bytes > limit):
            tasks.append([])
            size = 0
        tasks[-1].append(split)
        size += split.compressed_bytes + _OPEN_COST_BYTES
    return tuple(tuple(task) for task in tasks)


def source_summary(source: ParquetSource) -> dict[str, Any]:
    """What the job log says about a planned source."""
    files = {run.path for task in source.tasks for run in task}
    return {"uri": source.uri, "files": len(files), "tasks": len(source.tasks), "rows": source.rows}
