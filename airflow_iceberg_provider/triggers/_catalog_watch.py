"""One poll loop per catalog for the snapshot watchers: every watched table of a catalog, one catalog client.

A watcher (``IcebergCatalogSnapshotTrigger``) subscribes its table and branch to the poller of its catalog (the
connection id and catalog name, ``catalog_key``). Each round of the loop:

1. loads each table whose poll interval has passed (one catalog object for all of them, off the event loop);
2. lists the snapshots of the branch after the newest one broadcast for it, oldest first, and turns each into an
   event: operation, changed partitions, rows added and deleted (``snapshot_watch.snapshots_since`` and
   ``commit_event``);
3. broadcasts the events to every subscriber of the catalog; each fires those of its own table and branch that
   come after its own cursor (``Subscription.wants``).

Where the loop runs and where a cursor is kept depends on Airflow:

- 3.3+: the triggerer's shared stream in ack mode runs the loop (``_snapshot_stream.SnapshotStreamProducer``). A
  watcher's cursor moves in its asset's state store only when the triggerer has confirmed every event up to it
  stored in the metadata database (``CatalogPoller.confirmed``); an event that was not confirmed is broadcast again
  (``CatalogPoller.rewind``). A triggerer stopped at any moment therefore loses no commit; one stopped in the second
  or two between an event's storage and its confirmation fires that event again when it starts (every event
  carries its snapshot id).
- 3.1 and 3.2 (no shared streams, no state store): this module's own loop per catalog in the triggerer process
  (``LocalCatalogLoop``); the cursor lives in the trigger (its ``last_seen_snapshot_id``, then memory), so a
  restarted triggerer reports the head it finds first again, as the official trigger does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook
from airflow_iceberg_provider.snapshot_watch import WatchCursor, commit_event, snapshots_since

log = logging.getLogger(__name__)

# The state store key of a watcher's cursor, and the official watcher's (read once, when ours is not there yet).
CURSOR_KEY = "iceberg_snapshot_cursor"
OFFICIAL_WATERMARK_KEY = "snapshot_id"
# A poller with no subscriber looks again this often (seconds) for one.
IDLE_ROUND_SECONDS = 1.0

# (kind, connection id or "", catalog name or "")
CatalogKey = tuple[str, str, str]
TableKey = tuple[str, str]  # (table, branch)


def catalog_key(iceberg_conn_id: str | None, catalog_name: str | None) -> CatalogKey:
    """What watchers of one catalog share: its connection and name."""
    return ("airflow-iceberg-provider.snapshots", iceberg_conn_id or "", catalog_name or "")


def catalog_hook(key: CatalogKey) -> IcebergCatalogHook:
    """The catalog hook of a poller's key."""
    _, conn_id, catalog_name = key
    return IcebergCatalogHook(iceberg_conn_id=conn_id or None, catalog_name=catalog_name or None)


def event_cursor(event: Mapping[str, Any]) -> WatchCursor:
    """The cursor standing at an event's snapshot."""
    return WatchCursor(int(event["snapshot_id"]), int(event["sequence_number"] or 0), int(event["timestamp_ms"]))


