"""Does a table need compaction? File counts and deleted rows of the current snapshot, from manifests alone.

1. Read the current snapshot's manifests (live entries only) through the table's FileIO; no data file is opened.
2. Count data files and those smaller than ``small_file_bytes`` (default: RewriteDataFiles' minimum file size,
   0.75 x the table's ``write.target-file-size-bytes``), delete files (position, deletion vectors, equality) and
   the rows they delete (their record counts: an upper bound, as a delete may name an already deleted row).
3. Compare with the thresholds; each threshold that is reached is one reason to compact.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pyiceberg.manifest import DataFileContent

TARGET_FILE_SIZE_PROPERTY = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024
MIN_FILE_SIZE_RATIO = 0.75


@dataclass(frozen=True)
class FileStats:
    """Live files of one snapshot, by kind, and the rows they hold or delete."""

    snapshot_id: int | None
    data_files: int
    small_data_files: int
    small_file_bytes: int
    data_rows: int
    delete_files: int
    deleted_rows: int

    @property
    def deleted_row_ratio(self) -> float:
        """Deleted rows over data rows (0 for an empty table)."""
        return self.deleted_rows / self.data_rows if self.data_rows else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the ratio."""
        return {**asdict(self), "deleted_row_ratio": round(self.deleted_row_ratio, 6)}


@dataclass(frozen=True)
class CompactionThresholds:
    """Compaction is needed when any given threshold is reached (``None`` switches a rule off)."""

    min_small_files: int | None = None
    min_delete_files: int | None = None
    min_deleted_row_ratio: float | None = None
    small_file_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.min_small_files is None and self.min_delete_files is None and self.min_deleted_row_ratio is None:
            raise ValueError(
                "compaction thresholds: set at least one of min_small_files, min_delete_files, min_deleted_row_ratio"
            )

    def reasons(self, stats: FileStats) -> list[str]:
        """One sentence per threshold ``stats`` reaches; empty when compaction is not needed."""
        reasons = []
        if self.min_small_files is not None and stats.small_data_files >= self.min_small_files:
            reasons.append(
                f"{stats.small_data_files} data files under {stats.small_file_bytes} bytes "
                f"(threshold {self.min_small_files})"
            )
        if self.min_delete_files is not None and stats.delete_files >= self.min_delete_files:
            reasons.append(f"{stats.delete_files} delete files (threshold {self.min_delete_files})")
        if self.min_deleted_row_ratio is not None and stats.deleted_row_ratio >= self.min_deleted_row_ratio:
            reasons.append(f"deleted-row ratio {stats.deleted_row_ratio:.3f} (threshold {self.min_deleted_row_ratio})")
        return reasons


def small_file_bytes_of(table: Any, override: int | None = None) -> int:
    """The size under which a data file counts as small for ``table``."""
    if override is not None:
        return int(override)
    target = int(table.properties.get(TARGET_FILE_SIZE_PROPERTY, DEFAULT_TARGET_FILE_SIZE))
    return int(target * MIN_FILE_SIZE_RATIO)


def file_stats(table: Any, small_file_bytes: int | None = None) -> FileStats:
    """Counts of the live files of ``table``'s current snapshot (a pyiceberg Table), read from manifests."""
    threshold = small_file_bytes_of(table, small_file_bytes)
    snapshot = table.current_snapshot()
    counts = {"data_files": 0, "small_data_files": 0, "data_rows": 0, "delete_files": 0, "deleted_rows": 0}
    if snapshot is not None:
        for manifest in snapshot.manifests(table.io):
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                data_file = entry.data_file
                if data_file.content == DataFileContent.DATA:
                    counts["data_files"] += 1
                    counts["data_rows"] += data_file.record_count
                    counts["small_data_files"] += data_file.file_size_in_bytes < threshold
                else:
                    counts["delete_files"] += 1
                    counts["deleted_rows"] += data_file.record_count
    return FileStats(
        snapshot_id=snapshot.snapshot_id if snapshot is not None else None, small_file_bytes=threshold, **counts
    )
