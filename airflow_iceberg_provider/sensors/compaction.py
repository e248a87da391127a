"""Wait until an Iceberg table needs compaction: too many small files or delete files, or too many deleted rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from airflow.sdk import PokeReturnValue

from airflow_iceberg_provider.compaction_stats import MIN_FILE_SIZE_RATIO, CompactionThresholds, assess
from airflow_iceberg_provider.sensors._table_sensor import IcebergTableSensor
from airflow_iceberg_provider.table_failures import failing_on_damage, reading_naming_damage
from airflow_iceberg_provider.triggers.compaction import IcebergCompactionNeededTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context


class IcebergCompactionNeededSensor(IcebergTableSensor):
    """
    Succeed when the table's current snapshot needs compaction, decided per partition from manifests alone.

    With no threshold given, the rules production systems use apply: a partition with more than 100 files under
    75 % of the target file size (AWS Glue's table optimizer), 12 or more fragment files under target / 8, or a
    deleted-row ratio of 0.1 (Apache Amoro's self-optimizing). Give any threshold and only the given ones apply.
    The target is the table's ``write.target-file-size-bytes`` (default 512 MiB).

    Each poke logs the decision in words, one line per partition (files, small files, fragments, delete files,
    and which rule it reaches or that it reaches none). Returns (XCom) ``{"needed", "stats", "reasons",
    "explanation", "partitions", "thresholds"}``. Use it in ``reschedule`` mode or deferrable, or with
    ``soft_fail=True`` and a short ``timeout`` to skip a nightly compaction that is not needed.

    :param table: ``namespace.table``. (templated)
    :param catalog: Catalog name; with ``iceberg_conn_id`` it overrides the extra's ``catalog_name``. (templated)
    :param iceberg_conn_id: ``iceberg`` connection (``None``: pyiceberg's configuration of ``catalog``).
    :param max_small_files_per_partition: Needed when a partition has more than this many small files (Glue: 100).
    :param min_fragment_files_per_partition: Needed when a partition has this many fragment files (Amoro: 12).
    :param min_deleted_row_ratio: Needed when a partition's deleted rows / rows reaches this (Amoro: 0.1).
    :param min_delete_files_per_partition: Needed when a partition has this many delete files.
    :param min_small_files: Needed when the table has this many small data files in all.
    :param min_delete_files: Needed when the table has this many live delete files in all.
    :param small_file_ratio: A data file under this share of the target size is small (0.75).
    :param fragment_ratio: A data file under target / this is a fragment (8).
    :param small_file_bytes: Size under which a data file is small, instead of ``small_file_ratio``.
    :param target_file_size_bytes: Target size instead of the table's property.
    :param deferrable: Wait in the triggerer instead of a worker slot.
    """

    template_fields: Sequence[str] = ("table", "catalog")

    waiting_for = "a compaction threshold"

    def __init__(
        self,
        *,
        table: str,
        max_small_files_per_partition: int | None = None,
        min_fragment_files_per_partition: int | None = None,
        min_deleted_row_ratio: float | None = None,
        min_delete_files_per_partition: int | None = None,
        min_small_files: int | None = None,
        min_delete_files: int | None = None,
        small_file_ratio: float = MIN_FILE_SIZE_RATIO,
        fragment_ratio: int = 8,
        small_file_bytes: int | None = None,
        target_file_size_bytes: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(table=table, **kwargs)
        self.thresholds = CompactionThresholds(
            min_small_files=min_small_files,
            min_delete_files=min_delete_files,
            min_deleted_row_ratio=min_deleted_row_ratio,
            small_file_bytes=small_file_bytes,
            max_small_files_per_partition=max_small_files_per_partition,
            min_fragment_files_per_partition=min_fragment_files_per_partition,
            min_delete_files_per_partition=min_delete_files_per_partition,
            small_file_ratio=small_file_ratio,
            fragment_ratio=fragment_ratio,
            target_file_size_bytes=target_file_size_bytes,
        )

    def poke(self, context: Context) -> PokeReturnValue:
        """One look at the current snapshot's manifests; the decision and its reasons are logged in words."""
        with failing_on_damage():  # a damaged metadata file, manifest list or manifest: no retries
            table = self.catalog_hook().load_table(self.table)
            decision = reading_naming_damage(lambda: assess(table, self.thresholds), table)
        log_decision(self.log, self.table, decision)
        return PokeReturnValue(is_done=decision["needed"], xcom_value=decision)

    def trigger(self) -> IcebergCompactionNeededTrigger:
        """The same thresholds, polled in the triggerer."""
        return IcebergCompactionNeededTrigger(
            table=self.table,
            iceberg_conn_id=self.iceberg_conn_id,
            catalog_name=self.catalog,
            poll_interval=self.poke_interval,
            **asdict(self.thresholds),
        )

    def result_of_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """The decision the trigger made, logged here too (the triggerer's log is not the task's)."""
        decision = {key: value for key, value in event.items() if key not in ("status", "table")}
        log_decision(self.log, self.table, decision)
        return decision


def log_decision(log: Any, table: str, decision: dict[str, Any]) -> None:
    """The decision in the task log: a verdict line, then one line per partition."""
    stats = decision["stats"]
    verdict = "compaction needed" if decision["needed"] else "compaction not needed"
    log.info(
        "%s: %s (%s data files, %s small, %s fragments, %s delete files in %s partitions; snapshot %s)",
        table,
        verdict,
        stats["data_files"],
        stats["small_data_files"],
        stats["fragment_files"],
        stats["delete_files"],
        stats["partition_count"],
        stats["snapshot_id"],
    )
    for line in decision["explanation"]:
        log.info("  %s", line)
