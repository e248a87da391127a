"""Which delete files apply to a data file: the spec's rules, indexed so each lookup is a dict hit and a bisect.

The rules (spec: "Scan Planning"; data seq and delete seq are the entries' data sequence numbers):

1. A deletion vector applies iff its ``referenced_data_file`` is the data file's path, data seq <= delete seq, and it
   has the data file's partition (spec id and partition tuple). When one applies, position delete files for that
   data file are ignored. Two live DVs for one data file are corrupt metadata, and so is a DV (or a position delete
   file scoped to one data file) that names the data file, is not older than it, but has another partition: the
   read fails naming both files, as Iceberg Java 1.12 does (``DeleteFileIndex.validatePartitionMatch``).
2. A position delete file applies iff its ``referenced_data_file`` is null or the data file's path, data seq <=
   delete seq, and same partition. A file without ``referenced_data_file`` whose ``file_path`` bounds (field
   2147483546) are one path is indexed by that path; otherwise by partition, and then its bounds skip data files
   whose path lies outside them.
3. An equality delete file applies iff data seq < delete seq (strictly) and it has the data file's partition, or
   its spec is unpartitioned (a global delete, applying in every partition of every spec). Its equality ids are
   kept as written, dropped columns included. Given the table schema, a delete file whose column statistics prove
   it deletes no row of the data file is left out too (``equality_delete_bounds``, as Iceberg Java does).

Each family is kept sorted by sequence number and searched with ``bisect``, as pyiceberg's and Iceberg Java's
``DeleteFileIndex`` do.

Delete files come in as manifest entries (``add``) or as rows of manifest columns (``add_columns``); data files are
looked up as entries (``for_data_file``) or by their values (``for_file``). For a plan of many files,
``files_that_may_have_deletes`` says, for all files at once, which can have any: only those are looked up.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.manifest import INITIAL_SEQUENCE_NUMBER, DataFile, FileFormat, ManifestEntry
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField

from spark_jobs.engine.planning.equality_delete_bounds import can_contain_equality_deletes, equality_fields
from spark_jobs.engine.planning.scan_tasks import DeletionVector, EqualityDeleteFile, PositionDeleteFile
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.table.manifest_columns import (
    CONTENT_EQUALITY_DELETES,
    CONTENT_POSITION_DELETES,
    ManifestColumns,
)
from spark_jobs.engine.table.manifest_entries import (
    content_offset,
    content_size_in_bytes,
    partition_values,
    referenced_data_file,
)

# Field id of the ``file_path`` column of position delete files (spec: reserved field ids).
DELETE_FILE_PATH_FIELD_ID = 2147483546

# (partition spec id, partition tuple): deletes other than global equality deletes apply within one of these.
PartitionKey = tuple[int, tuple[Any, ...]]

Delete = TypeVar("Delete")

# Stands for a NaN partition value, so files of a NaN partition (float identity partitions) share one key.
_NAN = ("NaN",)


@dataclass(frozen=True)
class AppliedDeletes:
    """The delete files that apply to one data file, ready for ``DataFileSlice``."""

    position_deletes: tuple[PositionDeleteFile, ...] = ()
    deletion_vector: DeletionVector | None = None
    equality_deletes: tuple[EqualityDeleteFile, ...] = ()


_NO_DELETES = AppliedDeletes()


@dataclass(frozen=True)
class _PathBoundedPositionDeletes:
    """A position delete file with the range of data file paths its rows name (UTF-8 bytes; None: unknown)."""

    delete_file: PositionDeleteFile
    lower_path: bytes | None
    upper_path: bytes | None

    def may_hold(self, data_file_path: bytes) -> bool:
        """False when the path bounds prove the file holds no position for ``data_file_path``."""
        if self.lower_path is not None and data_file_path < self.lower_path:
            return False
        return self.upper_path is None or data_file_path <= self.upper_path


@dataclass(frozen=True)
class ContentStatistics:
    """The column statistics of a data or delete file that the equality-delete bounds check reads."""

    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None


@dataclass(frozen=True)
class DeleteRecord:
    """A live delete file's manifest entry, reduced to what the index needs."""

    content: int
    file_format: str
    path: str
    file_size_in_bytes: int
    record_count: int
    data_sequence_number: int
    partition: PartitionKey
    unpartitioned_spec: bool
    referenced_data_file: str | None
    content_offset: int | None
    content_size_in_bytes: int | None
    equality_ids: tuple[int, ...] | None
    statistics: ContentStatistics


