"""Snapshot triggers serialize, rebuild, and fire on a real commit to a real table."""

from __future__ import annotations

import asyncio
import threading

import pyarrow as pa
import pytest

from airflow_iceberg_provider.triggers.snapshot import IcebergCatalogSnapshotTrigger, IcebergSnapshotTrigger
from tests.support.airflow_env import import_string


def _rebuilt(trigger):
    classpath, kwargs = trigger.serialize()
    return import_string(classpath)(**kwargs)


def _append_later(catalog, table_name: str, delay: float) -> threading.Timer:
    def append() -> None:
        catalog.load_table(table_name).append(pa.table({"id": pa.array([99], pa.int64()), "category": ["z"]}))

    timer = threading.Timer(delay, append)
    timer.start()
    return timer


def _first_event(trigger, timeout: float = 60):
    async def first():
        async for event in trigger.run():
            return event

    return asyncio.run(asyncio.wait_for(first(), timeout))


def test_snapshot_trigger_round_trips() -> None:
    trigger = IcebergSnapshotTrigger(
        table="ns.t", catalog_name="lake", since_snapshot_id=5, operation="append", summary={"k": "v"}, poll_interval=2
    )
    rebuilt = _rebuilt(trigger)
    assert type(rebuilt) is IcebergSnapshotTrigger
    assert rebuilt.serialize() == trigger.serialize()


def test_snapshot_trigger_fires_on_the_next_matching_commit(testing_catalog, events_table) -> None:
    head = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    trigger = _rebuilt(
        IcebergSnapshotTrigger(
            table=events_table, catalog_name="testing", since_snapshot_id=head, operation="append", poll_interval=0.2
        )
    )
    timer = _append_later(testing_catalog, events_table, 1.0)
    event = _first_event(trigger)
    timer.join()
    new_head = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    assert event.payload["status"] == "success"
    assert event.payload["snapshot"]["snapshot_id"] == new_head
    assert event.payload["snapshot"]["parent_snapshot_id"] == head


def test_snapshot_trigger_reports_a_catalog_error() -> None:
    trigger = IcebergSnapshotTrigger(table="ns.t", catalog_name="not-configured", poll_interval=0.1)
    event = _first_event(trigger)
    assert event.payload["status"] == "error"
    assert "catalog 'not-configured' is not configured for pyiceberg" in event.payload["message"]


def test_asset_watcher_trigger_keeps_the_official_arguments_and_adds_the_catalog_name() -> None:
    trigger = IcebergCatalogSnapshotTrigger(table="ns.t", catalog_name="lake", poll_interval=5, last_seen_snapshot_id=3)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_iceberg_provider.triggers.snapshot.IcebergCatalogSnapshotTrigger"
    assert kwargs == {
        "table": "ns.t",
        "iceberg_conn_id": None,
        "branch": "main",
        "poll_interval": 5,
        "last_seen_snapshot_id": 3,
        "catalog_name": "lake",
    }
    assert _rebuilt(trigger).serialize() == (classpath, kwargs)


def test_asset_watcher_trigger_fires_on_a_commit_to_a_sql_catalog_table(testing_catalog, events_table) -> None:
    head = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    trigger = IcebergCatalogSnapshotTrigger(
        table=events_table, catalog_name="testing", poll_interval=0.2, last_seen_snapshot_id=head
    )
    timer = _append_later(testing_catalog, events_table, 1.0)
    event = _first_event(trigger)
    timer.join()
    assert event.payload["previous_snapshot_id"] == head
    assert event.payload["snapshot_id"] == testing_catalog.load_table(events_table).current_snapshot().snapshot_id


def _append_rows(catalog, table_name: str, ids: list[int], category: str) -> int:
    table = catalog.load_table(table_name)
    table.append(pa.table({"id": pa.array(ids, pa.int64()), "category": [category] * len(ids)}))
    return table.refresh().current_snapshot().snapshot_id


def _second_table(catalog, events_table: str) -> str:
    name = events_table + "_2"
    if catalog.table_exists(name):
        catalog.drop_table(name)
    catalog.create_table(name, schema=catalog.load_table(events_table).schema())
    return name


