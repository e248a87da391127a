"""count(*) without a filter from metadata: the rows of every data file no delete file applies to.

A data file's ``record_count`` is exact; only deletes can make its live rows fewer. So:

1. When no delete manifest of the snapshot holds a live file, the manifest list alone answers: the sum of every
   data manifest's ``added_rows_count + existing_rows_count`` (no manifest is opened).
2. Otherwise the manifests are read as columns and each live data file gets the deletes that apply to it (the read
   planner's file selection and rules): files without any are counted from their ``record_count``; the rest must
   be scanned,
   and ``CountPlan.files_to_scan`` names them (deletes that apply to nothing, e.g. after compaction, cost nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.manifest import ManifestContent
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from spark_jobs.engine.planning.file_selection import select_files
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_cache import cached_manifests

MANIFEST_LIST = "manifest-list"
MANIFEST_ENTRIES = "manifest-entries"


@dataclass(frozen=True)
class CountPlan:
    """The rows metadata accounts for, and the data files (with deletes) that must be scanned for the rest."""

    metadata_rows: int
    metadata_files: int
    files_to_scan: frozenset[str]
    source: str  # MANIFEST_LIST or MANIFEST_ENTRIES
    manifests_read: int

    @property
    def answered_from_metadata(self) -> bool:
        """Whether no data file has a delete that applies, so ``metadata_rows`` is the count."""
        return not self.files_to_scan

    def counters(self) -> dict[str, Any]:
        """What the count took, for a job's counters."""
        return {
            "count_from_metadata": self.answered_from_metadata,
            "count_source": self.source,
            "data_files_counted_from_metadata": self.metadata_files,
            "rows_counted_from_metadata": self.metadata_rows,
            "data_files_scanned_for_count": len(self.files_to_scan),
            "manifests_read_for_count": self.manifests_read,
        }


def plan_count(table: Table, snapshot: Snapshot | None) -> CountPlan:
    """How ``count(*)`` of ``snapshot`` is answered (module doc)."""
    if snapshot is None:
        return CountPlan(0, 0, frozenset(), MANIFEST_LIST, 0)
    manifests = cached_manifests(snapshot, table.io)
    data_manifests = [m for m in manifests if m.content == ManifestContent.DATA]
    live_delete_manifests = [
        m for m in manifests if m.content == ManifestContent.DELETES and (m.added_files_count or m.existing_files_count)
    ]
    counts_known = all(
        m.added_rows_count is not None and m.existing_rows_count is not None and m.added_files_count is not None
        for m in data_manifests
    )
    if not live_delete_manifests and counts_known:
        rows = sum((m.added_rows_count or 0) + (m.existing_rows_count or 0) for m in data_manifests)
        files = sum((m.added_files_count or 0) + (m.existing_files_count or 0) for m in data_manifests)
        return CountPlan(rows, files, frozenset(), MANIFEST_LIST, 0)
    metrics = ScanMetrics()
    selected = select_files(
        table, snapshot, schema=table.schema(), row_filter=AlwaysTrue(), case_sensitive=True, metrics=metrics
    )
    with_deletes = np.zeros(len(selected), dtype=bool)
    with_deletes[list(selected.deletes)] = True
    rows = int(selected.record_counts[~with_deletes].sum())
    files = int((~with_deletes).sum())
    to_scan = frozenset(selected.paths[row] for row in selected.deletes)
    read = metrics.manifests_total - metrics.manifests_pruned
    return CountPlan(rows, files, to_scan, MANIFEST_ENTRIES, read)