@dataclass(frozen=True)
class _EqualityDeletes:
    """An equality delete file with its manifest entry's statistics and the equality fields they can prove on."""

    delete_file: EqualityDeleteFile
    statistics: ContentStatistics
    fields: list[NestedField]


class _BySequenceNumber(Generic[Delete]):
    """Deletes of one family, sorted by data sequence number once all are added, for bisect lookups."""

    __slots__ = ("_deletes", "_pending", "_sequence_numbers")

    def __init__(self) -> None:
        self._pending: list[tuple[int, Delete]] | None = []
        self._sequence_numbers: list[int] = []
        self._deletes: list[Delete] = []

    def add(self, sequence_number: int, delete: Delete) -> None:
        """Add a delete; only before the first lookup."""
        if self._pending is None:
            raise RuntimeError("deletes cannot be added to the index after the first lookup")
        self._pending.append((sequence_number, delete))

    def at_or_after(self, sequence_number: int) -> list[Delete]:
        """Deletes whose sequence number is >= ``sequence_number`` (position deletes and DVs)."""
        self._sort()
        return self._deletes[bisect_left(self._sequence_numbers, sequence_number) :]

    def after(self, sequence_number: int) -> list[Delete]:
        """Deletes whose sequence number is > ``sequence_number`` (equality deletes)."""
        self._sort()
        return self._deletes[bisect_right(self._sequence_numbers, sequence_number) :]

    def _sort(self) -> None:
        if self._pending is not None:
            ordered = sorted(self._pending, key=lambda item: item[0])
            self._sequence_numbers = [sequence_number for sequence_number, _ in ordered]
            self._deletes = [delete for _, delete in ordered]
            self._pending = None


