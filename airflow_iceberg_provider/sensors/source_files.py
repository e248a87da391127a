"""Wait until an ingest source has landed: its completion marker exists on the catalog's storage."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator

from airflow_iceberg_provider.airflow_compat import AirflowException, conf
from airflow_iceberg_provider.source_files import marker_exists, marker_location
from airflow_iceberg_provider.triggers.source_files import IcebergSourceFilesTrigger, storage_properties

if TYPE_CHECKING:
    from airflow.sdk import Context

DEFAULT_MARKER = "_SUCCESS"


class IcebergSourceFilesSensor(BaseSensorOperator):
    """
    Succeed when the source folder ``path`` holds its completion marker (``_SUCCESS``: Spark and Hadoop writers
    create it once every file is written), so an ingest never loads a half-written folder.

    The path is checked with the storage properties of the table's catalog (the ingest job reads the source with
    them): local paths, ``file://``, ``s3://`` (endpoint and keys from the catalog) and the other schemes pyiceberg
    has a FileIO for. Deferrable: after one immediate check the wait runs in the triggerer. ``timeout`` bounds the
    wait; with ``soft_fail=True`` a timeout skips the task (and the ingest after it) instead of failing it.

    :param path: The source folder. (templated)
    :param marker: File inside ``path`` to wait for; ``""`` waits for ``path`` itself as a file. (templated)
    :param catalog: Catalog whose pyiceberg configuration holds the storage properties. (templated)
    :param iceberg_conn_id: ``iceberg`` connection holding them (its extra); neither: the environment's defaults.
    :param deferrable: Wait in the triggerer instead of a worker slot.
    """

    template_fields: Sequence[str] = ("path", "marker", "catalog")

    def __init__(
        self,
        *,
        path: str,
        marker: str = DEFAULT_MARKER,
        catalog: str | None = None,
        iceberg_conn_id: str | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.path = path
        self.marker = marker
        self.catalog = catalog
        self.iceberg_conn_id = iceberg_conn_id
        self.deferrable = deferrable

    @property
    def location(self) -> str:
        """The file waited for (after rendering)."""
        return marker_location(self.path, self.marker)

    def poke(self, context: Context) -> bool:
        """One existence check."""
        landed = marker_exists(self.location, storage_properties(self.iceberg_conn_id, self.catalog or None))
        self.log.info("%s %s", self.location, "has landed" if landed else "has not landed yet")
        return landed

    def execute(self, context: Context) -> Any:
        """Poke (or check once, then defer to the triggerer)."""
        if not self.deferrable:
            return super().execute(context)
        if self.poke(context):
            return None
        trigger = IcebergSourceFilesTrigger(
            location=self.location,
            iceberg_conn_id=self.iceberg_conn_id,
            catalog_name=self.catalog or None,
            poll_interval=self.poke_interval,
        )
        self.defer(trigger=trigger, method_name="execute_complete", timeout=timedelta(seconds=self.timeout))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> None:
        """Resume after the trigger: done, or the storage's error."""
        if event.get("status") != "success":
            raise AirflowException(f"waiting for {event.get('location')} failed: {event.get('message')}")
        self.log.info("%s has landed", event["location"])
