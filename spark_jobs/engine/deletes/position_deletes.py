"""The deleted row positions of one data file, from its deletion vector or else from its position delete files.

Spec: apache/iceberg format/spec.md ("Position Delete Files", "Deletion Vectors", "Scan Planning"). The planner has
already attached only the deletes that apply (sequence numbers, partition); here, per data file:

1. If a deletion vector applies, read it alone: position delete files for the file are ignored (spec).
2. Otherwise, for each position delete file: read its footer once (cached), find the ``file_path`` (field id
   2147483546) and ``pos`` (field id 2147483545) columns, and keep the row groups whose ``file_path`` statistics
   can hold this data file's path (delete files are sorted by file_path, pos).
3. Read each kept row group's two columns once per process (cached) and group its positions by file path, so the
   many data files sharing one delete file each take their positions by a dictionary lookup.
4. Concatenate this data file's positions from every delete file, sort and dedupe them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io import FileIO

from spark_jobs.engine.deletes.bytes_read import compressed_bytes_of_columns, footer_bytes
from spark_jobs.engine.deletes.cache import DeleteFileCache, delete_file_cache
from spark_jobs.engine.deletes.deletion_vectors import read_deletion_vector
from spark_jobs.engine.deletes.parquet_field_ids import field_id_paths
from spark_jobs.engine.parquet.sized_fragment import read_fragment_footer, sized_fragment
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, DeletionVector, PositionDeleteFile
from spark_jobs.engine.shared.deleted_positions import (
    NO_DELETED_POSITIONS,
    DeletedPositions,
    DeletedPositionsKind,
    read_only,
)
from spark_jobs.engine.shared.errors import CorruptFileError, EngineError
from spark_jobs.engine.shared.metrics import ScanMetrics

if TYPE_CHECKING:  # the dataset module is imported where a fragment is made (``sized_fragment``)
    import pyarrow.dataset as ds

FILE_PATH_FIELD_ID = 2147483546
POS_FIELD_ID = 2147483545
_FILE_PATH_NAME = "file_path"
_POS_NAME = "pos"
_ENTRY_OVERHEAD_BYTES = 100


def load_deleted_positions(
    data_file: DataFileSlice,
    *,
    io: FileIO,
    cache: DeleteFileCache | None = None,
    metrics: ScanMetrics | None = None,
) -> DeletedPositions:
    """The positions of ``data_file.path`` deleted by its deletion vector, or else by its position delete files.

    Bytes read from storage (not from the cache) are added to ``metrics.delete_bytes_read``.
    """
    cache = cache if cache is not None else delete_file_cache()
    metrics = metrics if metrics is not None else ScanMetrics()
    dv = data_file.deletion_vector
    if dv is not None:
        if dv.referenced_data_file != data_file.path:
            raise EngineError(
                f"deletion vector in {dv.path} references {dv.referenced_data_file}, not the data file {data_file.path}"
            )
        return DeletedPositions(_cached_deletion_vector(dv, io, cache, metrics), DeletedPositionsKind.DELETION_VECTOR)
    if not data_file.position_deletes:
        return NO_DELETED_POSITIONS
    parts = [
        _positions_in_delete_file(data_file.path, delete_file, io, cache, metrics)
        for delete_file in data_file.position_deletes
    ]
    return DeletedPositions(read_only(_sorted_unique(np.concatenate(parts))), DeletedPositionsKind.POSITION_DELETES)


def _sorted_unique(positions: np.ndarray) -> np.ndarray:
    """Positions sorted without duplicates; already strictly increasing input (the usual case) is returned as is."""
    if positions.size < 2 or bool(np.all(positions[1:] > positions[:-1])):
        return positions
    ordered = np.sort(positions)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _cached_deletion_vector(dv: DeletionVector, io: FileIO, cache: DeleteFileCache, metrics: ScanMetrics) -> np.ndarray:
    """A deletion vector's positions, read once per process (a split data file asks once per split)."""

    def load() -> tuple[np.ndarray, int]:
        positions = read_only(read_deletion_vector(dv, io=io))
        metrics.delete_bytes_read += dv.content_size_in_bytes
        return positions, positions.nbytes + _ENTRY_OVERHEAD_BYTES

    return cache.get_or_load(("deletion_vector", dv.path, dv.content_offset, dv.content_size_in_bytes), load)


