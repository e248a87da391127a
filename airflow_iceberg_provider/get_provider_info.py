"""Provider metadata Airflow reads through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_iceberg_provider import __version__

PACKAGE_NAME = "airflow-iceberg-provider"

# Module lists per kind. A test walks the package and fails when a module exists that is not listed here.
HOOK_MODULES: list[str] = [
    "airflow_iceberg_provider.hooks.iceberg_catalog",
    "airflow_iceberg_provider.hooks.spark_job",
    "airflow_iceberg_provider.hooks.spark_submit_compat",
]
OPERATOR_MODULES: list[str] = [
    "airflow_iceberg_provider.operators.compact",
    "airflow_iceberg_provider.operators.ingest",
    "airflow_iceberg_provider.operators.maintenance",
    "airflow_iceberg_provider.operators.read",
    "airflow_iceberg_provider.operators.spark_job",
]
SENSOR_MODULES: list[str] = [
    "airflow_iceberg_provider.sensors.compaction",
    "airflow_iceberg_provider.sensors.snapshot",
    "airflow_iceberg_provider.sensors.source_files",
]
TRIGGER_MODULES: list[str] = [
    "airflow_iceberg_provider.triggers.compaction",
    "airflow_iceberg_provider.triggers.snapshot",
    "airflow_iceberg_provider.triggers.source_files",
]
# Asset URIs of Iceberg tables: iceberg://<catalog>/<namespace>/<table> (airflow_iceberg_provider/assets.py).
ASSET_URI_SCHEMES = ["iceberg"]
ASSET_URI_HANDLER = "airflow_iceberg_provider.assets.sanitize_uri"
# Extra links on the operators' tasks (airflow_iceberg_provider/links.py).
EXTRA_LINKS: list[str] = [
    "airflow_iceberg_provider.links.SparkUiLink",
    "airflow_iceberg_provider.links.SparkDriverLogLink",
    "airflow_iceberg_provider.links.CompactionReportLink",
]

# The provider's Airflow plugin (airflow_iceberg_provider/plugins/): its FastAPI app serves compaction reports.
PLUGINS: list[dict[str, str]] = [
    {
        "name": "iceberg_provider",
        "plugin-class": "airflow_iceberg_provider.plugins.iceberg_plugin.IcebergProviderPlugin",
    }
]


def get_provider_info() -> dict[str, Any]:
    """Return the provider description: package, hooks, operators, sensors, triggers, connection types."""
    integration = "Apache Iceberg on Spark"
    info: dict[str, Any] = {
        "package-name": PACKAGE_NAME,
        "name": "Apache Iceberg on Spark",
        "description": "Operators and sensors that run PySpark jobs over Apache Iceberg tables: ingestion with "
        "merge-on-read deletes, merge-on-read reads at any snapshot, and small-file compaction.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": integration,
                "external-doc-url": "https://iceberg.apache.org/",
                "tags": ["apache"],
            }
        ],
    }
    for key, modules in (
        ("hooks", HOOK_MODULES),
        ("operators", OPERATOR_MODULES),
        ("sensors", SENSOR_MODULES),
        ("triggers", TRIGGER_MODULES),
    ):
        if modules:
            info[key] = [{"integration-name": integration, "python-modules": list(modules)}]
    info["asset-uris"] = [{"schemes": list(ASSET_URI_SCHEMES), "handler": ASSET_URI_HANDLER}]
    info["extra-links"] = list(EXTRA_LINKS)
    info["plugins"] = [dict(plugin) for plugin in PLUGINS]
    # The `iceberg` connection type belongs to apache-airflow-providers-apache-iceberg; this provider reuses it.
    return info
