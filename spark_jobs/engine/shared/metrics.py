"""Counters every stage of a scan adds to: what was pruned, read, deleted and returned, and the time each took.

One ``ScanMetrics`` per task on an executor; the driver merges them (``merge``) and the job prints the total in
its final JSON line (``counters``) and its log summary. Plain integers only, so the object pickles and serializes
cheaply: times are nanoseconds (``*_time_ns``, one per stage of the per-file read, ``SCAN_TIME_STAGES``), summed
over files and tasks, so on several threads or executors they add up to more than the wall time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields

# The per-file read's timed stages (engine/parquet/opener.py), in the order they run; each has ``<stage>_time_ns``
# (the job contract names the same stages, ``job_contract.SCAN_TIME_STAGES``; a test checks they agree).
SCAN_TIME_STAGES = ("footer", "statistics", "page_index", "bloom_filter", "deletes", "decode")


@dataclass
class ScanMetrics:
    """What one scan (or one task of it) pruned, read and produced (counts), and its time per stage (ns)."""

    # Planning (driver)
    manifests_total: int = 0
    manifests_pruned: int = 0
    data_files_total: int = 0
    data_files_pruned: int = 0
    delete_files_applied: int = 0
    tasks: int = 0
    # Delete-free data files handed to the query engine's own Parquet reader (``read.plain_files``): their row
    # groups, pages and bytes are that reader's and not counted below; their rows are in ``rows_out``.
    data_files_read_by_spark: int = 0
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
    # Time per stage of the per-file read, in nanoseconds (SCAN_TIME_STAGES)
    footer_time_ns: int = 0  # footer from the cache or storage, the file's layout
    statistics_time_ns: int = 0  # row groups pruned by statistics
    page_index_time_ns: int = 0  # pages and rows pruned by the page index (its reads included)
    bloom_filter_time_ns: int = 0  # row groups pruned by bloom filters (their reads included)
    deletes_time_ns: int = 0  # deleted positions and remembered equality delete rejections applied to the plan
    decode_time_ns: int = 0  # decoding units: column reads, equality deletes, filter conjuncts, output columns

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the time the block takes to ``<stage>_time_ns`` (one of ``SCAN_TIME_STAGES``)."""
        name = f"{stage}_time_ns"
        started = time.perf_counter_ns()
        try:
            yield
        finally:
            setattr(self, name, getattr(self, name) + time.perf_counter_ns() - started)

    def merge(self, other: ScanMetrics) -> ScanMetrics:
        """Add ``other``'s counters into this one and return self."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict, for the job's JSON line and for logs."""
        return asdict(self)


def stage_seconds(counters: dict[str, int] | dict[str, object]) -> dict[str, float]:
    """The seconds of each timed stage in a counters dict (``as_dict``, or the JSON line's), zeros left out."""
    seconds = {}
    for stage in SCAN_TIME_STAGES:
        value = counters.get(f"{stage}_time_ns")
        if isinstance(value, int) and value > 0:
            seconds[stage] = value / 1e9
    return seconds
