"""Async trigger for the deferrable ``IcebergSourceFilesSensor``: poll for a source's marker file until it exists."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook
from airflow_iceberg_provider.source_files import marker_exists


class IcebergSourceFilesTrigger(BaseTrigger):
    """
    Fire once when the file at ``location`` exists on the catalog's storage.

    The event is ``{"status": "success", "location": ...}``, or ``{"status": "error", "message": ...}`` when the
    storage or the catalog fails (an access error is not a reason to keep waiting).

    :param location: The file to wait for (a local path or a URI).
    :param iceberg_conn_id: ``iceberg`` connection whose storage properties apply; ``None`` for none.
    :param catalog_name: Catalog whose pyiceberg configuration applies (without a connection); ``None`` for none.
    :param poll_interval: Seconds between checks.
    """

    def __init__(
        self,
        *,
        location: str,
        iceberg_conn_id: str | None = None,
        catalog_name: str | None = None,
        poll_interval: float = 60,
    ) -> None:
        super().__init__()
        self.location = location
        self.iceberg_conn_id = iceberg_conn_id
        self.catalog_name = catalog_name
        self.poll_interval = poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Class path and keyword arguments, to rebuild the trigger in the triggerer."""
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            "location": self.location,
            "iceberg_conn_id": self.iceberg_conn_id,
            "catalog_name": self.catalog_name,
            "poll_interval": self.poll_interval,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Check off the event loop until the file exists; a storage failure is an error event."""
        try:
            properties = await asyncio.to_thread(storage_properties, self.iceberg_conn_id, self.catalog_name)
            while not await asyncio.to_thread(marker_exists, self.location, properties):
                self.log.info("%s has not landed yet; next check in %ss", self.location, self.poll_interval)
                await asyncio.sleep(self.poll_interval)
        except Exception as error:
            yield TriggerEvent(
                {"status": "error", "location": self.location, "message": f"{type(error).__name__}: {error}"}
            )
            return
        yield TriggerEvent({"status": "success", "location": self.location})


def storage_properties(iceberg_conn_id: str | None, catalog_name: str | None) -> dict[str, str]:
    """The catalog's properties (its storage settings among them), or none without a connection or a catalog."""
    if iceberg_conn_id is None and not catalog_name:
        return {}
    hook = IcebergCatalogHook(iceberg_conn_id=iceberg_conn_id, catalog_name=catalog_name)
    return hook.storage_properties()