class DeleteFileIndex:
    """Indexes a snapshot's live delete files so ``for_data_file`` returns exactly those that apply."""

    def __init__(self, specs: dict[int, PartitionSpec], schema: Schema | None = None) -> None:
        self._specs = specs
        self._schema = schema
        self._holds_deletes = False
        self._deletion_vectors_by_path: dict[str, list[tuple[PartitionKey, DeletionVector]]] = defaultdict(list)
        self._position_deletes_by_path: dict[str, _BySequenceNumber[tuple[PartitionKey, PositionDeleteFile]]] = (
            defaultdict(_BySequenceNumber)
        )
        self._position_deletes_by_partition: dict[PartitionKey, _BySequenceNumber[_PathBoundedPositionDeletes]] = (
            defaultdict(_BySequenceNumber)
        )
        self._equality_deletes_by_partition: dict[PartitionKey, _BySequenceNumber[_EqualityDeletes]] = defaultdict(
            _BySequenceNumber
        )
        self._global_equality_deletes: _BySequenceNumber[_EqualityDeletes] = _BySequenceNumber()
        self._global_max_sequence_number: int | None = None
        self.equality_field_ids: set[int] = set()

    @property
    def holds_deletes(self) -> bool:
        """True once any delete file was added."""
        return self._holds_deletes

    def add(self, entry: ManifestEntry) -> None:
        """Index one live delete-file entry (position deletes, deletion vector or equality deletes)."""
        self.add_record(_record_from_entry(entry, self._is_unpartitioned(entry.data_file)))

    def add_columns(self, columns: ManifestColumns, rows: Sequence[int] | np.ndarray) -> None:
        """Index the delete files of rows ``rows`` of a manifest's columns."""
        spec = self._specs.get(columns.spec_id)
        unpartitioned = spec.is_unpartitioned() if spec is not None else not columns.partition_types
        for record in _records_from_columns(columns, rows, unpartitioned):
            self.add_record(record)

    def add_record(self, record: DeleteRecord) -> None:
        """Index one delete file (rules in the module doc)."""
        sequence_number = record.data_sequence_number
        partition = record.partition
        self._holds_deletes = True
        if record.content == CONTENT_EQUALITY_DELETES:
            equality_delete_file = _equality_delete_file(record)
            self.equality_field_ids.update(equality_delete_file.equality_ids)
            fields = equality_fields(self._schema, equality_delete_file.equality_ids) if self._schema else []
            equality_delete = _EqualityDeletes(equality_delete_file, record.statistics, fields)
            if record.unpartitioned_spec:
                self._global_equality_deletes.add(sequence_number, equality_delete)
                self._global_max_sequence_number = max(self._global_max_sequence_number or 0, sequence_number)
            else:
                self._equality_deletes_by_partition[partition].add(sequence_number, equality_delete)
        elif record.content == CONTENT_POSITION_DELETES and record.file_format.upper() == FileFormat.PUFFIN.value:
            deletion_vector = _deletion_vector(record)
            self._deletion_vectors_by_path[deletion_vector.referenced_data_file].append((partition, deletion_vector))
        elif record.content == CONTENT_POSITION_DELETES:
            lower_path, upper_path = _path_bounds(record.statistics)
            target = _file_scope(record.referenced_data_file, lower_path, upper_path)
            position_delete = _position_delete_file(record, target)
            if target is not None:
                self._position_deletes_by_path[target].add(sequence_number, (partition, position_delete))
            else:
                bounded = _PathBoundedPositionDeletes(position_delete, lower_path, upper_path)
                self._position_deletes_by_partition[partition].add(sequence_number, bounded)
        else:
            raise CorruptFileError(f"manifest entry for {record.path} is not a delete file (content {record.content})")

    def files_that_may_have_deletes(
        self,
        paths: pa.Array,
        partitions: Sequence[PartitionKey],
        partition_codes: np.ndarray,
        sequence_numbers: np.ndarray,
    ) -> np.ndarray:
        """For many data files at once, which may have a delete that applies (the others surely have none).

        ``partitions`` are the distinct partition keys the files' ``partition_codes`` index.
        """
        if not self._holds_deletes:
            return np.zeros(len(paths), dtype=bool)
        path_keys = set(self._deletion_vectors_by_path) | set(self._position_deletes_by_path)
        candidates = np.zeros(len(paths), dtype=bool)
        if path_keys:
            value_set = pa.array(sorted(path_keys), pa.string())
            candidates |= pc.is_in(paths, value_set=value_set).to_numpy(zero_copy_only=False)
        partition_scoped = set(self._position_deletes_by_partition) | set(self._equality_deletes_by_partition)
        if partition_scoped and len(partitions):
            in_scope = np.fromiter((key in partition_scoped for key in partitions), dtype=bool, count=len(partitions))
            candidates |= in_scope[partition_codes]
        if self._global_max_sequence_number is not None:
            candidates |= sequence_numbers < self._global_max_sequence_number
        return candidates

    def for_data_file(self, entry: ManifestEntry) -> AppliedDeletes:
        """The deletes that apply to the data file of ``entry``, by the rules in the module docstring."""
        data_file = entry.data_file
        statistics = ContentStatistics(
            data_file.value_counts, data_file.null_value_counts, data_file.lower_bounds, data_file.upper_bounds
        )
        return self.for_file(data_file.file_path, partition_key(data_file), _data_sequence_number(entry), statistics)

    def for_file(
        self,
        path: str,
        partition: PartitionKey,
        sequence_number: int,
        statistics: ContentStatistics | Callable[[], ContentStatistics],
    ) -> AppliedDeletes:
        """The deletes that apply to the data file at ``path`` (its partition key and data sequence number);
        ``statistics`` (or a function giving them) are read only when an equality delete may apply."""
        if not self._holds_deletes:
            return _NO_DELETES
        equality_deletes = self._equality_deletes_for(statistics, partition, sequence_number)
        deletion_vector = self._deletion_vector_for(path, partition, sequence_number)
        if deletion_vector is not None:
            return AppliedDeletes(deletion_vector=deletion_vector, equality_deletes=equality_deletes)
        position_deletes = self._position_deletes_for(path, partition, sequence_number)
        if not position_deletes and not equality_deletes:
            return _NO_DELETES
        return AppliedDeletes(position_deletes=position_deletes, equality_deletes=equality_deletes)

    def _deletion_vector_for(self, path: str, partition: PartitionKey, sequence_number: int) -> DeletionVector | None:
        """The one DV for this data file, or None; two that apply, or one of another partition, are corrupt."""
        applying = []
        for dv_partition, deletion_vector in self._deletion_vectors_by_path.get(path, ()):
            if deletion_vector.data_sequence_number >= sequence_number:
                check_same_partition(deletion_vector.path, dv_partition, path, partition)
                applying.append(deletion_vector)
        if len(applying) > 1:
            puffin_files = ", ".join(sorted(dv.path for dv in applying))
            raise CorruptFileError(f"data file {path} has {len(applying)} live deletion vectors: {puffin_files}")
        return applying[0] if applying else None

    def _position_deletes_for(
        self, path: str, partition: PartitionKey, sequence_number: int
    ) -> tuple[PositionDeleteFile, ...]:
        """Position delete files for this data file: those naming its path, then those of its partition."""
        found: list[PositionDeleteFile] = []
        path_deletes = self._position_deletes_by_path.get(path)
        if path_deletes is not None:
            for delete_partition, delete_file in path_deletes.at_or_after(sequence_number):
                check_same_partition(delete_file.path, delete_partition, path, partition)
                found.append(delete_file)
        partition_deletes = self._position_deletes_by_partition.get(partition)
        if partition_deletes is not None:
            path_bytes = path.encode("utf-8")
            found.extend(
                bounded.delete_file
                for bounded in partition_deletes.at_or_after(sequence_number)
                if bounded.may_hold(path_bytes)
            )
        if len(found) <= 1:
            return tuple(found)
        return tuple(sorted(found, key=lambda delete_file: (delete_file.data_sequence_number, delete_file.path)))

    def _equality_deletes_for(
        self,
        statistics: ContentStatistics | Callable[[], ContentStatistics],
        partition: PartitionKey,
        sequence_number: int,
    ) -> tuple[EqualityDeleteFile, ...]:
        """Equality delete files newer than the data file, its partition's and the global ones, that may match."""
        candidates = self._global_equality_deletes.after(sequence_number)
        partition_deletes = self._equality_deletes_by_partition.get(partition)
        if partition_deletes is not None:
            candidates = candidates + partition_deletes.after(sequence_number)
        if not candidates:
            return ()
        data_statistics = statistics() if callable(statistics) else statistics
        found = [
            candidate.delete_file
            for candidate in candidates
            if can_contain_equality_deletes(data_statistics, candidate.statistics, candidate.fields)
        ]
        return tuple(sorted(found, key=lambda delete_file: (delete_file.data_sequence_number, delete_file.path)))

    def _is_unpartitioned(self, delete_file: DataFile) -> bool:
        """True when the delete file's spec has no partition fields (its equality deletes are global)."""
        spec = self._specs.get(delete_file.spec_id)
        return spec.is_unpartitioned() if spec is not None else len(delete_file.partition) == 0


