"""The data files a scan reads, as columns, each with the deletes that apply to it; their slices and tasks.

A scan of 10^5-10^6 files is planned without a Python object per file until a task's slices are asked for:

1. ``gather``: the surviving data entries of each manifest (``entry_filter.survivors``) become per-file columns
   (paths, sizes, record counts, spec ids, data sequence numbers, first row ids, split offsets; paths, row ids and
   offsets stay Arrow values until a slice asks for one) and per-file partitions, shared by the files of one
   partition with their identity-partition constants.
2. Deletes: the delete index says, for all files at once, which may have any (``files_that_may_have_deletes``);
   only those are looked up one by one (``DeleteFileIndex.for_file``), reading a file's statistics only when an
   equality delete may apply.
3. ``tasks``: files larger than the split size with usable split offsets are cut on row-group boundaries
   (``splitting.split_ranges``); every slice is weighed (bytes plus its deletes' bytes, at least one
   open-file cost per file) and the weights packed as Iceberg Java packs them (``splitting.pack_weights``); each
   task holds rows of one ``SliceColumns``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.transforms import IdentityTransform

from spark_jobs.engine.planning.delete_index import (
    AppliedDeletes,
    DeleteFileIndex,
    partition_keys,
    statistics_of_row,
)
from spark_jobs.engine.planning.scan_tasks import ScanTask, SliceColumns
from spark_jobs.engine.planning.splitting import SplitSettings, pack_weights, split_ranges, usable_split_offsets
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_columns import ManifestColumns


def identity_partition_constants(spec: PartitionSpec, partition: Any) -> dict[int, Any]:
    """Source field id -> partition value for each identity field of the file's own spec."""
    return {
        partition_field.source_id: partition[position]
        for position, partition_field in enumerate(spec.fields)
        if isinstance(partition_field.transform, IdentityTransform)
    }


class ArrowValues(Sequence[Any]):
    """Values of an Arrow array turned into Python one at a time, when asked for (a list of 10^6 is not made)."""

    def __init__(self, array: pa.Array, convert: Any = None) -> None:
        self._array = array
        self._convert = convert

    def __len__(self) -> int:
        return len(self._array)

    def __iter__(self) -> Iterator[Any]:
        values = self._array.to_pylist()
        return iter(values if self._convert is None else map(self._convert, values))

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        value = self._array[int(index)].as_py()
        return self._convert(value) if self._convert is not None else value


def _offsets_tuple(value: list[int] | None) -> tuple[int, ...] | None:
    return tuple(value) if value else None


