"""The source-files trigger serializes and rebuilds, fires when the marker lands (or at once when it is there), and
reports a storage or connection failure as an error event instead of waiting on."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from airflow_iceberg_provider.triggers.source_files import IcebergSourceFilesTrigger, storage_properties
from tests.support.airflow_env import import_string


def _rebuilt(trigger: IcebergSourceFilesTrigger) -> IcebergSourceFilesTrigger:
    classpath, kwargs = trigger.serialize()
    return import_string(classpath)(**kwargs)


def _first_event(trigger: IcebergSourceFilesTrigger, timeout: float = 30):
    async def first():
        async for event in trigger.run():
            return event

    return asyncio.run(asyncio.wait_for(first(), timeout))


def test_the_trigger_round_trips() -> None:
    trigger = IcebergSourceFilesTrigger(location="s3://landing/x/_SUCCESS", catalog_name="lake", poll_interval=5)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_iceberg_provider.triggers.source_files.IcebergSourceFilesTrigger"
    assert kwargs == {
        "location": "s3://landing/x/_SUCCESS",
        "iceberg_conn_id": None,
        "catalog_name": "lake",
        "poll_interval": 5,
    }
    assert _rebuilt(trigger).serialize() == (classpath, kwargs)


def test_fires_once_the_marker_lands(tmp_path: Path) -> None:
    marker = tmp_path / "_SUCCESS"
    trigger = _rebuilt(IcebergSourceFilesTrigger(location=str(marker), poll_interval=0.1))
    timer = threading.Timer(0.5, marker.touch)
    timer.start()
    event = _first_event(trigger)
    timer.join()
    assert event.payload == {"status": "success", "location": str(marker)}


def test_a_marker_already_there_fires_at_once_with_the_catalogs_properties(tmp_path: Path) -> None:
    """The ``testing`` catalog is configured through pyiceberg's environment; its properties build the FileIO."""
    marker = tmp_path / "_SUCCESS"
    marker.touch()
    trigger = IcebergSourceFilesTrigger(location=f"file://{marker}", catalog_name="testing", poll_interval=3600)
    assert _first_event(trigger, timeout=10).payload == {"status": "success", "location": f"file://{marker}"}


def test_a_storage_that_cannot_be_opened_is_an_error_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYICEBERG_CATALOG__BROKEN__PY_IO_IMPL", "no_such_module.NoSuchFileIO")
    location = str(tmp_path / "_SUCCESS")
    event = _first_event(IcebergSourceFilesTrigger(location=location, catalog_name="broken", poll_interval=3600))
    assert event.payload == {
        "status": "error",
        "location": location,
        "message": "ValueError: Could not initialize FileIO: no_such_module.NoSuchFileIO",
    }


def test_a_missing_connection_is_an_error_event(tmp_path: Path) -> None:
    event = _first_event(IcebergSourceFilesTrigger(location=str(tmp_path / "_SUCCESS"), iceberg_conn_id="no_such_conn"))
    assert event.payload["status"] == "error"
    assert "no_such_conn" in event.payload["message"]


def test_storage_properties_come_from_the_catalog_or_are_none() -> None:
    assert storage_properties(None, None) == {}
    assert storage_properties(None, "") == {}
    testing = storage_properties(None, "testing")
    assert testing["type"] == "sql" and testing["warehouse"].startswith("file://")