def check_same_partition(
    delete_path: str, delete_partition: PartitionKey, data_path: str, data_partition: PartitionKey
) -> None:
    """Raise CorruptFileError naming both files when a delete file scoped to a data file has another partition."""
    if delete_partition == data_partition:
        return
    what = "specs" if delete_partition[0] != data_partition[0] else "partition tuples"
    raise CorruptFileError(
        f"mismatched partition {what}: delete file {delete_path} (spec {delete_partition[0]}, partition "
        f"{list(delete_partition[1])}) names data file {data_path} (spec {data_partition[0]}, partition "
        f"{list(data_partition[1])}): metadata is corrupted"
    )


def partition_key(content_file: DataFile) -> PartitionKey:
    """The (spec id, partition tuple) a data or delete file belongs to; NaN partition values compare equal."""
    return partition_key_of(content_file.spec_id, partition_values(content_file))


def _is_nan(value: Any) -> bool:
    """True for a float NaN partition value."""
    return isinstance(value, float) and math.isnan(value)


def _data_sequence_number(entry: ManifestEntry) -> int:
    """The entry's data sequence number (inherited from its manifest when not written)."""
    return entry.sequence_number if entry.sequence_number is not None else INITIAL_SEQUENCE_NUMBER


def file_scope(delete_file: DataFile) -> str | None:
    """The one data file a position delete file holds positions for (``referenced_data_file``, or equal
    ``file_path`` bounds: Iceberg Java's ``ContentFileUtil.isFileScoped``), None when it may hold several."""
    lower_path, upper_path = _path_bounds(delete_file)
    return _file_scope(referenced_data_file(delete_file), lower_path, upper_path)


