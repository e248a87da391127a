"""Wait until an Iceberg table needs compaction: too many small files or delete files, or too many deleted rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import PokeReturnValue

from airflow_iceberg_provider.compaction_stats import CompactionThresholds, file_stats
from airflow_iceberg_provider.sensors._table_sensor import IcebergTableSensor
from airflow_iceberg_provider.triggers.compaction import IcebergCompactionNeededTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context


class IcebergCompactionNeededSensor(IcebergTableSensor):
    """
    Succeed when the table's current snapshot reaches any of the given thresholds, computed from manifests alone.

    Returns (XCom) ``{"stats": {...}, "reasons": [...]}``: data files, small data files, data rows, delete files,
    deleted rows, deleted-row ratio, and one sentence per threshold reached. Use it in ``reschedule`` mode or
    deferrable, or with ``soft_fail=True`` and a short ``timeout`` to skip a nightly compaction that is not needed.

    :param table: ``namespace.table``. (templated)
    :param catalog: Catalog name; with ``iceberg_conn_id`` it overrides the extra's ``catalog_name``. (templated)
    :param iceberg_conn_id: ``iceberg`` connection (``None``: pyiceberg's configuration of ``catalog``).
    :param min_small_files: Needed when at least this many data files are small.
    :param min_delete_files: Needed when at least this many delete files are live.
    :param min_deleted_row_ratio: Needed when deleted rows / data rows reaches this (e.g. 0.1).
    :param small_file_bytes: Size under which a data file is small (default: 0.75 x the table's
        ``write.target-file-size-bytes``, RewriteDataFiles' minimum).
    :param deferrable: Wait in the triggerer instead of a worker slot.
    """

    template_fields: Sequence[str] = ("table", "catalog")

    waiting_for = "a compaction threshold"

    def __init__(
        self,
        *,
        table: str,
        min_small_files: int | None = None,
        min_delete_files: int | None = None,
        min_deleted_row_ratio: float | None = None,
        small_file_bytes: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(table=table, **kwargs)
        self.thresholds = CompactionThresholds(
            min_small_files, min_delete_files, min_deleted_row_ratio, small_file_bytes
        )

    def poke(self, context: Context) -> PokeReturnValue:
        """One look at the current snapshot's manifests."""
        stats = file_stats(self.catalog_hook().load_table(self.table), self.thresholds.small_file_bytes)
        reasons = self.thresholds.reasons(stats)
        self.log.info("%s: %s; compaction %s", self.table, stats.as_dict(), reasons or "not needed")
        return PokeReturnValue(is_done=bool(reasons), xcom_value={"stats": stats.as_dict(), "reasons": reasons})

    def trigger(self) -> IcebergCompactionNeededTrigger:
        """The same thresholds, polled in the triggerer."""
        return IcebergCompactionNeededTrigger(
            table=self.table,
            iceberg_conn_id=self.iceberg_conn_id,
            catalog_name=self.catalog,
            min_small_files=self.thresholds.min_small_files,
            min_delete_files=self.thresholds.min_delete_files,
            min_deleted_row_ratio=self.thresholds.min_deleted_row_ratio,
            small_file_bytes=self.thresholds.small_file_bytes,
            poll_interval=self.poke_interval,
        )

    def result_of_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """The statistics and the thresholds reached."""
        return {"stats": event["stats"], "reasons": event["reasons"]}
