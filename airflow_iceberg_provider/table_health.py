"""A table's health as the health page draws it: files, partitions, history, compactions; cached per snapshot.

From the table's metadata and manifests, never its data files:

1. the live files of the current snapshot per partition (``compaction_stats.file_stats``: data files, small ones
   and fragments, delete files, deleted rows), with Glue's and Amoro's rules (the compaction sensor's defaults,
   ``CompactionThresholds.with_defaults``) decided for each partition (``RULES``);
2. a histogram of the data file sizes, bins of powers of two, with the small-file and fragment limits;
3. the snapshots over time (from the snapshot summaries: records, data and delete files, operation) and the last
   compactions (``replace`` snapshots that removed data or delete files) with what they changed;
4. cached per table by its metadata file (``HealthCache``): a table whose metadata did not change since the last
   look is not read again; the catalog itself is asked again after ``ttl_seconds`` only.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from airflow_iceberg_provider.compaction_stats import CompactionThresholds, FileStats, PartitionStats, file_stats

# The rules a partition can reach, by id: what the page shows and names.
RULES = {
    "glue": "AWS Glue: more than {max_small} small files",
    "amoro_fragments": "Apache Amoro: {min_fragments} or more fragment files",
    "amoro_deletes": "Apache Amoro: deleted-row ratio {min_ratio} or more",
}
MAX_PARTITIONS = 60
MAX_SNAPSHOTS = 200
MAX_COMPACTIONS = 10


def rules_reached(rules: CompactionThresholds, partition: PartitionStats) -> list[str]:
    """The ids of the rules (``RULES``) ``partition`` reaches, as the compaction sensor decides them."""
    reached = []
    if rules.max_small_files_per_partition is not None and partition.small_files > rules.max_small_files_per_partition:
        reached.append("glue")
    minimum = rules.min_fragment_files_per_partition
    if minimum is not None and partition.fragment_files >= minimum:
        reached.append("amoro_fragments")
    ratio = rules.min_deleted_row_ratio
    if ratio is not None and partition.deleted_rows and partition.deleted_row_ratio >= ratio:
        reached.append("amoro_deletes")
    return reached


def size_histogram(sizes: tuple[int, ...] | list[int]) -> list[dict[str, int]]:
    """Data files per size bin (module doc, step 2): ``{"from": bytes, "to": bytes, "files": n}``, bins of powers of
    two from the smallest file's to the largest's."""
    if not sizes:
        return []
    low = max(0, int(math.log2(max(1, min(sizes)))))
    high = max(low, int(math.log2(max(1, *sizes))))
    counts = [0] * (high - low + 1)
    for size in sizes:
        counts[max(0, int(math.log2(max(1, size)))) - low] += 1
    return [{"from": 2 ** (low + i), "to": 2 ** (low + i + 1), "files": count} for i, count in enumerate(counts)]


def snapshot_history(table: Any) -> list[dict[str, Any]]:
    """The last ``MAX_SNAPSHOTS`` snapshots, oldest first: time, operation, records, data and delete files."""
    snapshots = sorted(table.metadata.snapshots, key=lambda s: s.timestamp_ms)[-MAX_SNAPSHOTS:]
    history = []
    for snapshot in snapshots:
        summary = snapshot.summary.additional_properties if snapshot.summary is not None else {}
        history.append(
            {
                "snapshot_id": snapshot.snapshot_id,
                "timestamp_ms": snapshot.timestamp_ms,
                "operation": snapshot.summary.operation.value if snapshot.summary is not None else None,
                "records": _int(summary.get("total-records")),
                "data_files": _int(summary.get("total-data-files")),
                "delete_files": _int(summary.get("total-delete-files")),
            }
        )
    return history


def last_compactions(table: Any) -> list[dict[str, Any]]:
    """The last ``MAX_COMPACTIONS`` compactions, newest first: ``replace`` snapshots that removed data or delete
    files, with the files, bytes and delete files they removed and added."""
    found = []
    for snapshot in sorted(table.metadata.snapshots, key=lambda s: -s.timestamp_ms):
        summary = snapshot.summary
        if summary is None or summary.operation.value != "replace":
            continue
        values = summary.additional_properties
        removed = _int(values.get("deleted-data-files")) or 0
        deletes_removed = _int(values.get("removed-delete-files")) or 0
        if not removed and not deletes_removed:
            continue  # a manifest rewrite: no file changed
        found.append(
            {
                "snapshot_id": snapshot.snapshot_id,
                "timestamp_ms": snapshot.timestamp_ms,
                "data_files_removed": removed,
                "data_files_added": _int(values.get("added-data-files")) or 0,
                "bytes_removed": _int(values.get("removed-files-size")) or 0,
                "bytes_added": _int(values.get("added-files-size")) or 0,
                "delete_files_removed": deletes_removed,
                "records": _int(values.get("total-records")),
            }
        )
        if len(found) == MAX_COMPACTIONS:
            break
    return found


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def table_health(table: Any, thresholds: CompactionThresholds | None = None) -> dict[str, Any]:
    """Everything the health page draws for ``table`` (a pyiceberg Table), JSON-ready (module doc)."""
    rules = (thresholds or CompactionThresholds()).with_defaults()
    stats: FileStats = file_stats(table, thresholds=rules)
    partitions = sorted(
        stats.partitions, key=lambda p: (not rules_reached(rules, p), -p.small_files, -p.delete_files, p.partition)
    )
    listed = [{**p.as_dict(), "rules": rules_reached(rules, p)} for p in partitions[:MAX_PARTITIONS]]
    reaching = {rule: sum(1 for p in stats.partitions if rule in rules_reached(rules, p)) for rule in RULES}
    return {
        "table": ".".join(table.name()),
        "snapshot_id": stats.snapshot_id,
        "totals": stats.as_dict(),
        "rules": {
            rule: text.format(
                max_small=rules.max_small_files_per_partition,
                min_fragments=rules.min_fragment_files_per_partition,
                min_ratio=rules.min_deleted_row_ratio,
            )
            for rule, text in RULES.items()
        },
        "partitions_reaching": reaching,
        "partitions": listed,
        "partitions_listed": len(listed),
        "size_histogram": size_histogram(stats.data_file_sizes),
        "history": snapshot_history(table),
        "compactions": last_compactions(table),
    }


@dataclass
class _Cached:
    checked_at: float
    metadata_location: str
    health: dict[str, Any]


class HealthCache:
    """Health per table, read again only when its metadata file changed (module doc, step 4). Thread-safe."""

    def __init__(self, ttl_seconds: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._entries: dict[tuple[str, str], _Cached] = {}
        self._lock = threading.Lock()

    def health(self, catalog: str, table_name: str, load_table: Callable[[], Any]) -> dict[str, Any]:
        """The health of ``table_name`` in ``catalog``: cached, or computed from ``load_table()``'s table."""
        key = (catalog, table_name)
        now = self.clock()
        with self._lock:
            cached = self._entries.get(key)
        if cached is not None and now - cached.checked_at < self.ttl_seconds:
            return cached.health
        table = load_table()
        location = str(table.metadata_location)
        unchanged = cached is not None and cached.metadata_location == location
        health = cached.health if cached is not None and unchanged else table_health(table)
        with self._lock:
            self._entries[key] = _Cached(now, location, health)
        return health