@dataclass(eq=False)
class Subscription:
    """One watcher of one table and branch: how often it looks, what it fired last, where it keeps that."""

    table: str
    branch: str
    poll_interval: float
    cursor: WatchCursor | None = None  # the newest snapshot it fired (memory)
    persisted: WatchCursor | None = None  # the newest stored in its asset's state store
    store: Any = None  # the asset's state store accessor (``aget``/``aset``), or None

    @property
    def table_key(self) -> TableKey:
        """The table and branch it watches."""
        return (self.table, self.branch)

    def wants(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` is of its table and branch and after its cursor."""
        if (event.get("table"), event.get("branch")) != self.table_key:
            return False
        return self.cursor is None or self.cursor.is_before(event_cursor(event))

    def fired(self, event: Mapping[str, Any]) -> None:
        """Move the cursor (in memory) to ``event``."""
        self.cursor = event_cursor(event)

    async def store_cursor(self, cursor: WatchCursor) -> None:
        """Store ``cursor`` in the asset's state store when it is newer than the stored one."""
        if self.store is None or (self.persisted is not None and not self.persisted.is_before(cursor)):
            return
        try:
            await self.store.aset(CURSOR_KEY, cursor.as_dict())
        except Exception as error:  # the next confirmed event stores a newer one
            log.warning("cannot store the cursor of %s (%s): %s: %s", self.table, cursor, type(error).__name__, error)
            return
        self.persisted = cursor


@dataclass
class _WatchedTable:
    """A table and branch some subscriber watches: the newest snapshot broadcast for it, and when to look again."""

    emitted: WatchCursor | None
    next_poll: float = 0.0
    # Bumped when broadcast events were not all confirmed: they are broadcast again, and confirmations of the
    # earlier broadcast no longer count.
    generation: int = 0


@dataclass
class CatalogPoller:
    """The watched tables of one catalog (module doc): subscribers, what was broadcast, what was confirmed."""

    key: CatalogKey
    subscriptions: list[Subscription] = field(default_factory=list)
    tables: dict[TableKey, _WatchedTable] = field(default_factory=dict)

    def add(self, subscription: Subscription) -> None:
        """Watch ``subscription``'s table from its cursor (an older cursor has what it missed broadcast again)."""
        self.subscriptions.append(subscription)
        watched = self.tables.get(subscription.table_key)
        if watched is None:
            self.tables[subscription.table_key] = _WatchedTable(subscription.cursor)
        elif subscription.cursor is not None and (
            watched.emitted is None or subscription.cursor.is_before(watched.emitted)
        ):
            watched.emitted = subscription.cursor
            watched.generation += 1
        if subscription.persisted is None and subscription.cursor is None:
            # Nothing stored: confirmations count from what is broadcast next.
            subscription.persisted = self.tables[subscription.table_key].emitted
        self.tables[subscription.table_key].next_poll = 0.0

    def remove(self, subscription: Subscription) -> None:
        """Stop serving ``subscription``; a table nobody watches any more is forgotten."""
        if subscription in self.subscriptions:
            self.subscriptions.remove(subscription)
        if not self._subscribers(subscription.table_key):
            self.tables.pop(subscription.table_key, None)

    def round_seconds(self) -> float:
        """How long to wait between rounds: the shortest poll interval of the subscribers."""
        return min((s.poll_interval for s in self.subscriptions), default=IDLE_ROUND_SECONDS)

    def _subscribers(self, table_key: TableKey) -> list[Subscription]:
        return [s for s in self.subscriptions if s.table_key == table_key]

    async def poll(self, hook: IcebergCatalogHook) -> list[tuple[dict[str, Any], tuple[Any, ...]]]:
        """One round (module doc, steps 1-2): each new snapshot's event, with what confirming it takes
        (``confirmed``: table, branch, its cursor, the cursor before it, the broadcast's generation)."""
        now = time.monotonic()
        due = [(key, watched) for key, watched in self.tables.items() if watched.next_poll <= now]
        for key, watched in due:
            watched.next_poll = now + min(s.poll_interval for s in self._subscribers(key))
        targets = [(table, branch, watched.emitted) for (table, branch), watched in due]
        found = await asyncio.to_thread(_new_events, hook, targets) if targets else []
        broadcast = []
        for (key, watched), events in zip(due, found, strict=True):
            if self.tables.get(key) is not watched:  # unwatched meanwhile
                continue
            for event in events:
                cursor = event_cursor(event)
                broadcast.append((event, (*key, cursor, watched.emitted, watched.generation)))
                watched.emitted = cursor
        return broadcast

    async def confirmed(self, receipt: tuple[Any, ...], clean: bool) -> None:
        """The triggerer stored (``clean``) or did not store an event broadcast with ``receipt``: move the cursors
        in the state store, or broadcast it (and what followed it) again."""
        table, branch, cursor, previous, generation = receipt
        watched = self.tables.get((table, branch))
        if watched is None or generation != watched.generation:
            return  # broadcast again meanwhile, or nobody watches it any more
        subscribers = self._subscribers((table, branch))
        if clean:
            for subscription in subscribers:
                await subscription.store_cursor(cursor)
            return
        log.warning("event for snapshot %s of %s not confirmed stored: broadcasting it again", cursor, table)
        watched.emitted = previous
        watched.generation += 1
        watched.next_poll = 0.0
        for subscription in subscribers:
            subscription.cursor = subscription.persisted


def _new_events(
    hook: IcebergCatalogHook, targets: list[tuple[str, str, WatchCursor | None]]
) -> list[list[dict[str, Any]]]:
    """For each (table, branch, cursor): the events of the snapshots after the cursor (none when the table is
    missing or cannot be loaded: the next round tries again)."""
    found: list[list[dict[str, Any]]] = []
    for table_name, branch, cursor in targets:
        try:
            table = hook.load_table(table_name)
        except (NoSuchTableError, NoSuchNamespaceError):
            log.debug("%s does not exist yet; waiting", table_name)
            found.append([])
            continue
        except Exception as error:  # a catalog outage: keep watching
            log.warning("cannot load %s to watch it: %s: %s", table_name, type(error).__name__, error)
            found.append([])
            continue
        events = []
        previous = cursor.snapshot_id if cursor is not None else None
        for snapshot in snapshots_since(table, branch, cursor):
            events.append(commit_event(table, table_name, branch, snapshot, previous))
            previous = snapshot.snapshot_id
        found.append(events)
    return found


# The pollers of this process, by catalog: shared by the shared-stream producer and the watchers it serves.
_POLLERS: dict[CatalogKey, CatalogPoller] = {}


def poller_for(key: CatalogKey) -> CatalogPoller:
    """The poller of ``key`` in this process (made on first use)."""
    return _POLLERS.setdefault(key, CatalogPoller(key))


class LocalCatalogLoop:
    """Airflow 3.1 and 3.2: one poll loop per catalog in the triggerer's event loop, fanned out to the watchers'
    queues (module doc). Runs while it has a subscriber."""

    def __init__(self, key: CatalogKey) -> None:
        self.poller = CatalogPoller(key)
        self.queues: dict[Subscription, asyncio.Queue[dict[str, Any]]] = {}
        self.task: asyncio.Task[None] | None = None

    def subscribe(self, subscription: Subscription) -> asyncio.Queue[dict[str, Any]]:
        """The queue ``subscription`` gets every event of the catalog on; starts the loop if needed."""
        self.poller.add(subscription)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.queues[subscription] = queue
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run(), name=f"iceberg-watch {self.poller.key}")
        return queue

    async def unsubscribe(self, subscription: Subscription) -> None:
        """Stop serving ``subscription``; the last one stops the loop."""
        self.poller.remove(subscription)
        self.queues.pop(subscription, None)
        if not self.queues and self.task is not None:
            self.task.cancel()
            self.task = None
            _LOCAL_LOOPS.pop(self.poller.key, None)

    async def _run(self) -> None:
        hook = catalog_hook(self.poller.key)
        while True:
            for event, _ in await self.poller.poll(hook):
                for queue in self.queues.values():
                    queue.put_nowait(event)
            await asyncio.sleep(self.poller.round_seconds())


_LOCAL_LOOPS: dict[CatalogKey, LocalCatalogLoop] = {}


def local_loop(key: CatalogKey) -> LocalCatalogLoop:
    """The local loop of ``key`` in this process (made on first use, gone with its last subscriber)."""
    return _LOCAL_LOOPS.setdefault(key, LocalCatalogLoop(key))
