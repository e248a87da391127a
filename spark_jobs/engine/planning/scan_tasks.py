"""The units of work a scan plan hands to executors: data file slices with exactly the deletes that apply.

These are plain, picklable dataclasses: the driver builds them from Iceberg metadata (``planning``), Spark ships
them to executors inside input partitions, and the per-file reader (``parquet.opener`` with ``deletes``) consumes
them. Nothing here touches storage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class PositionDeleteFile:
    """A position delete file (content=1, Parquet) that may hold positions for one data file."""

    path: str
    file_size_in_bytes: int
    record_count: int
    data_sequence_number: int
    # When set, the file holds positions for this data file only (spec: referenced_data_file).
    referenced_data_file: str | None = None


@dataclass(frozen=True)
class DeletionVector:
    """A v3 deletion vector: one Puffin blob (deletion-vector-v1) that deletes positions of one data file."""

    path: str  # the Puffin file
    content_offset: int
    content_size_in_bytes: int
    cardinality: int  # record_count of the delete file entry: number of deleted positions
    referenced_data_file: str
    data_sequence_number: int


@dataclass(frozen=True)
class EqualityDeleteFile:
    """An equality delete file (content=2): rows whose ``equality_ids`` columns equal a delete row are deleted."""

    path: str
    file_size_in_bytes: int
    record_count: int
    equality_ids: tuple[int, ...]
    data_sequence_number: int


@dataclass(frozen=True)
class DataFileSlice:
    """A data file, or the row groups of it whose first byte falls in ``[start, start + length)``.

    ``start``/``length`` follow Iceberg's FileScanTask: a split covers every row group whose starting offset is in
    its byte range, so the splits of one file partition its row groups exactly. A whole file is ``start=0``,
    ``length=file_size_in_bytes``.
    """

    path: str
    file_size_in_bytes: int
    record_count: int
    spec_id: int
    # Identity-partition source field id -> the partition value (Python value as pyiceberg holds it).
    partition_constants: dict[int, Any] = field(default_factory=dict)
    start: int = 0
    length: int = 0
    # Deletes that apply to this data file (already filtered by the sequence-number and partition rules).
    position_deletes: tuple[PositionDeleteFile, ...] = ()
    deletion_vector: DeletionVector | None = None
    equality_deletes: tuple[EqualityDeleteFile, ...] = ()
    data_sequence_number: int = 0
    # The file's first row id (v3 row lineage, explicit or inherited from its manifest); None before v3.
    first_row_id: int | None = None
    # Row-group split offsets from the manifest (split_offsets), when known.
    split_offsets: tuple[int, ...] | None = None
    # The file's partition values, in its spec's field order (as pyiceberg holds them): writers of deletes for it
    # put them in this partition.
    partition: tuple[Any, ...] = ()

    @property
    def has_deletes(self) -> bool:
        """True when any delete applies: such files take the merge-on-read path, others the plain path."""
        return bool(self.position_deletes or self.deletion_vector or self.equality_deletes)

    @property
    def is_whole_file(self) -> bool:
        """True when the slice covers every row group of the file."""
        return self.start == 0 and self.length >= self.file_size_in_bytes


class ScanTask:
    """One executor's unit of work: slices packed together up to the split size (open-file cost counted).

    Made from slices, or by the planner as rows of one ``SliceColumns`` shared by every task of a plan: then the
    slice objects are made on first use, and pickling a task ships only its own rows (a plan of 10^6 files never
    holds 10^6 slice objects on the driver).
    """

    __slots__ = ("_columns", "_rows", "_slices")

    def __init__(self, slices: Sequence[DataFileSlice] = ()) -> None:
        self._slices: tuple[DataFileSlice, ...] | None = tuple(slices)
        self._columns: SliceColumns | None = None
        self._rows: Sequence[int] = ()

    @classmethod
    def of_rows(cls, columns: SliceColumns, rows: Sequence[int]) -> ScanTask:
        """The task reading slices ``rows`` of ``columns``."""
        task = cls.__new__(cls)
        task._slices = None
        task._columns = columns
        task._rows = rows
        return task

    @property
    def slices(self) -> tuple[DataFileSlice, ...]:
        """The task's slices, in packing order."""
        if self._slices is None:
            assert self._columns is not None
            self._slices = tuple(self._columns.slice_at(row) for row in self._rows)
        return self._slices

    @property
    def slice_count(self) -> int:
        """How many slices the task reads (without making them)."""
        return len(self._rows) if self._slices is None else len(self._slices)

    @property
    def estimated_bytes(self) -> int:
        """Bytes this task is expected to read, as counted by the packer."""
        if self._slices is None and self._columns is not None:
            return int(sum(int(self._columns.lengths[row]) for row in self._rows))
        return sum(s.length for s in self.slices)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScanTask) and self.slices == other.slices

    def __hash__(self) -> int:
        return hash(tuple(s.path for s in self.slices))

    def __repr__(self) -> str:
        return f"ScanTask({self.slice_count} slices)"

    def __getstate__(self) -> dict[str, Any]:
        """This task's slices as plain field tuples (no planner columns, no slice objects made on the driver)."""
        if self._slices is None and self._columns is not None:
            return {"fields": [self._columns.slice_fields(row) for row in self._rows]}
        return {"slices": self.slices}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._columns = None
        self._rows = ()
        fields = state.get("fields")
        self._slices = (
            tuple(_slice_from_fields(values) for values in fields) if fields is not None else tuple(state["slices"])
        )


