"""Equality delete sets loaded on a helper thread while the data file they apply to opens and decodes.

A data file's first keep mask needs its equality delete sets, but nothing before it does: the footer, the access
plan and the decoding of the key columns only need each set's field ids and ``cache_identity``, which the delete
files' paths and the compared types decide. So, per data file slice:

1. ``start_loading_equality_deletes`` groups the slice's equality delete files (``equality_delete_groups``) and
   submits each group's load (``cached_delete_set``: the process-wide cache, one load per set) to a small
   process-wide pool; it returns one ``PendingEqualityDeleteSet`` per group at once.
2. The reader plans with them like with loaded sets (field ids, kind, ``cache_identity`` for remembered
   rejections); the first ``keep_mask`` waits for the load, which by then has mostly run beside the decoding.
3. ``finish`` waits for every load (a set no keep mask asked for included, so a damaged delete file is reported as
   it would be when loaded first) and gives back the counters of what the loads read. A failed load raises
   ``EqualityDeleteLoadError`` from its cause, so the caller names the delete file, not the data file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pyarrow as pa
from pyiceberg.io import FileIO
from pyiceberg.types import IcebergType

from spark_jobs.engine.deletes.cache import DeleteFileCache, delete_file_cache
from spark_jobs.engine.deletes.equality_deletes import (
    EqualityDeleteGroup,
    EqualityDeleteSet,
    cached_delete_set,
    equality_delete_groups,
)
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.shared.row_predicate import PredicateKind
from spark_jobs.engine.shared.thread_pools import process_thread_pool

# Delete sets loading at once in a process (a set shared by many data files is loaded once: the cache waits).
LOAD_THREADS = 2


class EqualityDeleteLoadError(Exception):
    """Loading an equality delete set failed; ``__cause__`` is the error the load raised."""


class PendingEqualityDeleteSet:
    """An equality delete set being loaded; a ``RowPredicate`` whose ``keep_mask`` waits for the load."""

    def __init__(self, group: EqualityDeleteGroup, future: Future[tuple[EqualityDeleteSet, ScanMetrics]]) -> None:
        self.equality_ids = group.equality_ids
        self._identity = group.cache_identity
        self._future = future

    @property
    def field_ids(self) -> frozenset[int]:
        """The field ids whose columns decide equality."""
        return frozenset(self.equality_ids)

    @property
    def kind(self) -> PredicateKind:
        """Always ``PredicateKind.EQUALITY_DELETE``."""
        return PredicateKind.EQUALITY_DELETE

    @property
    def cache_identity(self) -> tuple[object, ...]:
        """The loaded set's ``cache_identity`` (field ids, delete files, compared types), known before the load."""
        return self._identity

    def loaded(self) -> tuple[EqualityDeleteSet, ScanMetrics]:
        """The set and the counters of its load, once loaded; ``EqualityDeleteLoadError`` when the load failed."""
        try:
            return self._future.result()
        except Exception as error:
            raise EqualityDeleteLoadError(str(error)) from error

    def keep_mask(self, columns: Mapping[int, pa.Array], num_rows: int) -> np.ndarray:
        """True for rows whose equality columns match no delete key (waits for the load)."""
        return self.loaded()[0].keep_mask(columns, num_rows)

    def __repr__(self) -> str:
        state = "loaded" if self._future.done() else "loading"
        return f"PendingEqualityDeleteSet(equality_ids={self.equality_ids}, {state})"


def start_loading_equality_deletes(
    data_file: DataFileSlice,
    *,
    io: FileIO,
    field_types: Mapping[int, IcebergType],
    cache: DeleteFileCache | None = None,
) -> list[PendingEqualityDeleteSet]:
    """One pending set per distinct set of equality field ids of the slice's delete files, each loading already.

    Argument errors (a field id without a type) raise here, before anything is submitted.
    """
    cache = cache if cache is not None else delete_file_cache()
    groups = equality_delete_groups(data_file, field_types)

    def load(group: EqualityDeleteGroup) -> tuple[EqualityDeleteSet, ScanMetrics]:
        metrics = ScanMetrics()
        return cached_delete_set(group, io, cache, metrics=metrics), metrics

    pool = _load_pool()
    return [PendingEqualityDeleteSet(group, pool.submit(load, group)) for group in groups]


def finish(pending_sets: Sequence[PendingEqualityDeleteSet]) -> ScanMetrics:
    """Wait for every load; the sum of their counters (``delete_bytes_read``). Raises ``EqualityDeleteLoadError``."""
    metrics = ScanMetrics()
    for pending in pending_sets:
        metrics.merge(pending.loaded()[1])
    return metrics


def _load_pool() -> ThreadPoolExecutor:
    """The process's threads loading equality delete sets (created on first use, again in a forked child)."""
    return process_thread_pool("equality-delete-load", LOAD_THREADS)
