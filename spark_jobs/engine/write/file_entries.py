"""A written data or delete file as one frozen, picklable value (what executors send the driver), and its DataFile.

Executors write files and describe each one with ``describe_file`` (a ``WrittenFile``: the file, its partition,
its metrics as ``DataFileStatistics`` serializes them, and the fields of its kind of file); the driver turns each
into a pyiceberg ``DataFile`` with ``to_data_file`` (the partition as a ``Record`` of the spec's partition values).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.typedef import Record


@dataclass(frozen=True)
class WrittenFile:
    """One file a job wrote: where, how big, which partition, how many rows, its column metrics, and per kind the
    equality ids (equality deletes), the referenced data file and blob range (deletion vectors), and the data files
    a position delete file names (``deleted_from_data_files``, which the commit requires to still be live)."""

    content: int  # DataFileContent: 0 data, 1 position deletes, 2 equality deletes
    file_path: str
    file_size_in_bytes: int
    spec_id: int
    partition_values: tuple[Any, ...]
    record_count: int
    column_sizes: Mapping[int, int] | None = None
    value_counts: Mapping[int, int] | None = None
    null_value_counts: Mapping[int, int] | None = None
    nan_value_counts: Mapping[int, int] | None = None
    lower_bounds: Mapping[int, bytes] | None = None
    upper_bounds: Mapping[int, bytes] | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    referenced_data_file: str | None = None
    file_format: str = FileFormat.PARQUET.value
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    deleted_from_data_files: tuple[str, ...] = ()

    @property
    def is_data(self) -> bool:
        """Whether this is a data file (not a delete file)."""
        return self.content == DataFileContent.DATA

    @property
    def partition_key(self) -> tuple[int, tuple[Any, ...]]:
        """(spec id, partition values): the partition the file belongs to."""
        return self.spec_id, self.partition_values

    def __getitem__(self, name: str) -> Any:
        """A field by name (``written["file_path"]``), for scripts written against the former plain dict: only the
        declared fields exist, so nothing can be added ad hoc; the code itself reads the attributes."""
        if name not in _FIELD_NAMES:
            raise KeyError(name)
        return getattr(self, name)


_FIELD_NAMES = frozenset(field.name for field in fields(WrittenFile))


def describe_file(
    *,
    content: DataFileContent,
    file_path: str,
    file_size_in_bytes: int,
    spec_id: int,
    partition_values: list[Any] | tuple[Any, ...],
    statistics: Mapping[str, Any],
    equality_ids: list[int] | None = None,
    sort_order_id: int | None = None,
    referenced_data_file: str | None = None,
) -> WrittenFile:
    """One written file; ``statistics`` is ``DataFileStatistics.to_serialized_dict()``."""
    split_offsets = statistics.get("split_offsets")
    return WrittenFile(
        content=int(content),
        file_path=file_path,
        file_size_in_bytes=file_size_in_bytes,
        spec_id=spec_id,
        partition_values=tuple(partition_values),
        record_count=statistics["record_count"],
        column_sizes=statistics.get("column_sizes"),
        value_counts=statistics.get("value_counts"),
        null_value_counts=statistics.get("null_value_counts"),
        nan_value_counts=statistics.get("nan_value_counts"),
        lower_bounds=statistics.get("lower_bounds"),
        upper_bounds=statistics.get("upper_bounds"),
        split_offsets=tuple(split_offsets) if split_offsets is not None else None,
        equality_ids=tuple(equality_ids) if equality_ids else None,
        sort_order_id=sort_order_id,
        referenced_data_file=referenced_data_file,
    )


def to_data_file(written: WrittenFile) -> DataFile:
    """The pyiceberg ``DataFile`` of a written file."""
    data_file = DataFile.from_args(
        _table_format_version=3,  # the v3 layout keeps referenced_data_file and the deletion vector fields
        content=DataFileContent(written.content),
        file_path=written.file_path,
        file_format=FileFormat(written.file_format),
        partition=Record(*written.partition_values),
        record_count=written.record_count,
        file_size_in_bytes=written.file_size_in_bytes,
        column_sizes=_plain(written.column_sizes),
        value_counts=_plain(written.value_counts),
        null_value_counts=_plain(written.null_value_counts),
        nan_value_counts=_plain(written.nan_value_counts),
        lower_bounds=_plain(written.lower_bounds),
        upper_bounds=_plain(written.upper_bounds),
        split_offsets=list(written.split_offsets) if written.split_offsets is not None else None,
        equality_ids=list(written.equality_ids) if written.equality_ids else None,
        sort_order_id=written.sort_order_id,
        referenced_data_file=written.referenced_data_file,
        content_offset=written.content_offset,
        content_size_in_bytes=written.content_size_in_bytes,
        spec_id=written.spec_id,
    )
    data_file.spec_id = written.spec_id
    return data_file


def _plain(mapping: Mapping[Any, Any] | None) -> dict[Any, Any] | None:
    return dict(mapping) if mapping is not None else None