def test_watchers_of_one_catalog_share_one_loop_and_fire_every_commit_in_order(testing_catalog, events_table) -> None:
    """Airflow 3.1 and 3.2 (``run``): one local loop for both tables; two commits between two looks are two
    events, oldest first, each naming its partitions and rows."""
    from airflow_iceberg_provider.triggers import _catalog_watch

    other = _second_table(testing_catalog, events_table)
    head = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    watchers = [
        IcebergCatalogSnapshotTrigger(table=events_table, catalog_name="testing", poll_interval=1.5,
                                      last_seen_snapshot_id=head),
        IcebergCatalogSnapshotTrigger(table=other, catalog_name="testing", poll_interval=1.5),
    ]  # fmt: skip
    fired: dict[str, list[dict]] = {events_table: [], other: []}
    loops: list[int] = []

    async def watch(trigger, count: int) -> None:
        async for event in trigger.run():
            fired[trigger.table].append(event.payload)
            if len(fired[trigger.table]) == count:
                return

    async def main() -> None:
        tasks = [asyncio.create_task(watch(watchers[0], 2)), asyncio.create_task(watch(watchers[1], 1))]
        await asyncio.sleep(0.5)
        loops.append(len(_catalog_watch._LOCAL_LOOPS))
        # Two commits to the first table between two looks, one to the second.
        await asyncio.to_thread(_append_rows, testing_catalog, events_table, [20, 21], "x")
        await asyncio.to_thread(_append_rows, testing_catalog, events_table, [22], "y")
        await asyncio.to_thread(_append_rows, testing_catalog, other, [1], "z")
        await asyncio.wait_for(asyncio.gather(*tasks), 60)

    asyncio.run(main())
    assert loops == [1] and _catalog_watch._LOCAL_LOOPS == {}
    first, second = fired[events_table]
    assert first["previous_snapshot_id"] == head and second["previous_snapshot_id"] == first["snapshot_id"]
    assert (first["rows_added"], second["rows_added"], first["operation"]) == (2, 1, "append")
    assert (first["partitions"], first["partition_count"]) == ([""], 1)  # unpartitioned: one partition, ""
    (only,) = fired[other]
    assert only["table"] == other and only["rows_added"] == 1


class _StateStore:
    """An asset's state store as the triggerer hands it to a watcher (``aget``/``aset``), kept in a dict: the
    real one needs the triggerer's supervisor, which the live test runs (tests/integration)."""

    def __init__(self, values: dict | None = None) -> None:
        self.values = dict(values or {})

    async def aget(self, key: str, default=None):
        return self.values.get(key, default)

    async def aset(self, key: str, value) -> None:
        self.values[key] = value


@pytest.mark.airflow33
def test_on_a_shared_stream_the_cursor_moves_only_once_the_event_is_stored(testing_catalog, events_table) -> None:
    """Airflow 3.3+: driven by Airflow's own SharedStreamManager in ack mode, as the triggerer drives it. An event
    the triggerer never confirms stored fails the watcher (Airflow's ack timeout); started again, the watcher fires
    that commit again, from the cursor the store kept."""
    from airflow.triggers.shared_stream import AckTimeout, SharedStreamManager

    from airflow_iceberg_provider.snapshot_watch import WatchCursor
    from airflow_iceberg_provider.triggers._catalog_watch import CURSOR_KEY

    table = testing_catalog.load_table(events_table)
    first, second = table.snapshots()
    store = _StateStore({CURSOR_KEY: WatchCursor.of(first).as_dict()})
    trigger = IcebergCatalogSnapshotTrigger(table=events_table, catalog_name="testing", poll_interval=0.2)
    trigger.asset_state_store = store
    key = trigger.shared_stream_key()
    assert key is not None

    async def stored_cursor_becomes(snapshot_id: int) -> bool:
        for _ in range(50):
            if store.values[CURSOR_KEY]["snapshot_id"] == snapshot_id:
                return True
            await asyncio.sleep(0.1)
        return False

    async def main() -> list[int]:
        manager = SharedStreamManager(ack_timeout=1.5)
        events = trigger.filter_shared_stream(manager.subscribe(trigger_id=1, trigger=trigger, key=key))
        fired = [(await anext(events)).payload["snapshot_id"]]  # the one after the stored cursor
        seq = manager.bind_pending_event(trigger_id=1, key=key)
        later = asyncio.ensure_future(anext(events))  # pulling the next one closes the event's window
        await asyncio.sleep(0.5)
        assert store.values[CURSOR_KEY]["snapshot_id"] == first.snapshot_id  # not confirmed: not stored
        manager.confirm_persisted([seq])
        assert await stored_cursor_becomes(second.snapshot_id)
        # The next commit's event is never confirmed stored: the watcher fails after the ack timeout.
        third = await asyncio.to_thread(_append_rows, testing_catalog, events_table, [30], "x")
        fired.append((await asyncio.wait_for(later, 30)).payload["snapshot_id"])
        manager.bind_pending_event(trigger_id=1, key=key)
        with pytest.raises(AckTimeout):
            await asyncio.wait_for(anext(events), 30)
        await manager.unsubscribe(1, key)
        assert store.values[CURSOR_KEY]["snapshot_id"] == second.snapshot_id
        # Started again (a new trigger object, as a restarted triggerer builds it), it fires that commit again.
        restarted = _rebuilt(trigger)
        restarted.asset_state_store = store
        events = restarted.filter_shared_stream(manager.subscribe(trigger_id=1, trigger=restarted, key=key))
        fired.append((await asyncio.wait_for(anext(events), 30)).payload["snapshot_id"])
        seq = manager.bind_pending_event(trigger_id=1, key=key)
        later = asyncio.ensure_future(anext(events))
        manager.confirm_persisted([seq])
        assert await stored_cursor_becomes(third)
        later.cancel()
        await manager.unsubscribe(1, key)
        return fired

    fired = asyncio.run(main())
    third = testing_catalog.load_table(events_table).current_snapshot().snapshot_id
    assert fired == [second.snapshot_id, third, third]
