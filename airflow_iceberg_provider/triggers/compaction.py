"""Async trigger for the deferrable ``IcebergCompactionNeededSensor``: poll file statistics until a threshold is hit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

from airflow_iceberg_provider.compaction_stats import CompactionThresholds, file_stats
from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook


class IcebergCompactionNeededTrigger(BaseTrigger):
    """
    Fire once when ``table``'s current snapshot reaches a compaction threshold (metadata only, no Spark).

    The event is ``{"status": "success", "table": ..., "stats": {...}, "reasons": [...]}`` or
    ``{"status": "error", "message": ...}``.

    :param table: ``namespace.table``.
    :param iceberg_conn_id: ``iceberg`` connection, or ``None`` for pyiceberg's configuration of ``catalog_name``.
    :param catalog_name: Catalog name (overrides the connection extra's ``catalog_name``).
    :param min_small_files: Fire when this many data files are small.
    :param min_delete_files: Fire when this many delete files are live.
    :param min_deleted_row_ratio: Fire when deleted rows / data rows reaches this.
    :param small_file_bytes: Size under which a data file is small (default 0.75 x the table's target file size).
    :param poll_interval: Seconds between polls.
    """

    def __init__(
        self,
        *,
        table: str,
        iceberg_conn_id: str | None = None,
        catalog_name: str | None = None,
        min_small_files: int | None = None,
        min_delete_files: int | None = None,
        min_deleted_row_ratio: float | None = None,
        small_file_bytes: int | None = None,
        poll_interval: float = 300,
    ) -> None:
        super().__init__()
        self.table = table
        self.iceberg_conn_id = iceberg_conn_id
        self.catalog_name = catalog_name
        self.thresholds = CompactionThresholds(
            min_small_files, min_delete_files, min_deleted_row_ratio, small_file_bytes
        )
        self.poll_interval = poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Class path and keyword arguments, to rebuild the trigger in the triggerer."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table": self.table,
                "iceberg_conn_id": self.iceberg_conn_id,
                "catalog_name": self.catalog_name,
                "min_small_files": self.thresholds.min_small_files,
                "min_delete_files": self.thresholds.min_delete_files,
                "min_deleted_row_ratio": self.thresholds.min_deleted_row_ratio,
                "small_file_bytes": self.thresholds.small_file_bytes,
                "poll_interval": self.poll_interval,
            },
        )

    def _check(self, hook: IcebergCatalogHook) -> tuple[dict[str, Any], list[str]] | None:
        try:
            table = hook.load_table(self.table)
        except (NoSuchTableError, NoSuchNamespaceError):
            self.log.info("%s does not exist yet; waiting", self.table)
            return None
        stats = file_stats(table, self.thresholds.small_file_bytes)
        return stats.as_dict(), self.thresholds.reasons(stats)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll the table's manifests off the event loop until a threshold is reached."""
        hook = IcebergCatalogHook(iceberg_conn_id=self.iceberg_conn_id, catalog_name=self.catalog_name)
        while True:
            try:
                checked = await asyncio.to_thread(self._check, hook)
            except Exception as error:
                yield TriggerEvent(
                    {"status": "error", "table": self.table, "message": f"{type(error).__name__}: {error}"}
                )
                return
            if checked is not None and checked[1]:
                stats, reasons = checked
                yield TriggerEvent({"status": "success", "table": self.table, "stats": stats, "reasons": reasons})
                return
            await asyncio.sleep(self.poll_interval)
