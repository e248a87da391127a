"""Async trigger for the deferrable ``IcebergCompactionNeededSensor``: poll file statistics until a threshold is hit."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pyiceberg.table import Table

from airflow_iceberg_provider.compaction_stats import CompactionThresholds, assess
from airflow_iceberg_provider.table_failures import reading_naming_damage
from airflow_iceberg_provider.triggers._table_polling import IcebergTablePollingTrigger


class IcebergCompactionNeededTrigger(IcebergTablePollingTrigger):
    """
    Fire once when ``table``'s current snapshot needs compaction (metadata only, no Spark).

    The thresholds are ``CompactionThresholds``' (AWS Glue's and Apache Amoro's rules when none is given). The event
    is ``{"status": "success", "table": ..., "needed": true, "stats", "reasons", "explanation", "partitions",
    "thresholds"}`` or ``{"status": "error", "message": ...}``.

    :param table: ``namespace.table``.
    :param iceberg_conn_id: ``iceberg`` connection, or ``None`` for pyiceberg's configuration of ``catalog_name``.
    :param catalog_name: Catalog name (overrides the connection extra's ``catalog_name``).
    :param poll_interval: Seconds between polls.
    :param thresholds: ``CompactionThresholds`` fields by name.
    """

    def __init__(
        self,
        *,
        table: str,
        iceberg_conn_id: str | None = None,
        catalog_name: str | None = None,
        poll_interval: float = 300,
        **thresholds: Any,
    ) -> None:
        super().__init__(
            table=table, iceberg_conn_id=iceberg_conn_id, catalog_name=catalog_name, poll_interval=poll_interval
        )
        self.thresholds = CompactionThresholds(**thresholds)

    def condition_kwargs(self) -> dict[str, Any]:
        """The thresholds, as serialized."""
        return asdict(self.thresholds)

    def evaluate(self, table: Table) -> dict[str, Any] | None:
        """The decision, once compaction is needed."""
        decision = reading_naming_damage(lambda: assess(table, self.thresholds), table)
        return decision if decision["needed"] else None
