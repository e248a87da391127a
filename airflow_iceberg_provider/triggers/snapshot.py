"""Async triggers on an Iceberg table's snapshots: a new one matching a condition, and commits for asset watchers.

- ``IcebergSnapshotTrigger`` (deferrable ``IcebergSnapshotSensor``): polls until a snapshot newer than a given one,
  optionally of an operation or with summary values, is on the branch; one event, then done.
- ``IcebergCatalogSnapshotTrigger``: the official ``IcebergTableSnapshotTrigger`` (an event trigger for
  ``AssetWatcher``, with its persisted watermark), loading the table under the connection's ``catalog_name``, which a
  SQL catalog needs to find its rows.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.apache.iceberg.triggers.iceberg import DEFAULT_BRANCH, IcebergTableSnapshotTrigger
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.table import Table

from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook
from airflow_iceberg_provider.snapshot_watch import SnapshotCondition, find_new_snapshot
from airflow_iceberg_provider.triggers._table_polling import IcebergTablePollingTrigger


class IcebergSnapshotTrigger(IcebergTablePollingTrigger):
    """
    Fire once when ``table`` has a snapshot newer than ``since_snapshot_id`` that matches the condition.

    The event is ``{"status": "success", "table": ..., "snapshot": {...}}`` (see ``snapshot_watch``), or
    ``{"status": "error", "message": ...}`` when the catalog fails. A missing table is waited for.

    :param table: ``namespace.table``.
    :param iceberg_conn_id: ``iceberg`` connection, or ``None`` for pyiceberg's configuration of ``catalog_name``.
    :param catalog_name: Catalog name (overrides the connection extra's ``catalog_name``).
    :param since_snapshot_id: Only snapshots after this one count (``None``: any snapshot).
    :param operation: Only snapshots of this operation count (``append``, ``overwrite``, ``delete``, ``replace``).
    :param summary: Only snapshots whose summary has these values count.
    :param branch: Branch to watch.
    :param poll_interval: Seconds between polls.
    """

    def __init__(
        self,
        *,
        table: str,
        iceberg_conn_id: str | None = None,
        catalog_name: str | None = None,
        since_snapshot_id: int | None = None,
        operation: str | None = None,
        summary: dict[str, str] | None = None,
        branch: str = DEFAULT_BRANCH,
        poll_interval: float = 60,
    ) -> None:
        super().__init__(
            table=table, iceberg_conn_id=iceberg_conn_id, catalog_name=catalog_name, poll_interval=poll_interval
        )
        self.since_snapshot_id = since_snapshot_id
        self.operation = operation
        self.summary = dict(summary or {})
        self.branch = branch

    def condition_kwargs(self) -> dict[str, Any]:
        """The snapshot condition, as serialized."""
        return {
            "since_snapshot_id": self.since_snapshot_id,
            "operation": self.operation,
            "summary": self.summary,
            "branch": self.branch,
        }

    def evaluate(self, table: Table) -> dict[str, Any] | None:
        """The first new snapshot matching the condition, if any."""
        condition = SnapshotCondition(self.since_snapshot_id, self.operation, self.summary, self.branch)
        snapshot = find_new_snapshot(table, condition)
        return {"snapshot": snapshot} if snapshot is not None else None


class IcebergCatalogSnapshotTrigger(IcebergTableSnapshotTrigger):
    """
    The official ``IcebergTableSnapshotTrigger`` for ``AssetWatcher``, with the catalog loaded under its name.

    The official trigger loads the catalog under the connection id; a SQL catalog keys its rows by catalog name,
    so this one uses ``IcebergCatalogHook`` (the extra's ``catalog_name``, or ``catalog_name`` given here, or
    pyiceberg's configuration when ``iceberg_conn_id`` is ``None``). Events and watermark are the official ones.

    :param catalog_name: Catalog name (overrides the connection extra's ``catalog_name``).
    """

    def __init__(self, *, catalog_name: str | None = None, iceberg_conn_id: str | None = None, **kwargs: Any):
        super().__init__(iceberg_conn_id=iceberg_conn_id or "", **kwargs)
        # None (pyiceberg's configuration) where the official trigger, which always names a connection, has a str.
        self.iceberg_conn_id = iceberg_conn_id  # type: ignore[assignment]
        self.catalog_name = catalog_name

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """The official trigger's arguments plus ``catalog_name``, under this class's path."""
        _, kwargs = super().serialize()
        return f"{type(self).__module__}.{type(self).__qualname__}", {**kwargs, "catalog_name": self.catalog_name}

    def _head_snapshot_id(self) -> int | None:
        hook = IcebergCatalogHook(iceberg_conn_id=self.iceberg_conn_id, catalog_name=self.catalog_name)
        try:
            table = hook.load_table(self.table)
        except (NoSuchTableError, NoSuchNamespaceError):
            self.log.debug("%s does not exist yet; waiting", self.table)
            return None
        ref = table.metadata.refs.get(self.branch)
        return ref.snapshot_id if ref is not None else None
