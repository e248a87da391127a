"""Exactly-once commits: remember which snapshot each idempotency key committed, for a retention window.

A key is recorded twice, atomically with the snapshot it commits:

1. in the snapshot's summary (``airflow-iceberg-provider.idempotency-key``), readable by any Iceberg tool;
2. in the table property ``airflow-iceberg-provider.idempotency-keys.<branch>``: a JSON object from a digest of the
   key (the first 16 hex digits of its SHA-256) to ``[snapshot id, commit time in ms]``. It survives the snapshot:
   after ``expire-snapshots`` or a rollback removed it, a retry with the key still finds it and commits nothing.
   Each commit that records a key drops entries older than the window, the table property
   ``airflow-iceberg-provider.idempotency-key-retention-ms`` (default 7 days). One property per branch: commits to
   a branch assert its head, so two commits never rewrite the same property from the same base.

A lookup consults the property first, then the summaries of the branch's history (keys committed before the
property existed, or older than the window but still in the history).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass

from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH
from pyiceberg.table.snapshots import Snapshot, ancestors_of
from pyiceberg.table.update import SetPropertiesUpdate

from spark_jobs.engine.commit.snapshot_change import IDEMPOTENCY_KEY_PROPERTY
from spark_jobs.engine.table.properties import int_property

log = logging.getLogger(__name__)

KEYS_PROPERTY = "airflow-iceberg-provider.idempotency-keys"
RETENTION_PROPERTY = "airflow-iceberg-provider.idempotency-key-retention-ms"
DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000
_DIGEST_HEX_DIGITS = 16


@dataclass(frozen=True)
class CommittedKey:
    """The snapshot an idempotency key committed (``snapshot`` None when it is no longer in the metadata)."""

    snapshot_id: int
    snapshot: Snapshot | None


def keys_property(branch: str) -> str:
    """The table property that holds the keys committed to ``branch``."""
    return f"{KEYS_PROPERTY}.{branch}"


def key_digest(key: str) -> str:
    """The recorded form of a key: short, fixed length, any characters allowed in the key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:_DIGEST_HEX_DIGITS]


def recorded_keys(properties: dict[str, str], branch: str) -> dict[str, list[int]]:
    """Digest -> [snapshot id, commit ms] of the keys recorded for ``branch`` (empty when unreadable)."""
    raw = properties.get(keys_property(branch))
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        log.warning("table property %s is not JSON; its idempotency keys are ignored", keys_property(branch))
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {digest: value for digest, value in parsed.items() if _is_entry(value)}


def recorded_snapshot_id(metadata: TableMetadata, key: str, branch: str | None = None) -> int | None:
    """The snapshot id recorded for ``key`` on ``branch`` (any branch when None), or None."""
    digest = key_digest(key)
    prefix = f"{KEYS_PROPERTY}."
    branches = (
        [branch] if branch is not None else [p[len(prefix) :] for p in metadata.properties if p.startswith(prefix)]
    )
    for name in branches:
        entry = recorded_keys(metadata.properties, name).get(digest)
        if entry is not None:
            return int(entry[0])
    return None


def committed_snapshot_for_key(table: Table, key: str, *, branch: str = MAIN_BRANCH) -> CommittedKey | None:
    """The snapshot ``key`` committed to ``branch``: recorded in the property or in the branch's history."""
    recorded = recorded_snapshot_id(table.metadata, key, branch)
    if recorded is not None:
        return CommittedKey(recorded, table.metadata.snapshot_by_id(recorded))
    snapshot = snapshot_with_idempotency_key(table, key, branch=branch)
    return CommittedKey(snapshot.snapshot_id, snapshot) if snapshot is not None else None


def snapshot_with_idempotency_key(table: Table, key: str, *, branch: str = MAIN_BRANCH) -> Snapshot | None:
    """The newest snapshot in ``branch``'s history whose summary carries ``key``, or None."""
    head = table.metadata.snapshot_by_name(branch)
    for snapshot in ancestors_of(head, table.metadata):
        if snapshot.summary is not None and snapshot.summary[IDEMPOTENCY_KEY_PROPERTY] == key:
            return snapshot
    return None


def record_key_update(
    metadata: TableMetadata, key: str, snapshot_id: int, branch: str, now_ms: int | None = None
) -> SetPropertiesUpdate:
    """The property update that records ``key`` -> ``snapshot_id`` and drops entries older than the window."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    window = max(0, int_property(metadata.properties, RETENTION_PROPERTY, DEFAULT_RETENTION_MS))
    kept = {
        digest: entry
        for digest, entry in recorded_keys(metadata.properties, branch).items()
        if entry[1] >= now_ms - window
    }
    kept[key_digest(key)] = [snapshot_id, now_ms]
    value = json.dumps(kept, separators=(",", ":"), sort_keys=True)
    return SetPropertiesUpdate(updates={keys_property(branch): value})


def _is_entry(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    )