def _file_scope(target: str | None, lower_path: bytes | None, upper_path: bytes | None) -> str | None:
    if target is None and lower_path is not None and lower_path == upper_path:
        target = lower_path.decode("utf-8", errors="replace")
    return target


def _path_bounds(statistics: DataFile | ContentStatistics) -> tuple[bytes | None, bytes | None]:
    """Lower and upper bound of the ``file_path`` column of a position delete file, when recorded."""
    lower_bounds = statistics.lower_bounds or {}
    upper_bounds = statistics.upper_bounds or {}
    return lower_bounds.get(DELETE_FILE_PATH_FIELD_ID), upper_bounds.get(DELETE_FILE_PATH_FIELD_ID)


def _record_from_entry(entry: ManifestEntry, unpartitioned_spec: bool) -> DeleteRecord:
    """A delete file's manifest entry as the index's record."""
    delete_file = entry.data_file
    file_format = delete_file.file_format
    return DeleteRecord(
        content=int(delete_file.content),
        file_format=file_format.value if isinstance(file_format, FileFormat) else str(file_format),
        path=delete_file.file_path,
        file_size_in_bytes=delete_file.file_size_in_bytes,
        record_count=delete_file.record_count,
        data_sequence_number=_data_sequence_number(entry),
        partition=partition_key(delete_file),
        unpartitioned_spec=unpartitioned_spec,
        referenced_data_file=referenced_data_file(delete_file),
        content_offset=content_offset(delete_file),
        content_size_in_bytes=content_size_in_bytes(delete_file),
        equality_ids=tuple(delete_file.equality_ids) if delete_file.equality_ids else None,
        statistics=ContentStatistics(
            delete_file.value_counts, delete_file.null_value_counts, delete_file.lower_bounds, delete_file.upper_bounds
        ),
    )