# Every field's default, for slices made from the fields the planner fills (a field added later keeps its default).
_SLICE_DEFAULTS: dict[str, Any] = {}
for _field in dataclasses.fields(DataFileSlice):
    if _field.default is not dataclasses.MISSING:
        _SLICE_DEFAULTS[_field.name] = _field.default
    elif _field.default_factory is not dataclasses.MISSING:
        _SLICE_DEFAULTS[_field.name] = _field.default_factory()
_NEW = object.__new__
_SET = object.__setattr__


def _slice_from_fields(values: dict[str, Any]) -> DataFileSlice:
    """A slice from its field values by name (without the frozen dataclass's per-field checks)."""
    data_file_slice = _NEW(DataFileSlice)
    _SET(data_file_slice, "__dict__", {**_SLICE_DEFAULTS, **values})
    return data_file_slice


class SliceColumns:
    """The slices of one plan as columns: per data file (``files``) and per slice (``file_rows``, ``starts``,
    ``lengths``). Python values are made from the columns once, when a slice is first asked for."""

    def __init__(
        self,
        *,
        paths: Sequence[str],
        file_sizes: np.ndarray,
        record_counts: np.ndarray,
        spec_ids: np.ndarray,
        data_sequence_numbers: np.ndarray,
        first_row_ids: Sequence[int | None],
        split_offsets: Sequence[tuple[int, ...] | None],
        partitions: Sequence[tuple[Any, ...]],
        partition_constants: Sequence[dict[int, Any]],
        deletes: dict[
            int, tuple[tuple[PositionDeleteFile, ...], DeletionVector | None, tuple[EqualityDeleteFile, ...]]
        ],
        file_rows: np.ndarray,
        starts: np.ndarray,
        lengths: np.ndarray,
    ) -> None:
        self.paths = paths
        self.file_sizes = file_sizes
        self.record_counts = record_counts
        self.spec_ids = spec_ids
        self.data_sequence_numbers = data_sequence_numbers
        self.first_row_ids = first_row_ids
        self.split_offsets = split_offsets
        self.partitions = partitions
        self.partition_constants = partition_constants
        self.deletes = deletes
        self.file_rows = file_rows
        self.starts = starts
        self.lengths = lengths

    def __len__(self) -> int:
        return len(self.file_rows)

    def slice_fields(self, row: int) -> dict[str, Any]:
        """Slice ``row``'s field values by ``DataFileSlice`` field name."""
        file_row = int(self.file_rows[row])
        position_deletes, deletion_vector, equality_deletes = self.deletes.get(file_row, _NO_DELETES)
        return {
            "path": self.paths[file_row],
            "file_size_in_bytes": int(self.file_sizes[file_row]),
            "record_count": int(self.record_counts[file_row]),
            "spec_id": int(self.spec_ids[file_row]),
            "partition_constants": self.partition_constants[file_row],
            "start": int(self.starts[row]),
            "length": int(self.lengths[row]),
            "position_deletes": position_deletes,
            "deletion_vector": deletion_vector,
            "equality_deletes": equality_deletes,
            "data_sequence_number": int(self.data_sequence_numbers[file_row]),
            "first_row_id": self.first_row_ids[file_row],
            "split_offsets": self.split_offsets[file_row],
            "partition": self.partitions[file_row],
        }

    def slice_at(self, row: int) -> DataFileSlice:
        """Slice ``row`` as the object executors read."""
        return _slice_from_fields(self.slice_fields(row))


_NO_DELETES: tuple[tuple[PositionDeleteFile, ...], DeletionVector | None, tuple[EqualityDeleteFile, ...]] = (
    (),
    None,
    (),
)