@dataclass
class PlannedFiles:
    """Per data file of a scan: its columns, partition, identity constants and the deletes that apply."""

    paths: Sequence[str]
    file_sizes: np.ndarray
    record_counts: np.ndarray
    spec_ids: np.ndarray
    data_sequence_numbers: np.ndarray
    first_row_ids: Sequence[int | None]
    split_offsets: Sequence[tuple[int, ...] | None]
    partitions: list[tuple[Any, ...]]
    partition_constants: list[dict[int, Any]]
    deletes: dict[int, AppliedDeletes] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def equality_field_ids(self) -> frozenset[int]:
        """Every field id an attached equality delete file compares on."""
        return frozenset(
            field_id
            for applied in self.deletes.values()
            for delete_file in applied.equality_deletes
            for field_id in delete_file.equality_ids
        )

    def applied_delete_files(self) -> set[object]:
        """The distinct delete files (and deletion vectors) attached to any file."""
        return {
            delete_file
            for applied in self.deletes.values()
            for delete_file in (*applied.position_deletes, *applied.equality_deletes, applied.deletion_vector)
            if delete_file is not None
        }

    def delete_weights(self) -> tuple[np.ndarray, np.ndarray]:
        """Per file: the bytes of its deletes (a deletion vector counts its blob) and how many delete files."""
        sizes = np.zeros(len(self), dtype=np.int64)
        counts = np.zeros(len(self), dtype=np.int64)
        for row, applied in self.deletes.items():
            total = sum(d.file_size_in_bytes for d in applied.position_deletes)
            total += sum(d.file_size_in_bytes for d in applied.equality_deletes)
            count = len(applied.position_deletes) + len(applied.equality_deletes)
            if applied.deletion_vector is not None:
                total += applied.deletion_vector.content_size_in_bytes
                count += 1
            sizes[row], counts[row] = total, count
        return sizes, counts

    def slices(self, split_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every slice as (file row, start, length), files in order, a large file's slices in file order."""
        large = np.flatnonzero(self.file_sizes > split_size)
        if not len(large):
            return np.arange(len(self), dtype=np.int64), np.zeros(len(self), dtype=np.int64), self.file_sizes
        file_rows: list[np.ndarray] = []
        starts: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        previous = 0
        for row in large.tolist():
            whole = np.arange(previous, row, dtype=np.int64)
            file_rows.append(whole)
            starts.append(np.zeros(len(whole), dtype=np.int64))
            lengths.append(self.file_sizes[previous:row])
            size = int(self.file_sizes[row])
            ranges = split_ranges(usable_split_offsets(self.split_offsets[row], size), size, split_size)
            file_rows.append(np.full(len(ranges), row, dtype=np.int64))
            starts.append(np.array([start for start, _ in ranges], dtype=np.int64))
            lengths.append(np.array([length for _, length in ranges], dtype=np.int64))
            previous = row + 1
        tail = np.arange(previous, len(self), dtype=np.int64)
        file_rows.append(tail)
        starts.append(np.zeros(len(tail), dtype=np.int64))
        lengths.append(self.file_sizes[previous:])
        return np.concatenate(file_rows), np.concatenate(starts), np.concatenate(lengths)

    def slice_weights(self, file_rows: np.ndarray, lengths: np.ndarray, open_file_cost: int) -> np.ndarray:
        """The packer's weight of each slice (``splitting.slice_weight`` for all slices at once)."""
        delete_sizes, delete_counts = self.delete_weights()
        return np.maximum(lengths + delete_sizes[file_rows], (1 + delete_counts[file_rows]) * open_file_cost)

    def scan_weight(self, open_file_cost: int) -> int:
        """The weight of the whole-file slices: what the adaptive split size spreads over the slots."""
        return int(self.slice_weights(np.arange(len(self)), self.file_sizes, open_file_cost).sum())

    def tasks(self, settings: SplitSettings) -> list[ScanTask]:
        """The files' slices packed into tasks (module doc, step 3)."""
        file_rows, starts, lengths = self.slices(settings.split_size)
        weights = self.slice_weights(file_rows, lengths, settings.open_file_cost)
        bins = pack_weights(weights.tolist(), settings.split_size, settings.lookback)
        columns = self.slice_columns(file_rows, starts, lengths)
        return [ScanTask.of_rows(columns, rows) for rows in bins]

    def task_count(self, settings: SplitSettings) -> int:
        """How many tasks ``tasks(settings)`` would give (for the adaptive split size's search)."""
        file_rows, _, lengths = self.slices(settings.split_size)
        weights = self.slice_weights(file_rows, lengths, settings.open_file_cost)
        return len(pack_weights(weights.tolist(), settings.split_size, settings.lookback))

    def slice_columns(self, file_rows: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> SliceColumns:
        """The slices as the columns tasks are rows of."""
        deletes = {
            row: (applied.position_deletes, applied.deletion_vector, applied.equality_deletes)
            for row, applied in self.deletes.items()
        }
        return SliceColumns(
            paths=self.paths,
            file_sizes=self.file_sizes,
            record_counts=self.record_counts,
            spec_ids=self.spec_ids,
            data_sequence_numbers=self.data_sequence_numbers,
            first_row_ids=self.first_row_ids,
            split_offsets=self.split_offsets,
            partitions=self.partitions,
            partition_constants=self.partition_constants,
            deletes=deletes,
            file_rows=file_rows,
            starts=starts,
            lengths=lengths,
        )


def gather(
    survivors: Sequence[ManifestColumns],
    specs: dict[int, PartitionSpec],
    delete_index: DeleteFileIndex,
    metrics: ScanMetrics,
) -> PlannedFiles:
    """The surviving data files of every manifest, in order, with their deletes (module doc, steps 1 and 2)."""
    chunks = [chunk for chunk in survivors if chunk.num_rows]
    offset = 0
    partitions: list[tuple[Any, ...]] = []
    constants: list[dict[int, Any]] = []
    deletes: dict[int, AppliedDeletes] = {}
    for chunk in chunks:
        chunk_paths = chunk.column("file_path")
        codes, chunk_partitions = chunk.partition_groups
        spec = specs.get(chunk.spec_id)
        chunk_constants = [
            identity_partition_constants(spec, partition) if spec is not None else {} for partition in chunk_partitions
        ]
        if len(chunk_partitions) == 1:  # one partition (every file of an unpartitioned table): no lookups
            partitions.extend(chunk_partitions * chunk.num_rows)
            constants.extend(chunk_constants * chunk.num_rows)
        else:
            code_list = codes.tolist()
            partitions.extend([chunk_partitions[code] for code in code_list])
            constants.extend([chunk_constants[code] for code in code_list])
        if delete_index.holds_deletes:
            _attach_deletes(
                chunk, chunk_paths=chunk_paths, codes=codes, offset=offset, delete_index=delete_index, deletes=deletes
            )
        offset += chunk.num_rows

    def joined(name: str, arrow_type: pa.DataType) -> pa.Array:
        arrays = [chunk.column(name) for chunk in chunks]
        return pa.concat_arrays(arrays) if arrays else pa.array([], arrow_type)

    sequence_numbers = joined("sequence_number", pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    planned = PlannedFiles(
        paths=ArrowValues(joined("file_path", pa.string())),
        file_sizes=joined("file_size_in_bytes", pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64),
        record_counts=joined("record_count", pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64),
        spec_ids=np.concatenate([np.full(chunk.num_rows, chunk.spec_id, dtype=np.int64) for chunk in chunks])
        if chunks
        else np.zeros(0, dtype=np.int64),
        data_sequence_numbers=sequence_numbers.astype(np.int64),
        first_row_ids=ArrowValues(joined("first_row_id", pa.int64())),
        split_offsets=ArrowValues(joined("split_offsets", pa.list_(pa.int64())), _offsets_tuple),
        partitions=partitions,
        partition_constants=constants,
        deletes=deletes,
    )
    metrics.delete_files_applied += len(planned.applied_delete_files())
    return planned


def _attach_deletes(
    chunk: ManifestColumns,
    *,
    chunk_paths: pa.Array,
    codes: np.ndarray,
    offset: int,
    delete_index: DeleteFileIndex,
    deletes: dict[int, AppliedDeletes],
) -> None:
    """Look up the deletes of the chunk's files that may have any (module doc, step 2)."""
    keys = partition_keys(chunk)
    sequence_numbers = chunk.column("sequence_number").fill_null(0).to_numpy(zero_copy_only=False)
    candidates = delete_index.files_that_may_have_deletes(chunk_paths, keys, codes, sequence_numbers)
    has_statistics = "lower_bounds" in chunk.table.column_names
    for row in np.flatnonzero(candidates).tolist():

        def statistics(row: int = row) -> Any:
            if not has_statistics:
                raise RuntimeError("planning left out the column statistics an equality delete needs")
            return statistics_of_row(chunk, row)

        applied = delete_index.for_file(
            chunk_paths[row].as_py(), keys[codes[row]], int(sequence_numbers[row]), statistics
        )
        if applied.position_deletes or applied.deletion_vector is not None or applied.equality_deletes:
            deletes[offset + row] = applied
