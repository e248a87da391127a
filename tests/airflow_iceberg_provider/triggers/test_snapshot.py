"""Snapshot triggers serialize, rebuild, and fire on a real commit to a real table."""

from __future__ import annotations

import asyncio
import threading

import pyarrow as pa
from airflow.sdk._shared.module_loading import import_string

from airflow_iceberg_provider.triggers.snapshot import IcebergCatalogSnapshotTrigger, IcebergSnapshotTrigger


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
