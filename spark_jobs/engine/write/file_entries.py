"""Data and delete file metadata as plain, picklable dicts (what executors send the driver) and back.

Executors write files and describe each one with ``describe_file``; the driver turns the dicts into pyiceberg
``DataFile`` values with ``to_data_file`` (the partition as a ``Record`` of the spec's partition values).
"""

from __future__ import annotations

from typing import Any

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.typedef import Record

_STATISTICS_KEYS = (
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
    "split_offsets",
)


def describe_file(
    *,
    content: DataFileContent,
    file_path: str,
    file_size_in_bytes: int,
    spec_id: int,
    partition_values: list[Any],
    statistics: dict[str, Any],
    equality_ids: list[int] | None = None,
    sort_order_id: int | None = None,
    referenced_data_file: str | None = None,
) -> dict[str, Any]:
    """One written file as a plain dict; ``statistics`` is ``DataFileStatistics.to_serialized_dict()``."""
    described = {
        "content": int(content),
        "file_path": file_path,
        "file_size_in_bytes": file_size_in_bytes,
        "spec_id": spec_id,
        "partition_values": list(partition_values),
        "record_count": statistics["record_count"],
        "equality_ids": list(equality_ids) if equality_ids else None,
        "sort_order_id": sort_order_id,
        "referenced_data_file": referenced_data_file,
    }
    described.update({key: statistics.get(key) for key in _STATISTICS_KEYS})
    return described


def to_data_file(described: dict[str, Any]) -> DataFile:
    """The pyiceberg ``DataFile`` of a file described by ``describe_file``."""
    statistics: dict[str, Any] = {key: described.get(key) for key in _STATISTICS_KEYS}
    data_file = DataFile.from_args(
        _table_format_version=3,  # the v3 layout keeps referenced_data_file and the deletion vector fields
        content=DataFileContent(described["content"]),
        file_path=described["file_path"],
        file_format=FileFormat(described.get("file_format", FileFormat.PARQUET.value)),
        partition=Record(*described["partition_values"]),
        record_count=described["record_count"],
        file_size_in_bytes=described["file_size_in_bytes"],
        equality_ids=described.get("equality_ids"),
        sort_order_id=described.get("sort_order_id"),
        referenced_data_file=described.get("referenced_data_file"),
        content_offset=described.get("content_offset"),
        content_size_in_bytes=described.get("content_size_in_bytes"),
        spec_id=described["spec_id"],
        **statistics,
    )
    data_file.spec_id = described["spec_id"]
    return data_file
