"""Deployment settings the provider and the example DAGs read from the environment, with their defaults.

One place for every environment variable name, so that docker-compose.yml, the README and the code agree (a test
checks the compose file against ``ENVIRONMENT_VARIABLES``). Catalog properties themselves are pyiceberg's
configuration (``PYICEBERG_CATALOG__<NAME>__<KEY>``) or the ``iceberg`` Airflow connection, not settings here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from airflow_iceberg_provider.private_files import private_directory

CATALOG_ENV = "ICEBERG_PROVIDER_CATALOG"
NAMESPACE_ENV = "ICEBERG_PROVIDER_NAMESPACE"
SPARK_CONN_ID_ENV = "ICEBERG_PROVIDER_SPARK_CONN_ID"
ICEBERG_CONN_ID_ENV = "ICEBERG_PROVIDER_ICEBERG_CONN_ID"
OUTPUT_ROOT_ENV = "ICEBERG_PROVIDER_OUTPUT_ROOT"
REPORT_ROOT_ENV = "ICEBERG_PROVIDER_REPORT_ROOT"
DEFAULT_OUTPUT_FOLDER = "iceberg-provider-output"

# name -> (default, what it is)
ENVIRONMENT_VARIABLES: dict[str, tuple[str, str]] = {
    CATALOG_ENV: ("demo", "pyiceberg catalog name the example DAGs use"),
    NAMESPACE_ENV: ("demo", "namespace of the example DAGs' tables"),
    SPARK_CONN_ID_ENV: ("spark_default", "Airflow connection id of the Spark master"),
    ICEBERG_CONN_ID_ENV: ("iceberg_default", "Airflow connection id of the Iceberg catalog"),
    OUTPUT_ROOT_ENV: (
        "",
        "where example DAGs export read results (default: this user's private folder "
        "<temp>/iceberg-provider-output-<uid>, mode 0700)",
    ),
    REPORT_ROOT_ENV: (
        "",
        "where compaction reports are written and the Airflow UI reads them (a path or URI; default "
        "<ICEBERG_PROVIDER_OUTPUT_ROOT>/reports)",
    ),
}


@dataclass(frozen=True)
class ProviderSettings:
    """The settings in force, read once from the environment."""

    catalog: str
    namespace: str
    spark_conn_id: str
    iceberg_conn_id: str
    output_root: str
    report_root: str

    @classmethod
    def from_environment(cls) -> ProviderSettings:
        """Read every setting, falling back to its documented default."""

        def value(name: str) -> str:
            return os.environ.get(name) or ENVIRONMENT_VARIABLES[name][0]

        output_root = value(OUTPUT_ROOT_ENV) or default_output_root()
        return cls(
            catalog=value(CATALOG_ENV),
            namespace=value(NAMESPACE_ENV),
            spark_conn_id=value(SPARK_CONN_ID_ENV),
            iceberg_conn_id=value(ICEBERG_CONN_ID_ENV),
            output_root=output_root,
            report_root=value(REPORT_ROOT_ENV) or output_root.rstrip("/") + "/reports",
        )


def default_output_root() -> str:
    """This user's private folder ``<temp>/iceberg-provider-output-<uid>`` (mode 0700, checked on every read; a folder
    another user made there, or one others may enter, is refused: ``PermissionError``). Exports and compaction
    reports must not land where another local user can read them or plant links."""
    return str(private_directory(DEFAULT_OUTPUT_FOLDER, fallback=False))
