"""Sensors on a table whose metadata is damaged fail at once (no retries), naming the file and the table; a table
that merely cannot be reached keeps failing retryably. Real tables of the session's SQL catalog, damaged on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlparse

import pytest

from airflow_iceberg_provider.airflow_compat import AirflowFailException
from airflow_iceberg_provider.sensors.compaction import IcebergCompactionNeededSensor
from airflow_iceberg_provider.sensors.snapshot import IcebergSnapshotSensor
from airflow_iceberg_provider.triggers.compaction import IcebergCompactionNeededTrigger
from airflow_iceberg_provider.triggers.snapshot import IcebergSnapshotTrigger


def _local(location: str) -> Path:
    return Path(urlparse(location).path)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _first_event(trigger) -> dict:
    async def first() -> dict:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")

    return asyncio.run(first())


@pytest.mark.parametrize("damage", ["truncated", "not-json", "missing"])
def test_snapshot_sensor_damaged_metadata(testing_catalog, events_table, damage) -> None:
    metadata = _local(testing_catalog.load_table(events_table).metadata_location)
    if damage == "truncated":
        _truncate(metadata)
    elif damage == "not-json":
        metadata.write_text("this is not a table's metadata")
    else:
        metadata.unlink()
    sensor = IcebergSnapshotSensor(task_id="s", catalog="testing", table=events_table)
    with pytest.raises(AirflowFailException) as raised:
        sensor.poke(context={})
    message = str(raised.value)
    assert events_table in message and metadata.name in message
    assert ("is missing" if damage == "missing" else "it is damaged") in message
    assert '"location"' not in message  # the file's content is not quoted
    event = _first_event(IcebergSnapshotTrigger(table=events_table, catalog_name="testing", poll_interval=0.1))
    assert event["status"] == "error" and event["damaged"] is True and metadata.name in event["message"]
    with pytest.raises(AirflowFailException, match=metadata.name):
        sensor.execute_complete(context={}, event=event)


@pytest.mark.parametrize("damaged_file", ["manifest list", "manifest"])
def test_compaction_sensor_damaged_manifest(testing_catalog, events_table, damaged_file) -> None:
    table = testing_catalog.load_table(events_table)
    snapshot = table.current_snapshot()
    path = _local(
        snapshot.manifest_list if damaged_file == "manifest list" else snapshot.manifests(table.io)[0].manifest_path
    )
    _truncate(path)
    sensor = IcebergCompactionNeededSensor(task_id="c", catalog="testing", table=events_table, min_small_files=1)
    with pytest.raises(AirflowFailException) as raised:
        sensor.poke(context={})
    assert events_table in str(raised.value) and path.name in str(raised.value)
    assert f"{damaged_file} " in str(raised.value)
    trigger = IcebergCompactionNeededTrigger(table=events_table, catalog_name="testing", min_small_files=1)
    event = _first_event(trigger)
    assert event["damaged"] is True and path.name in event["message"]


def test_a_catalog_that_cannot_be_reached_is_not_damage(monkeypatch, events_table) -> None:
    monkeypatch.setenv("PYICEBERG_CATALOG__UNREACHABLE__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__UNREACHABLE__URI", "postgresql+psycopg2://nobody@127.0.0.1:9/none")
    sensor = IcebergSnapshotSensor(task_id="s", catalog="unreachable", table=events_table)
    with pytest.raises(Exception) as raised:
        sensor.poke(context={})
    assert not isinstance(raised.value, AirflowFailException)


def test_compact_operator_damaged_manifest(testing_catalog, events_table) -> None:  # fails before spark-submit
    from airflow_iceberg_provider.operators.compact import IcebergCompactOperator

    table = testing_catalog.load_table(events_table)
    manifest = _local(table.current_snapshot().manifests(table.io)[0].manifest_path)
    _truncate(manifest)
    operator = IcebergCompactOperator(task_id="compact", catalog="testing", table=events_table)
    with pytest.raises(AirflowFailException) as raised:
        operator.execute(context={})
    assert events_table in str(raised.value) and manifest.name in str(raised.value)
