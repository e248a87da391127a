"""Wait until an Iceberg table needs compaction: too many small files or delete files, or too many deleted rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf
from airflow.sdk.exceptions import AirflowException

from airflow_iceberg_provider.compaction_stats import CompactionThresholds, file_stats
from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook
from airflow_iceberg_provider.triggers.compaction import IcebergCompactionNeededTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context


class IcebergCompactionNeededSensor(BaseSensorOperator):
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

    def __init__(
        self,
        *,
        table: str,
        catalog: str | None = None,
        iceberg_conn_id: str | None = None,
        min_small_files: int | None = None,
        min_delete_files: int | None = None,
        min_deleted_row_ratio: float | None = None,
        small_file_bytes: int | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not catalog and not iceberg_conn_id:
            raise ValueError(
                f"IcebergCompactionNeededSensor {self.task_id} on {table!r} needs catalog= or iceberg_conn_id="
            )
        self.table = table
        self.catalog = catalog
        self.iceberg_conn_id = iceberg_conn_id
        self.thresholds = CompactionThresholds(
            min_small_files, min_delete_files, min_deleted_row_ratio, small_file_bytes
        )
        self.deferrable = deferrable

    def poke(self, context: Context) -> PokeReturnValue:
        """One look at the current snapshot's manifests."""
        hook = IcebergCatalogHook(iceberg_conn_id=self.iceberg_conn_id, catalog_name=self.catalog)
        stats = file_stats(hook.load_table(self.table), self.thresholds.small_file_bytes)
        reasons = self.thresholds.reasons(stats)
        self.log.info("%s: %s; compaction %s", self.table, stats.as_dict(), reasons or "not needed")
        return PokeReturnValue(is_done=bool(reasons), xcom_value={"stats": stats.as_dict(), "reasons": reasons})

    def execute(self, context: Context) -> Any:
        """Poke (or check once, then defer to the triggerer)."""
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)
        if first.is_done:
            return first.xcom_value
        self.defer(
            trigger=IcebergCompactionNeededTrigger(
                table=self.table,
                iceberg_conn_id=self.iceberg_conn_id,
                catalog_name=self.catalog,
                min_small_files=self.thresholds.min_small_files,
                min_delete_files=self.thresholds.min_delete_files,
                min_deleted_row_ratio=self.thresholds.min_deleted_row_ratio,
                small_file_bytes=self.thresholds.small_file_bytes,
                poll_interval=self.poke_interval,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the trigger: the statistics and reasons, or the catalog's error."""
        if event.get("status") != "success":
            raise AirflowException(f"checking {self.table} for compaction failed: {event.get('message')}")
        return {"stats": event["stats"], "reasons": event["reasons"]}
