"""The Iceberg catalog of an ``iceberg`` Airflow connection: pyiceberg properties, a catalog, a Spark job environment.

The connection type and its rules belong to apache-airflow-providers-apache-iceberg (``IcebergHook``): the extra
carries the catalog properties, the host (when set) is the catalog ``uri``, the type defaults to ``rest`` and a REST
catalog gets ``credential = login:password``. This hook keeps those rules and adds two things:

- the catalog name: a SQL catalog keys its rows by catalog name, so the extra may carry ``catalog_name`` (default:
  the connection id, as the official hook uses);
- ``spark_job_env()``: the same properties as ``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables for a Spark job, handed
  to spark-submit as its process environment (never its command line) and registered with Airflow's secrets masker.

Without a connection (``iceberg_conn_id=None``) the catalog comes from pyiceberg's own configuration on this machine.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.iceberg.hooks.iceberg import IcebergHook

from airflow_iceberg_provider.catalog_env import catalog_env_name, catalog_environment
from airflow_iceberg_provider.credentials import secret_values
from airflow_iceberg_provider.table_failures import load_table_naming_damage

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

CATALOG_NAME_EXTRA = "catalog_name"


class CatalogNotConfiguredError(ValueError):
    """A catalog named without a connection has no pyiceberg configuration where the hook runs."""


class IcebergCatalogHook(IcebergHook):
    """
    Iceberg catalog of an ``iceberg`` connection, under the catalog name its extra names, for hooks and Spark jobs.

    :param iceberg_conn_id: The ``iceberg`` connection; ``None`` to use pyiceberg's configuration on this machine
        (``PYICEBERG_CATALOG__*`` variables or ``.pyiceberg.yaml``) for ``catalog_name``.
    :param catalog_name: The catalog name; overrides the extra's ``catalog_name`` (default: the connection id).
    """

    def __init__(self, iceberg_conn_id: str | None = IcebergHook.default_conn_name, catalog_name: str | None = None):
        if iceberg_conn_id is None and not catalog_name:
            raise ValueError("IcebergCatalogHook needs an iceberg_conn_id, a catalog_name, or both")
        super().__init__(iceberg_conn_id=iceberg_conn_id or "")
        self.iceberg_conn_id = iceberg_conn_id
        self._catalog_name = catalog_name

    @cached_property
    def _extra(self) -> dict[str, Any]:
        if self.iceberg_conn_id is None:
            return {}
        return dict(self.get_connection(self.iceberg_conn_id).extra_dejson or {})

    @property
    def catalog_name(self) -> str:
        """The catalog name the job and pyiceberg use: argument, else the extra's ``catalog_name``, else the id."""
        return self._catalog_name or self._extra.get(CATALOG_NAME_EXTRA) or str(self.iceberg_conn_id)

    def catalog_properties(self) -> dict[str, str]:
        """The connection as pyiceberg catalog properties, by the official hook's rules (empty without one)."""
        if self.iceberg_conn_id is None:
            return {}
        conn = self.get_connection(self.iceberg_conn_id)
        properties = {key: value for key, value in self._extra.items() if key != CATALOG_NAME_EXTRA}
        host = conn.host.rstrip("/") if conn.host else None
        if host:
            properties["uri"] = host
        properties.setdefault("type", "rest")
        if properties["type"] == "rest":
            if conn.login and conn.password:
                properties["credential"] = f"{conn.login}:{conn.password}"
            elif conn.login or conn.password:
                self.log.warning(
                    "Connection %s has only one of Client ID / Client Secret; both are needed for OAuth2",
                    self.iceberg_conn_id,
                )
        return properties

    def storage_properties(self) -> dict[str, str]:
        """The catalog's properties without loading it (no request): the connection's, else pyiceberg's config."""
        if self.iceberg_conn_id is not None:
            return self.catalog_properties()
        from pyiceberg.utils.config import Config

        configured = Config().get_catalog_config(self.catalog_name) or {}
        return {key: str(value) for key, value in configured.items()}

    @cached_property
    def catalog(self) -> Catalog:
        """The pyiceberg catalog under ``catalog_name`` (connection properties over pyiceberg's configuration)."""
        from pyiceberg.catalog import load_catalog
        from pyiceberg.utils.config import Config

        # Tables of format v3 with every type Java writes (variant, geometry(C) spelled as Java spells it) load.
        from spark_jobs.engine.shared import iceberg_model

        iceberg_model.register()
        if self.iceberg_conn_id is None and Config().get_catalog_config(self.catalog_name) is None:
            raise CatalogNotConfiguredError(
                f"catalog {self.catalog_name!r} is not configured for pyiceberg on this machine: set "
                f"{catalog_env_name(self.catalog_name, 'uri')} (and its other keys) or .pyiceberg.yaml, or pass "
                "iceberg_conn_id"
            )
        return load_catalog(self.catalog_name, **self.catalog_properties())

    def load_table(self, table_name: str) -> Table:
        """The table ``namespace.table``; a missing or damaged metadata file raises ``DamagedTableError`` naming it
        and the table (``table_failures``), which sensors turn into a failure without retries."""
        return load_table_naming_damage(lambda: super(IcebergCatalogHook, self).load_table(table_name), table_name)

    def spark_job_env(self) -> dict[str, str]:
        """The catalog as ``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables for a Spark job; secrets masked in logs."""
        properties = self.catalog_properties()
        _mask_secrets(properties)
        return catalog_environment(self.catalog_name, properties)

    def secrets(self) -> set[str]:
        """The secret strings of the connection's catalog properties (``credentials.secret_values``)."""
        return secret_values(self.catalog_properties())


def _mask_secrets(properties: dict[str, Any]) -> None:
    """Register every secret in the properties (``credentials.secret_values``) with Airflow's secrets masker."""
    from airflow.sdk.log import mask_secret

    for secret in secret_values(properties):
        mask_secret(secret)
