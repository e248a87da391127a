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
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pyiceberg.manifest import INITIAL_SEQUENCE_NUMBER, DataFile, DataFileContent, FileFormat, ManifestEntry
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField

from spark_jobs.engine.planning.equality_delete_bounds import can_contain_equality_deletes, equality_fields
from spark_jobs.engine.planning.scan_tasks import DeletionVector, EqualityDeleteFile, PositionDeleteFile
from spark_jobs.engine.shared.errors import CorruptFileError
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
class _EqualityDeletes:
    """An equality delete file with its manifest entry's statistics and the equality fields they can prove on."""

    delete_file: EqualityDeleteFile
    statistics: DataFile
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

    def add(self, entry: ManifestEntry) -> None:
        """Index one live delete-file entry (position deletes, deletion vector or equality deletes)."""
        delete_file = entry.data_file
        sequence_number = _data_sequence_number(entry)
        partition = partition_key(delete_file)
        self._holds_deletes = True
        if delete_file.content == DataFileContent.EQUALITY_DELETES:
            fields = equality_fields(self._schema, delete_file.equality_ids or ()) if self._schema else []
            equality_delete = _EqualityDeletes(_equality_delete_file(delete_file, sequence_number), delete_file, fields)
            if self._is_unpartitioned(delete_file):
                self._global_equality_deletes.add(sequence_number, equality_delete)
            else:
                self._equality_deletes_by_partition[partition].add(sequence_number, equality_delete)
        elif delete_file.content == DataFileContent.POSITION_DELETES and delete_file.file_format == FileFormat.PUFFIN:
            deletion_vector = _deletion_vector(delete_file, sequence_number)
            self._deletion_vectors_by_path[deletion_vector.referenced_data_file].append((partition, deletion_vector))
        elif delete_file.content == DataFileContent.POSITION_DELETES:
            lower_path, upper_path = _path_bounds(delete_file)
            target = file_scope(delete_file)
            position_delete = _position_delete_file(delete_file, sequence_number, target)
            if target is not None:
                self._position_deletes_by_path[target].add(sequence_number, (partition, position_delete))
            else:
                bounded = _PathBoundedPositionDeletes(position_delete, lower_path, upper_path)
                self._position_deletes_by_partition[partition].add(sequence_number, bounded)
        else:
            raise CorruptFileError(
                f"manifest entry for {delete_file.file_path} is not a delete file (content {delete_file.content})"
            )

    def for_data_file(self, entry: ManifestEntry) -> AppliedDeletes:
        """The deletes that apply to the data file of ``entry``, by the rules in the module docstring."""
        if not self._holds_deletes:
            return _NO_DELETES
        data_file = entry.data_file
        path = data_file.file_path
        sequence_number = _data_sequence_number(entry)
        partition = partition_key(data_file)
        equality_deletes = self._equality_deletes_for(data_file, partition, sequence_number)
        deletion_vector = self._deletion_vector_for(path, partition, sequence_number)
        if deletion_vector is not None:
            return AppliedDeletes(deletion_vector=deletion_vector, equality_deletes=equality_deletes)
        return AppliedDeletes(
            position_deletes=self._position_deletes_for(path, partition, sequence_number),
            equality_deletes=equality_deletes,
        )

    def _deletion_vector_for(self, path: str, partition: PartitionKey, sequence_number: int) -> DeletionVector | None:
        """The one DV for this data file, or None; two that apply mean corrupt metadata."""
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
        return tuple(sorted(found, key=lambda delete_file: (delete_file.data_sequence_number, delete_file.path)))

    def _equality_deletes_for(
        self, data_file: DataFile, partition: PartitionKey, sequence_number: int
    ) -> tuple[EqualityDeleteFile, ...]:
        """Equality delete files newer than the data file, its partition's and the global ones, that may match."""
        candidates = self._global_equality_deletes.after(sequence_number)
        partition_deletes = self._equality_deletes_by_partition.get(partition)
        if partition_deletes is not None:
            candidates = candidates + partition_deletes.after(sequence_number)
        found = [
            candidate.delete_file
            for candidate in candidates
            if can_contain_equality_deletes(data_file, candidate.statistics, candidate.fields)
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
    return content_file.spec_id, tuple(_NAN if _is_nan(value) else value for value in partition_values(content_file))


def _is_nan(value: Any) -> bool:
    """True for a float NaN partition value."""
    return isinstance(value, float) and math.isnan(value)


def _data_sequence_number(entry: ManifestEntry) -> int:
    """The entry's data sequence number (inherited from its manifest when not written)."""
    return entry.sequence_number if entry.sequence_number is not None else INITIAL_SEQUENCE_NUMBER


def file_scope(delete_file: DataFile) -> str | None:
    """The one data file a position delete file holds positions for (``referenced_data_file``, or equal
    ``file_path`` bounds: Iceberg Java's ``ContentFileUtil.isFileScoped``), None when it may hold several."""
    target = referenced_data_file(delete_file)
    lower_path, upper_path = _path_bounds(delete_file)
    if target is None and lower_path is not None and lower_path == upper_path:
        target = lower_path.decode("utf-8", errors="replace")
    return target


def _path_bounds(delete_file: DataFile) -> tuple[bytes | None, bytes | None]:
    """Lower and upper bound of the ``file_path`` column of a position delete file, when recorded."""
    lower_bounds = delete_file.lower_bounds or {}
    upper_bounds = delete_file.upper_bounds or {}
    return lower_bounds.get(DELETE_FILE_PATH_FIELD_ID), upper_bounds.get(DELETE_FILE_PATH_FIELD_ID)


def _position_delete_file(delete_file: DataFile, sequence_number: int, target: str | None) -> PositionDeleteFile:
    """A position delete file entry as the task type executors read."""
    return PositionDeleteFile(
        path=delete_file.file_path,
        file_size_in_bytes=delete_file.file_size_in_bytes,
        record_count=delete_file.record_count,
        data_sequence_number=sequence_number,
        referenced_data_file=target,
    )


def _deletion_vector(delete_file: DataFile, sequence_number: int) -> DeletionVector:
    """A deletion-vector entry as the task type executors read; the v3 fields it needs must be present."""
    target = referenced_data_file(delete_file)
    offset = content_offset(delete_file)
    size = content_size_in_bytes(delete_file)
    if target is None or offset is None or size is None:
        raise CorruptFileError(
            f"deletion vector in {delete_file.file_path} lacks referenced_data_file, content_offset or "
            f"content_size_in_bytes in its manifest entry (got {target!r}, {offset!r}, {size!r})"
        )
    return DeletionVector(
        path=delete_file.file_path,
        content_offset=offset,
        content_size_in_bytes=size,
        cardinality=delete_file.record_count,
        referenced_data_file=target,
        data_sequence_number=sequence_number,
    )


def _equality_delete_file(delete_file: DataFile, sequence_number: int) -> EqualityDeleteFile:
    """An equality delete file entry as the task type executors read; it must name its equality ids."""
    if not delete_file.equality_ids:
        raise CorruptFileError(f"equality delete file {delete_file.file_path} has no equality_ids in its manifest")
    return EqualityDeleteFile(
        path=delete_file.file_path,
        file_size_in_bytes=delete_file.file_size_in_bytes,
        record_count=delete_file.record_count,
        equality_ids=tuple(delete_file.equality_ids),
        data_sequence_number=sequence_number,
    )
