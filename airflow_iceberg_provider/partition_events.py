"""Asset events for what an ingest committed: one on the table's asset, one per changed partition on its
partitioned asset (Airflow 3.3+).

1. The table's asset (``iceberg://<catalog>/<namespace>/<table>``) gets its one event per ingest, as before; its
   extra names the snapshot, the operation and the partitions changed (their keys, at most
   ``MAX_PARTITIONS_LISTED``, and their count).
2. Where a task can give its events partition keys of their own (Airflow 3.3+: ``add_partitions`` on an outlet
   event), the table's partitioned asset (``.../<table>/partitions``) gets one event per changed partition, its
   ``partition_key`` the partition's path text as Iceberg names it on storage (``ts_day=2024-01-05/category=a``):
   a DAG scheduled on it with ``PartitionedAssetTimetable`` runs once per changed partition, and
   ``partition_filter.partition_row_filter`` turns the key back into a row filter.
3. Which partitions changed is the job's ``partitions_changed`` (read back from the committed snapshot); when the
   job could not say (``null``), it is read here from the snapshot itself (``snapshot_watch.changed_partitions``).
4. No partitioned event for an unpartitioned table, a run that committed nothing, or a partition whose text is
   longer than Airflow's 250 characters (logged). Airflow 3.1 and 3.2 cannot key a task's events (3.2 gives every
   event the DAG run's own key): there, only the table's event of step 1 goes out.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

log = logging.getLogger(__name__)

# Airflow's limit on a partition key (its database column's width).
MAX_PARTITION_KEY_LENGTH = 250
MAX_PARTITIONS_LISTED = 100


def task_partition_keys_supported() -> bool:
    """Whether this Airflow lets a task give each outlet event a partition key of its own (3.3+)."""
    try:
        from airflow.sdk.execution_time.context import OutletEventAccessor
    except ImportError:
        return False
    return hasattr(OutletEventAccessor, "add_partitions")


def partition_keys(partitions_changed: Sequence[dict[str, Any]]) -> list[str]:
    """The partition keys of the changed partitions, in order, without the unpartitioned ``""`` and without keys
    too long for Airflow (each of those logged)."""
    keys: list[str] = []
    for change in partitions_changed:
        key = str(change.get("partition") or "")
        if not key or key in keys:
            continue
        if len(key) > MAX_PARTITION_KEY_LENGTH:
            log.warning(
                "partition %s... is %d characters, more than Airflow's %d for a partition key: no partitioned "
                "event for it (the table's event lists it)",
                key[:80],
                len(key),
                MAX_PARTITION_KEY_LENGTH,
            )
            continue
        keys.append(key)
    return keys


def table_event_extra(result: dict[str, Any], partitions: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
    """The extra of the table's event (module doc, step 1)."""
    extra: dict[str, Any] = {"snapshot_id": result.get("snapshot_id"), "operation": result.get("operation")}
    if result.get("already_committed"):
        extra["already_committed"] = True
    if partitions is not None:
        names = [str(change.get("partition") or "") for change in partitions]
        extra["partitions"] = names[:MAX_PARTITIONS_LISTED]
        extra["partition_count"] = len(names)
    return extra


def record_ingest_events(
    context: Any,
    table_outlet: Any | None,
    partitions_outlet: Any | None,
    result: dict[str, Any],
    partitions: Sequence[dict[str, Any]] | None,
) -> list[str]:
    """Set the extra of the table's event and the keys of the partitioned ones on the task's outlet events
    (module doc); the partition keys given. An outlet Airflow cannot resolve (no DAG declares its Asset) gets
    nothing."""
    outlet_events = context.get("outlet_events") if hasattr(context, "get") else None
    if outlet_events is None:
        return []
    if table_outlet is not None:
        accessor = _accessor(outlet_events, table_outlet)
        if accessor is not None:
            accessor.extra = table_event_extra(result, partitions)
    if partitions_outlet is None or not partitions or not task_partition_keys_supported():
        return []
    keys = partition_keys(partitions)
    accessor = _accessor(outlet_events, partitions_outlet)
    if accessor is None or not keys:
        return []
    accessor.extra = {"snapshot_id": result.get("snapshot_id"), "operation": result.get("operation")}
    accessor.add_partitions(keys)
    return keys


def _accessor(outlet_events: Any, outlet: Any) -> Any | None:
    """The outlet's event accessor, or ``None`` when Airflow knows no Asset for it."""
    try:
        return outlet_events[outlet]
    except Exception as error:  # a reference to an Asset no DAG declares: Airflow records no event for it
        log.info("no asset event for %s: %s", getattr(outlet, "uri", outlet), error)
        return None
