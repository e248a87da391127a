"""The provider's ``AirflowPlugin``: registers the plugin's FastAPI app with the Airflow API server."""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_iceberg_provider.plugins.app import URL_PREFIX, create_app

PLUGIN_NAME = "iceberg_provider"


class IcebergProviderPlugin(AirflowPlugin):
    """Compaction reports and the table health page served by the API server under ``/iceberg``."""

    name = PLUGIN_NAME
    fastapi_apps: list[Any] = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "Apache Iceberg provider"}]
    # The table health page (plugins/health.py) in the UI's Browse menu, shown inside the UI.
    external_views: list[Any] = [
        {
            "name": "Iceberg table health",
            "href": f"{URL_PREFIX}/health/",
            "destination": "nav",
            "category": "browse",
            "url_route": "iceberg-table-health",
        }
    ]
