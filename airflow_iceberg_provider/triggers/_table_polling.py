"""The poll loop shared by this provider's one-shot table triggers: load the table off the event loop, check it, fire.

A subclass names its own arguments (``condition_kwargs``) and says what fires (``evaluate``); this base serializes
them with the common ones, waits for a table that does not exist yet, and turns a catalog failure into an error
event instead of a crashed triggerer task.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.table import Table

from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook
from airflow_iceberg_provider.table_failures import DamagedTableError


class IcebergTablePollingTrigger(BaseTrigger):
    """Poll ``table`` every ``poll_interval`` seconds until ``evaluate`` returns an event payload; fire once."""

    def __init__(
        self, *, table: str, iceberg_conn_id: str | None, catalog_name: str | None, poll_interval: float
    ) -> None:
        super().__init__()
        self.table = table
        self.iceberg_conn_id = iceberg_conn_id
        self.catalog_name = catalog_name
        self.poll_interval = poll_interval

    def condition_kwargs(self) -> dict[str, Any]:
        """The subclass's own constructor arguments, as serialized."""
        raise NotImplementedError

    def evaluate(self, table: Table) -> dict[str, Any] | None:
        """The success event's payload (besides status and table) when the table meets the condition, else None."""
        raise NotImplementedError

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Class path and keyword arguments, to rebuild the trigger in the triggerer."""
        common = {
            "table": self.table,
            "iceberg_conn_id": self.iceberg_conn_id,
            "catalog_name": self.catalog_name,
            "poll_interval": self.poll_interval,
        }
        return f"{type(self).__module__}.{type(self).__qualname__}", {**common, **self.condition_kwargs()}

    def _check(self, hook: IcebergCatalogHook) -> dict[str, Any] | None:
        try:
            table = hook.load_table(self.table)
        except (NoSuchTableError, NoSuchNamespaceError):
            self.log.info("%s does not exist yet; waiting", self.table)
            return None
        return self.evaluate(table)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll off the event loop until the condition holds; a catalog failure is an error event."""
        hook = IcebergCatalogHook(iceberg_conn_id=self.iceberg_conn_id, catalog_name=self.catalog_name)
        while True:
            try:
                payload = await asyncio.to_thread(self._check, hook)
            except DamagedTableError as error:  # a retry cannot repair it: the sensor fails without retries
                yield TriggerEvent({"status": "error", "table": self.table, "message": str(error), "damaged": True})
                return
            except Exception as error:
                yield TriggerEvent(
                    {"status": "error", "table": self.table, "message": f"{type(error).__name__}: {error}"}
                )
                return
            if payload is not None:
                yield TriggerEvent({"status": "success", "table": self.table, **payload})
                return
            await asyncio.sleep(self.poll_interval)
