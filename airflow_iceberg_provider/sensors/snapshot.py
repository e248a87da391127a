"""Wait for a new snapshot of an Iceberg table, optionally of an operation or with summary values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import PokeReturnValue

from airflow_iceberg_provider.sensors._table_sensor import IcebergTableSensor
from airflow_iceberg_provider.snapshot_watch import (
    DEFAULT_BRANCH,
    SnapshotCondition,
    find_new_snapshot,
    parse_snapshot_id,
)
from airflow_iceberg_provider.table_failures import failing_on_damage
from airflow_iceberg_provider.triggers.snapshot import IcebergSnapshotTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context


class IcebergSnapshotSensor(IcebergTableSensor):
    """
    Succeed when ``table`` has a snapshot newer than ``since_snapshot_id`` that matches the condition.

    Reads table metadata only. Returns (XCom) the newest matching snapshot: ``snapshot_id``,
    ``parent_snapshot_id``, ``sequence_number``, ``timestamp_ms``, ``operation``, ``summary``. In deferrable mode the
    wait runs in the triggerer (``IcebergSnapshotTrigger``) after one immediate check.

    :param table: ``namespace.table``. (templated)
    :param catalog: Catalog name; with ``iceberg_conn_id`` it overrides the extra's ``catalog_name``. (templated)
    :param iceberg_conn_id: ``iceberg`` connection (``None``: pyiceberg's configuration of ``catalog``).
    :param since_snapshot_id: Only later snapshots count; ``None`` (or rendered empty): any snapshot. (templated)
    :param operation: Only snapshots of this operation count, e.g. ``append``. (templated)
    :param summary: Only snapshots whose summary has these key/values count, e.g. ``{"added-records": "10"}``.
        (templated)
    :param branch: Branch to watch (default ``main``). (templated)
    :param deferrable: Wait in the triggerer instead of a worker slot.
    """

    template_fields: Sequence[str] = ("table", "catalog", "since_snapshot_id", "operation", "summary", "branch")

    waiting_for = "a snapshot"

    def __init__(
        self,
        *,
        table: str,
        since_snapshot_id: int | str | None = None,
        operation: str | None = None,
        summary: dict[str, str] | None = None,
        branch: str = DEFAULT_BRANCH,
        **kwargs: Any,
    ) -> None:
        super().__init__(table=table, **kwargs)
        self.since_snapshot_id = since_snapshot_id
        self.operation = operation
        self.summary = summary
        self.branch = branch

    def _condition(self) -> SnapshotCondition:
        return SnapshotCondition(
            since_snapshot_id=parse_snapshot_id(self.since_snapshot_id),
            operation=self.operation or None,
            summary={str(key): str(value) for key, value in (self.summary or {}).items()},
            branch=self.branch,
        )

    def poke(self, context: Context) -> PokeReturnValue:
        """One look at the table's metadata (a damaged metadata file fails the task without retries)."""
        with failing_on_damage():
            snapshot = find_new_snapshot(self.catalog_hook().load_table(self.table), self._condition())
        return PokeReturnValue(is_done=snapshot is not None, xcom_value=snapshot)

    def trigger(self) -> IcebergSnapshotTrigger:
        """The same condition (templates rendered), polled in the triggerer."""
        condition = self._condition()
        return IcebergSnapshotTrigger(
            table=self.table,
            iceberg_conn_id=self.iceberg_conn_id,
            catalog_name=self.catalog,
            since_snapshot_id=condition.since_snapshot_id,
            operation=condition.operation,
            summary=dict(condition.summary),
            branch=condition.branch,
            poll_interval=self.poke_interval,
        )

    def result_of_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """The snapshot the trigger found."""
        return event["snapshot"]
