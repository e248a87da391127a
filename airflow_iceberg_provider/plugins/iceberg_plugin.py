"""The provider's ``AirflowPlugin``: registers the plugin's FastAPI app with the Airflow API server."""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_iceberg_provider.plugins.app import URL_PREFIX, create_app

PLUGIN_NAME = "iceberg_provider"


class IcebergProviderPlugin(AirflowPlugin):
    """Compaction reports (and the provider's other pages) served by the API server under ``/iceberg``."""

    name = PLUGIN_NAME
    fastapi_apps: list[Any] = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "Apache Iceberg provider"}]
