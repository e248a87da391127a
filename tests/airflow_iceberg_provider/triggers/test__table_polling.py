"""The shared poll loop: it waits for a table that does not exist yet, fires once, and reports catalog failures."""

from __future__ import annotations

import asyncio
from typing import Any

import pyarrow as pa
from pyiceberg.table import Table

from airflow_iceberg_provider.triggers._table_polling import IcebergTablePollingTrigger


class RowCountTrigger(IcebergTablePollingTrigger):
    """Fires once the table has at least ``min_rows`` rows in its current snapshot (made up for the test)."""

    def __init__(self, *, min_rows: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.min_rows = min_rows

    def condition_kwargs(self) -> dict[str, Any]:
        return {"min_rows": self.min_rows}

    def evaluate(self, table: Table) -> dict[str, Any] | None:
        snapshot = table.current_snapshot()
        rows = int(snapshot.summary["total-records"]) if snapshot and snapshot.summary else 0
        return {"rows": rows} if rows >= self.min_rows else None


def _trigger(table: str, catalog_name: str = "testing", min_rows: int = 1) -> RowCountTrigger:
    return RowCountTrigger(
        table=table, iceberg_conn_id=None, catalog_name=catalog_name, poll_interval=0.05, min_rows=min_rows
    )


def test_the_common_and_the_subclass_arguments_round_trip() -> None:
    classpath, kwargs = _trigger("ns.t", min_rows=7).serialize()
    common = {"table": "ns.t", "iceberg_conn_id": None, "catalog_name": "testing", "poll_interval": 0.05}
    assert kwargs == {**common, "min_rows": 7}
    assert classpath.endswith(".RowCountTrigger") and RowCountTrigger(**kwargs).serialize() == (classpath, kwargs)


def test_waits_for_the_table_then_fires_once(testing_catalog) -> None:
    trigger = _trigger("polling.events", min_rows=2)

    async def first_event_after_the_table_appears() -> Any:
        events = trigger.run()
        waiting = asyncio.ensure_future(anext(events))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # no table yet: nothing fired, no error
        testing_catalog.create_namespace_if_not_exists("polling")
        table = testing_catalog.create_table("polling.events", pa.schema([pa.field("id", pa.int64())]))
        table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
        return await asyncio.wait_for(waiting, 30)

    event = asyncio.run(first_event_after_the_table_appears())
    assert event.payload == {"status": "success", "table": "polling.events", "rows": 2}


def test_a_catalog_failure_is_an_error_event() -> None:
    async def first() -> Any:
        async for event in _trigger("ns.t", catalog_name="no-such-catalog").run():
            return event

    event = asyncio.run(asyncio.wait_for(first(), 30))
    assert event.payload["status"] == "error" and event.payload["table"] == "ns.t"
    assert event.payload["message"]