@dataclass(frozen=True)
class _PositionDeleteFooter:
    """What a position delete file's footer tells: its metadata, the two columns, file_path bounds per row group."""

    metadata: pq.FileMetaData
    file_path_column: str
    pos_column: str
    # Per row group: (min, max) of file_path as UTF-8 bytes, or None when the statistics cannot tell.
    file_path_bounds: tuple[tuple[bytes, bytes] | None, ...]
    # On an object store, the file opened with its recorded size (``sized_fragment``): row groups read through it
    # cost no HEAD request.
    fragment: ds.Fragment | None = None

    def row_groups_that_may_hold(self, data_file_path: str) -> list[int]:
        """Row groups whose file_path range contains ``data_file_path`` (all of those without statistics)."""
        wanted = data_file_path.encode()
        return [
            index
            for index, bounds in enumerate(self.file_path_bounds)
            if bounds is None or bounds[0] <= wanted <= bounds[1]
        ]


def _positions_in_delete_file(
    data_file_path: str, delete_file: PositionDeleteFile, io: FileIO, cache: DeleteFileCache, metrics: ScanMetrics
) -> np.ndarray:
    """This data file's positions in one position delete file, unsorted, reading only row groups that may hold it."""
    footer = cache.get_or_load(
        ("position_delete_footer", delete_file.path), lambda: _load_footer(delete_file, io, metrics)
    )
    parts = []
    for row_group in footer.row_groups_that_may_hold(data_file_path):
        positions_by_path = cache.get_or_load(
            ("position_delete_row_group", delete_file.path, row_group),
            functools.partial(_load_row_group, delete_file, footer, row_group, io, metrics),
        )
        found = positions_by_path.get(data_file_path)
        if found is not None:
            parts.append(found)
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def _load_footer(
    delete_file: PositionDeleteFile, io: FileIO, metrics: ScanMetrics
) -> tuple[_PositionDeleteFooter, int]:
    """Read a position delete file's footer and locate its file_path and pos columns by field id."""
    size = delete_file.file_size_in_bytes
    fragment = sized_fragment(io, delete_file.path, size, dictionary_columns=[_FILE_PATH_NAME])
    if fragment is not None:
        metadata = read_fragment_footer(fragment, delete_file.path, size)[0]
        arrow_schema = fragment.physical_schema
    else:
        with io.new_input(delete_file.path).open(seekable=True) as stream:
            parquet_file = pq.ParquetFile(stream)
            metadata = parquet_file.metadata
            arrow_schema = parquet_file.schema_arrow
    paths = field_id_paths(arrow_schema)
    file_path_column = _top_level_column(delete_file.path, paths, arrow_schema, FILE_PATH_FIELD_ID, _FILE_PATH_NAME)
    pos_column = _top_level_column(delete_file.path, paths, arrow_schema, POS_FIELD_ID, _POS_NAME)
    leaf_index = _leaf_index(delete_file.path, metadata, file_path_column)
    bounds = tuple(_file_path_bounds(metadata.row_group(i).column(leaf_index)) for i in range(metadata.num_row_groups))
    footer = _PositionDeleteFooter(metadata, file_path_column, pos_column, bounds, fragment)
    metrics.delete_bytes_read += footer_bytes(metadata)
    weight = metadata.serialized_size + sum(len(b[0]) + len(b[1]) for b in bounds if b) + _ENTRY_OVERHEAD_BYTES
    return footer, weight


def _top_level_column(path: str, paths: dict[int, tuple[str, ...]], schema: pa.Schema, field_id: int, name: str) -> str:
    """The name of a required top-level column, found by field id, else by its spec name in files without ids."""
    found = paths.get(field_id)
    if found is not None and len(found) == 1:
        return found[0]
    if not paths and name in schema.names:
        return name
    raise CorruptFileError(
        f"position delete file {path}: no top-level column with field id {field_id} ({name}); "
        f"columns are {schema.names}"
    )


