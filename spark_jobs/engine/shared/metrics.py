"""Counters every stage of a scan adds to: what was pruned, read, deleted and returned.

One ``ScanMetrics`` per task on an executor; the driver merges them (``merge``) and the job prints the total as
its final JSON line. Plain integers only, so the object pickles and serializes cheaply.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass
class ScanMetrics:
    """What one scan (or one task of it) pruned, read and produced; every field is a count."""

    # Planning (driver)
    manifests_total: int = 0
    manifests_pruned: int = 0
    data_files_total: int = 0
    data_files_pruned: int = 0
    delete_files_applied: int = 0
    tasks: int = 0
    # Per-file access plan (executors)
    files_opened: int = 0
    footer_cache_hits: int = 0
    row_groups_total: int = 0
    row_groups_pruned_by_range: int = 0
    row_groups_pruned_by_statistics: int = 0
    row_groups_pruned_by_bloom_filter: int = 0
    row_groups_pruned_by_page_index: int = 0
    pages_total: int = 0
    pages_pruned_by_page_index: int = 0
    rows_pruned_by_page_index: int = 0
    rows_pruned_by_late_materialization: int = 0
    # I/O
    bytes_read: int = 0  # data files: footers, bloom filters, page indexes, column chunks
    delete_bytes_read: int = 0  # delete files and deletion vector blobs, when loaded (once per process: cached)
    rows_read: int = 0
    # Deletes
    rows_deleted_by_position_deletes: int = 0
    rows_deleted_by_deletion_vectors: int = 0
    rows_deleted_by_equality_deletes: int = 0
    row_groups_with_remembered_rejections: int = 0  # equality deletes applied as positions remembered from a scan
    # Output
    rows_out: int = 0

    def merge(self, other: ScanMetrics) -> ScanMetrics:
        """Add ``other``'s counters into this one and return self."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict, for the job's JSON line and for logs."""
        return asdict(self)
