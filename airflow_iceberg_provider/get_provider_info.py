"""Provider metadata Airflow reads through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_iceberg_provider import __version__

PACKAGE_NAME = "airflow-iceberg-provider"

# Module lists per kind. A test walks the package and fails when a module exists that is not listed here.
HOOK_MODULES: list[str] = []
OPERATOR_MODULES: list[str] = []
SENSOR_MODULES: list[str] = []
TRIGGER_MODULES: list[str] = []


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
    # The `iceberg` connection type belongs to apache-airflow-providers-apache-iceberg; this provider reuses it.
    return info