def _leaf_index(path: str, metadata: pq.FileMetaData, column_name: str) -> int:
    """The Parquet leaf column index of a top-level primitive column."""
    for index in range(metadata.num_columns):
        if metadata.schema.column(index).path == column_name:
            return index
    raise CorruptFileError(f"position delete file {path}: column {column_name!r} is not a primitive string column")


def _file_path_bounds(column_chunk: pq.ColumnChunkMetaData) -> tuple[bytes, bytes] | None:
    """A row group's (min, max) file_path as bytes, or None without usable statistics."""
    statistics = column_chunk.statistics
    if statistics is None or not statistics.has_min_max:
        return None
    return _as_bytes(statistics.min), _as_bytes(statistics.max)


def _as_bytes(value: str | bytes) -> bytes:
    """A string statistic as UTF-8 bytes (Parquet orders strings by unsigned bytes)."""
    return value.encode() if isinstance(value, str) else bytes(value)


def _load_row_group(
    delete_file: PositionDeleteFile, footer: _PositionDeleteFooter, row_group: int, io: FileIO, metrics: ScanMetrics
) -> tuple[dict[str, np.ndarray], int]:
    """Read one row group's file_path and pos columns and group the positions by data file path."""
    columns = [footer.file_path_column, footer.pos_column]
    if footer.fragment is not None:  # file_path as a dictionary when it has the spec's name (the usual case)
        table = footer.fragment.subset(row_group_ids=[row_group]).to_table(columns=columns)
    else:
        with io.new_input(delete_file.path).open(seekable=True) as stream:
            # file_path is dictionary-encoded in practice: read it as a dictionary and skip materializing the
            # strings; pre-buffering fetches both column chunks in one coalesced read on object stores.
            parquet_file = pq.ParquetFile(
                stream, metadata=footer.metadata, read_dictionary=[footer.file_path_column], pre_buffer=True
            )
            table = parquet_file.read_row_group(row_group, columns=columns)
    metrics.delete_bytes_read += compressed_bytes_of_columns(
        footer.metadata, [row_group], {footer.file_path_column, footer.pos_column}
    )
    table = table.unify_dictionaries()
    file_paths = table.column(footer.file_path_column)
    positions = table.column(footer.pos_column)
    if file_paths.null_count or positions.null_count:
        raise CorruptFileError(
            f"position delete file {delete_file.path}, row group {row_group}: file_path has {file_paths.null_count} "
            f"and pos has {positions.null_count} nulls; both columns are required"
        )
    position_values = positions.to_numpy().astype(np.int64, copy=False)
    if position_values.size and position_values.min() < 0:
        raise CorruptFileError(
            f"position delete file {delete_file.path}, row group {row_group}: pos holds {int(position_values.min())}; "
            "positions are >= 0"
        )
    grouped = _group_positions_by_path(file_paths, position_values)
    weight = sum(p.nbytes + len(k) + _ENTRY_OVERHEAD_BYTES for k, p in grouped.items()) + _ENTRY_OVERHEAD_BYTES
    return grouped, weight


def _group_positions_by_path(file_paths: pa.ChunkedArray, positions: np.ndarray) -> dict[str, np.ndarray]:
    """Positions split by their file path: paths as dictionary codes, stable-sorted by code, cut at code changes."""
    if len(file_paths) == 0:
        return {}
    paths = file_paths.combine_chunks()
    encoded = paths if pa.types.is_dictionary(paths.type) else pc.dictionary_encode(paths)
    codes = encoded.indices.to_numpy()
    if np.any(codes[1:] < codes[:-1]):
        order = np.argsort(codes, kind="stable")
        codes = codes[order]
        positions = positions[order]
    read_only(positions)
    distinct_paths = encoded.dictionary.to_pylist()
    cuts = np.searchsorted(codes, np.arange(len(distinct_paths) + 1))
    return {
        path: positions[cuts[code] : cuts[code + 1]]
        for code, path in enumerate(distinct_paths)
        if cuts[code + 1] > cuts[code]  # a Parquet dictionary may hold values no row of this row group uses
    }
