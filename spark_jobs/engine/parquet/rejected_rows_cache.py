"""Rows a row predicate rejects in one row group of a data file, remembered for the life of the process.

An equality delete set is a row predicate whose answer for a given data file never changes: Iceberg never
rewrites a data file or a delete file in place. So the first scan that decodes a row group's key columns and
probes the set records the rejected positions here, and later scans of the same row group (the same query run
again, time travel, another query of the session on the same executor) apply them as positions, like a position
delete, without decoding or probing the key columns.

1. Only predicates with a ``cache_identity`` (not None) are remembered: the identity names what decides the answer
   (for an equality delete set: its field ids, delete file paths and compared types).
2. Keys are ``(file identity, row group, predicate identity)``; the file identity is its path, size and a hash of
   its footer, plus the name mapping that resolved its columns.
3. A row group's answer is recorded only when the predicate was evaluated on every one of its rows.
4. Bounded by ``ICEBERG_REJECTED_ROWS_CACHE_MAX_BYTES`` (default 64 MiB), least recently used first out.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from spark_jobs.engine.shared.bounded_cache import BoundedCache, max_bytes_from_environment
from spark_jobs.engine.shared.row_predicate import RowPredicate

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_BYTES_ENV_VAR = "ICEBERG_REJECTED_ROWS_CACHE_MAX_BYTES"
_ENTRY_OVERHEAD_BYTES = 200  # the key tuple and the array header

_PROCESS_CACHE = BoundedCache(max_bytes_from_environment(MAX_BYTES_ENV_VAR, DEFAULT_MAX_BYTES))


def rejected_rows_cache() -> BoundedCache:
    """The cache shared by every scan in this process."""
    return _PROCESS_CACHE


class FileRejectedRows:
    """The remembered rejections of one data file (as opened for one scan), by row group and predicate."""

    def __init__(self, file_identity: Hashable, cache: BoundedCache | None = None) -> None:
        self.file_identity = file_identity
        self.cache = cache if cache is not None else _PROCESS_CACHE

    def recall(self, row_group: int, predicate: RowPredicate) -> np.ndarray | None:
        """The sorted row-group positions the predicate rejects, or None when not remembered (or not cacheable)."""
        identity = predicate.cache_identity
        if identity is None:
            return None
        return self.cache.get((self.file_identity, row_group, identity))

    def remember(
        self, row_groups: Sequence[int], row_counts: Sequence[int], predicate: RowPredicate, keep: np.ndarray
    ) -> None:
        """Record, per row group of a decoded run, the positions where ``keep`` (over all the run's rows) is False."""
        identity = predicate.cache_identity
        if identity is None:
            return
        if len(keep) != sum(row_counts):
            raise ValueError(f"keep mask of {len(keep)} rows for row groups {list(row_groups)} of {sum(row_counts)}")
        rejected = np.flatnonzero(np.logical_not(keep))
        first_rows = np.cumsum([0, *row_counts])
        bounds = np.searchsorted(rejected, first_rows)
        for index, row_group in enumerate(row_groups):
            positions = (rejected[bounds[index] : bounds[index + 1]] - first_rows[index]).astype(np.int32)
            key = (self.file_identity, row_group, identity)
            self.cache.put(key, positions, positions.nbytes + _ENTRY_OVERHEAD_BYTES)
