"""The compaction trigger serializes, rebuilds, and fires with the statistics and reasons."""

from __future__ import annotations

import asyncio

from airflow_iceberg_provider.triggers.compaction import IcebergCompactionNeededTrigger
from tests.support.airflow_env import import_string


def _first_event(trigger, timeout: float = 60):
    async def first():
        async for event in trigger.run():
            return event

    return asyncio.run(asyncio.wait_for(first(), timeout))


def test_round_trips() -> None:
    trigger = IcebergCompactionNeededTrigger(
        table="ns.t",
        iceberg_conn_id="lake",
        min_small_files=10,
        min_deleted_row_ratio=0.2,
        max_small_files_per_partition=50,
        fragment_ratio=16,
        poll_interval=30,
    )
    classpath, kwargs = trigger.serialize()
    rebuilt = import_string(classpath)(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)
    assert (rebuilt.thresholds.max_small_files_per_partition, rebuilt.thresholds.fragment_ratio) == (50, 16)


def test_fires_when_a_threshold_is_reached(conformance_catalog) -> None:
    trigger = IcebergCompactionNeededTrigger(
        table="corpus.v2_eq_deletes", catalog_name="conformance", min_delete_files=15, poll_interval=0.1
    )
    event = _first_event(trigger)
    assert event.payload["status"] == "success"
    assert event.payload["stats"]["delete_files"] == 15
    assert event.payload["reasons"] == ["15 delete files (threshold 15)"]
