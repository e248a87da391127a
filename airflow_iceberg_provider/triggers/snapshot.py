"""Async triggers on an Iceberg table's snapshots: a new one matching a condition, and commits for asset watchers.

- ``IcebergSnapshotTrigger`` (deferrable ``IcebergSnapshotSensor``): polls until a snapshot newer than a given one,
  optionally of an operation or with summary values, is on the branch; one event, then done.
- ``IcebergCatalogSnapshotTrigger``: an event trigger for ``AssetWatcher``: one event per commit, in order, with what
  it changed; one poll loop per catalog; on Airflow 3.3+ a cursor in the asset's state store that moves only once
  the triggerer stored the event (``_catalog_watch``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent
from pyiceberg.table import Table

from airflow_iceberg_provider.snapshot_watch import DEFAULT_BRANCH, SnapshotCondition, WatchCursor, find_new_snapshot
from airflow_iceberg_provider.triggers._catalog_watch import (
    CURSOR_KEY,
    OFFICIAL_WATERMARK_KEY,
    Subscription,
    catalog_key,
    local_loop,
    poller_for,
)
from airflow_iceberg_provider.triggers._table_polling import IcebergTablePollingTrigger

# Airflow 3.3+ runs triggers that share a key on one poll loop, in ack mode (``airflow.triggers.shared_stream``).
SHARED_STREAMS = hasattr(BaseEventTrigger, "create_shared_stream_producer")


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


class IcebergCatalogSnapshotTrigger(BaseEventTrigger):
    """
    An ``AssetWatcher`` trigger: one event per new snapshot of a table's branch, whoever commits, in commit order.

    Each event carries the official ``IcebergTableSnapshotTrigger``'s fields (``table``, ``branch``,
    ``snapshot_id``, ``previous_snapshot_id``) and what the commit did: ``operation``, ``summary``, the
    ``partitions`` it changed (their path text, with ``partition_count``) and its rows (``rows_added``,
    ``rows_removed``, ``position_deletes_added``, ``equality_deletes_added``) (``snapshot_watch.commit_event``).
    Every watcher of one catalog shares one poll loop in the triggerer (``_catalog_watch``). On Airflow 3.3+ the
    cursor lives in the asset's state store and moves only once the triggerer stored the event, so a triggerer
    stopped between commits neither misses one nor fires one twice; on 3.1 and 3.2 it lives in the trigger, and a
    restarted triggerer reports the head it finds first again (as the official trigger does). The first event of a
    new watcher is the head it finds.

    The catalog is loaded under its name (``IcebergCatalogHook``: the connection extra's ``catalog_name``, or
    ``catalog_name`` given here, or pyiceberg's configuration when ``iceberg_conn_id`` is ``None``), which a SQL
    catalog needs to find its rows.

    :param table: ``namespace.table``.
    :param iceberg_conn_id: ``iceberg`` connection, or ``None`` for pyiceberg's configuration of ``catalog_name``.
    :param catalog_name: Catalog name (overrides the connection extra's ``catalog_name``).
    :param branch: Branch to watch.
    :param poll_interval: Seconds between looks at the table.
    :param last_seen_snapshot_id: Snapshot already reported, where no cursor is stored yet.
    """

    def __init__(
        self,
        *,
        table: str,
        iceberg_conn_id: str | None = None,
        catalog_name: str | None = None,
        branch: str = DEFAULT_BRANCH,
        poll_interval: float = 60,
        last_seen_snapshot_id: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if "." not in table:
            raise ValueError(f"Expected a fully-qualified table name (namespace.table), got: {table!r}")
        if iceberg_conn_id is None and not catalog_name:
            raise ValueError(f"watcher of {table}: give iceberg_conn_id, catalog_name, or both")
        self.table = table
        self.iceberg_conn_id = iceberg_conn_id
        self.catalog_name = catalog_name
        self.branch = branch
        self.poll_interval = poll_interval
        self.last_seen_snapshot_id = last_seen_snapshot_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """The official trigger's arguments plus ``catalog_name``, under this class's path."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table": self.table,
                "iceberg_conn_id": self.iceberg_conn_id,
                "branch": self.branch,
                "poll_interval": self.poll_interval,
                "last_seen_snapshot_id": self.last_seen_snapshot_id,
                "catalog_name": self.catalog_name,
            },
        )

    # ---- Airflow 3.3+: the triggerer's shared stream, one per catalog ------------------------------------------

    def shared_stream_key(self) -> Hashable | None:
        """Watchers of one catalog share one poll loop (Airflow 3.3+; ``None`` before: ``run`` polls)."""
        return catalog_key(self.iceberg_conn_id, self.catalog_name) if SHARED_STREAMS else None

    @classmethod
    def create_shared_stream_producer(cls, kwargs: dict[str, Any]) -> Any:
        """The catalog's poll loop in ack mode: cursors move once the triggerer stored the events."""
        from airflow_iceberg_provider.triggers._snapshot_stream import SnapshotStreamProducer

        return SnapshotStreamProducer(catalog_key(kwargs.get("iceberg_conn_id"), kwargs.get("catalog_name")))

    async def filter_shared_stream(self, shared_stream: AsyncIterator[Any]) -> AsyncIterator[TriggerEvent]:
        """Fire the catalog's events of this table and branch that come after this watcher's cursor."""
        subscription = await self._subscription()
        poller = poller_for(catalog_key(self.iceberg_conn_id, self.catalog_name))
        poller.add(subscription)
        try:
            async for event in shared_stream:
                if subscription.wants(event):
                    subscription.fired(event)
                    yield TriggerEvent(event)
        finally:
            poller.remove(subscription)

    # ---- Airflow 3.1 and 3.2: a loop per catalog of this module's own ------------------------------------------

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Fire this table's events from the catalog's local loop (``_catalog_watch.LocalCatalogLoop``)."""
        subscription = await self._subscription()
        loop = local_loop(catalog_key(self.iceberg_conn_id, self.catalog_name))
        queue = loop.subscribe(subscription)
        try:
            while True:
                event = await queue.get()
                if subscription.wants(event):
                    subscription.fired(event)
                    yield TriggerEvent(event)
        finally:
            await loop.unsubscribe(subscription)

    async def _subscription(self) -> Subscription:
        """This watcher's subscription: its cursor from the asset's state store where there is one, else the
        ``last_seen_snapshot_id`` it was given."""
        store = await self._state_store()
        cursor = WatchCursor.from_value(self.last_seen_snapshot_id)
        persisted = None
        if store is not None:
            value = await store.aget(CURSOR_KEY)
            if value is None:
                value = await store.aget(OFFICIAL_WATERMARK_KEY)
            persisted = WatchCursor.from_value(value)
            cursor = persisted or cursor
        if cursor is not None:
            self.log.info("watching %s (%s) after snapshot %s", self.table, self.branch, cursor.snapshot_id)
        return Subscription(self.table, self.branch, self.poll_interval, cursor, persisted, store)

    async def _state_store(self) -> Any:
        """The watched asset's state store (Airflow 3.3+), or ``None``: before 3.3, or when several assets share
        this trigger (Airflow then cannot say whose state it is; the cursor stays in memory, with a warning)."""
        store = getattr(self, "asset_state_store", None)
        if store is None:
            return None
        try:
            await store.aget(CURSOR_KEY)
        except ValueError as error:
            if _MULTI_ASSET_ERROR not in str(error):
                raise
            self.log.warning(
                "%s is watched by more than one asset: no cursor is kept, so a restarted triggerer reports the "
                "head again",
                self.table,
            )
            return None
        return store


# Raised by Airflow's state store accessors when several assets share one trigger.
_MULTI_ASSET_ERROR = "concrete inlets and outlets"