def _records_from_columns(
    columns: ManifestColumns, rows: Sequence[int] | np.ndarray, unpartitioned_spec: bool
) -> list[DeleteRecord]:
    """Rows of a manifest's columns as the index's records."""
    if not len(rows):
        return []
    taken = columns.table.take(pa.array(rows, pa.int64()))
    codes, partitions = columns.partition_groups
    keys = [partition_key_of(columns.spec_id, partition) for partition in partitions]
    values = {name: taken.column(name).to_pylist() for name in _RECORD_COLUMNS}
    maps = {name: taken.column(name).to_pylist() for name in _STATISTICS}
    records = []
    for position, row in enumerate(rows):
        sequence_number = values["sequence_number"][position]
        equality_ids = values["equality_ids"][position]
        statistics = ContentStatistics(*(_as_dict(maps[name][position]) for name in _STATISTICS))
        records.append(
            DeleteRecord(
                content=values["content"][position],
                file_format=values["file_format"][position] or "",
                path=values["file_path"][position],
                file_size_in_bytes=values["file_size_in_bytes"][position],
                record_count=values["record_count"][position],
                data_sequence_number=sequence_number if sequence_number is not None else INITIAL_SEQUENCE_NUMBER,
                partition=keys[codes[row]],
                unpartitioned_spec=unpartitioned_spec,
                referenced_data_file=values["referenced_data_file"][position],
                content_offset=values["content_offset"][position],
                content_size_in_bytes=values["content_size_in_bytes"][position],
                equality_ids=tuple(equality_ids) if equality_ids else None,
                statistics=statistics,
            )
        )
    return records


_RECORD_COLUMNS = (
    "content",
    "file_format",
    "file_path",
    "file_size_in_bytes",
    "record_count",
    "sequence_number",
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
    "equality_ids",
)
_STATISTICS = ("value_counts", "null_value_counts", "lower_bounds", "upper_bounds")


def _as_dict(pairs: list[tuple[int, Any]] | None) -> dict[int, Any] | None:
    return None if pairs is None else dict(pairs)


def statistics_of_row(columns: ManifestColumns, row: int) -> ContentStatistics:
    """The column statistics of one entry of manifest columns (which must hold them)."""
    return ContentStatistics(
        *(_as_dict(columns.table.column(name)[row].as_py()) for name in _STATISTICS)  # one file, on demand
    )


def partition_key_of(spec_id: int, partition: tuple[Any, ...]) -> PartitionKey:
    """The partition key of a file of spec ``spec_id`` with ``partition`` values (NaN values compare equal)."""
    return spec_id, tuple(_NAN if _is_nan(value) else value for value in partition)


def partition_keys(columns: ManifestColumns) -> list[PartitionKey]:
    """The partition keys of the distinct partitions of ``columns`` (``partition_groups`` order)."""
    _, partitions = columns.partition_groups
    return [partition_key_of(columns.spec_id, partition) for partition in partitions]


def _position_delete_file(record: DeleteRecord, target: str | None) -> PositionDeleteFile:
    """A position delete file entry as the task type executors read."""
    return PositionDeleteFile(
        path=record.path,
        file_size_in_bytes=record.file_size_in_bytes,
        record_count=record.record_count,
        data_sequence_number=record.data_sequence_number,
        referenced_data_file=target,
    )


def _deletion_vector(record: DeleteRecord) -> DeletionVector:
    """A deletion-vector entry as the task type executors read; the v3 fields it needs must be present."""
    target, offset, size = record.referenced_data_file, record.content_offset, record.content_size_in_bytes
    if target is None or offset is None or size is None:
        raise CorruptFileError(
            f"deletion vector in {record.path} lacks referenced_data_file, content_offset or "
            f"content_size_in_bytes in its manifest entry (got {target!r}, {offset!r}, {size!r})"
        )
    return DeletionVector(
        path=record.path,
        content_offset=offset,
        content_size_in_bytes=size,
        cardinality=record.record_count,
        referenced_data_file=target,
        data_sequence_number=record.data_sequence_number,
    )


def _equality_delete_file(record: DeleteRecord) -> EqualityDeleteFile:
    """An equality delete file entry as the task type executors read; it must name its equality ids."""
    if not record.equality_ids:
        raise CorruptFileError(f"equality delete file {record.path} has no equality_ids in its manifest")
    return EqualityDeleteFile(
        path=record.path,
        file_size_in_bytes=record.file_size_in_bytes,
        record_count=record.record_count,
        equality_ids=record.equality_ids,
        data_sequence_number=record.data_sequence_number,
    )
