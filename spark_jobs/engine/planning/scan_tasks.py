"""The units of work a scan plan hands to executors: data file slices with exactly the deletes that apply.

These are plain, picklable dataclasses: the driver builds them from Iceberg metadata (``planning``), Spark ships
them to executors inside input partitions, and the per-file reader (``parquet.opener`` with ``deletes``) consumes
them. Nothing here touches storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


@dataclass(frozen=True)
class ScanTask:
    """One executor's unit of work: slices packed together up to the split size (open-file cost counted)."""

    slices: tuple[DataFileSlice, ...]

    @property
    def estimated_bytes(self) -> int:
        """Bytes this task is expected to read, as counted by the packer."""
        return sum(s.length for s in self.slices)
