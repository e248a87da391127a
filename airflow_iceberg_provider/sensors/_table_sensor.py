"""What this provider's table sensors share: the table and catalog arguments, and poke-once-then-defer.

A subclass pokes (``poke``), builds its trigger (``trigger``), and turns the trigger's success event into its
result (``result_of_event``); this base checks the catalog arguments, pokes once before deferring (a condition that
already holds costs no trip through the triggerer) and fails on the trigger's error event.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.triggers.base import BaseTrigger

from airflow_iceberg_provider.airflow_compat import AirflowException, AirflowFailException, conf
from airflow_iceberg_provider.assets import check_table_identifier
from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook

if TYPE_CHECKING:
    from airflow.sdk import Context


class IcebergTableSensor(BaseSensorOperator):
    """A sensor on one table of a catalog, deferrable to a trigger that polls the same condition."""

    waiting_for = "a condition"  # for the error message: "waiting for <this> of <table> failed"

    def __init__(
        self,
        *,
        table: str,
        catalog: str | None = None,
        iceberg_conn_id: str | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not catalog and not iceberg_conn_id:
            raise ValueError(f"{type(self).__name__} {self.task_id} on {table!r} needs catalog= or iceberg_conn_id=")
        check_table_identifier(table, f"{type(self).__name__} {self.task_id}")
        self.table = table
        self.catalog = catalog
        self.iceberg_conn_id = iceberg_conn_id
        self.deferrable = deferrable

    def catalog_hook(self) -> IcebergCatalogHook:
        """The hook to the table's catalog."""
        return IcebergCatalogHook(iceberg_conn_id=self.iceberg_conn_id, catalog_name=self.catalog)

    def poke(self, context: Context) -> PokeReturnValue:
        """One look at the table: done or not, and the XCom value when done."""
        raise NotImplementedError

    def trigger(self) -> BaseTrigger:
        """The trigger that waits for the same condition in the triggerer."""
        raise NotImplementedError

    def result_of_event(self, event: dict[str, Any]) -> Any:
        """The sensor's result (XCom) from the trigger's success event."""
        raise NotImplementedError

    def execute(self, context: Context) -> Any:
        """Poke (or check once, then defer to the triggerer)."""
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)
        if first.is_done:
            return first.xcom_value
        self.defer(trigger=self.trigger(), method_name="execute_complete", timeout=timedelta(seconds=self.timeout))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        """Resume after the trigger: its result, or the catalog's error."""
        if event.get("status") != "success":
            reason = f"waiting for {self.waiting_for} of {self.table} failed: {event.get('message')}"
            if event.get("damaged"):  # a damaged metadata file: a retry cannot repair it
                raise AirflowFailException(reason)
            raise AirflowException(reason)
        return self.result_of_event(event)
