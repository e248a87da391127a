"""Async trigger for the deferrable ``IcebergCompactionNeededSensor``: poll file statistics until a threshold is hit."""

from __future__ import annotations

from typing import Any

from pyiceberg.table import Table

from airflow_iceberg_provider.compaction_stats import CompactionThresholds, file_stats
from airflow_iceberg_provider.triggers._table_polling import IcebergTablePollingTrigger


class IcebergCompactionNeededTrigger(IcebergTablePollingTrigger):
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
        super().__init__(
            table=table, iceberg_conn_id=iceberg_conn_id, catalog_name=catalog_name, poll_interval=poll_interval
        )
        self.thresholds = CompactionThresholds(
            min_small_files, min_delete_files, min_deleted_row_ratio, small_file_bytes
        )

    def condition_kwargs(self) -> dict[str, Any]:
        """The thresholds, as serialized."""
        return {
            "min_small_files": self.thresholds.min_small_files,
            "min_delete_files": self.thresholds.min_delete_files,
            "min_deleted_row_ratio": self.thresholds.min_deleted_row_ratio,
            "small_file_bytes": self.thresholds.small_file_bytes,
        }

    def evaluate(self, table: Table) -> dict[str, Any] | None:
        """The file statistics and the thresholds reached, once any is."""
        stats = file_stats(table, self.thresholds.small_file_bytes)
        reasons = self.thresholds.reasons(stats)
        return {"stats": stats.as_dict(), "reasons": reasons} if reasons else None
