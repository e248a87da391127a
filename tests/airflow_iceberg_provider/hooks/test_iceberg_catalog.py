"""IcebergCatalogHook: the official connection rules, the catalog under its name, and a Spark job environment."""

from __future__ import annotations

import json
import os

import pytest
from airflow.providers.apache.iceberg.hooks.iceberg import IcebergHook

from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook

SECRET = "extra-password-7f3a"


def _testing_sql_extra(**more: str) -> dict[str, str]:
    """The ``testing`` catalog's own SQLite properties, as an ``iceberg`` connection extra would carry them."""
    return {
        "type": "sql",
        "uri": os.environ["PYICEBERG_CATALOG__TESTING__URI"],
        "warehouse": os.environ["PYICEBERG_CATALOG__TESTING__WAREHOUSE"],
        **more,
    }


@pytest.fixture
def lake_connection(monkeypatch: pytest.MonkeyPatch) -> str:
    extra = _testing_sql_extra(catalog_name="testing", **{"s3.secret-access-key": SECRET})
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps({"conn_type": "iceberg", "extra": extra}))
    return "lake"


def test_catalog_name_comes_from_the_extra_then_the_argument(lake_connection: str) -> None:
    assert IcebergCatalogHook(lake_connection).catalog_name == "testing"
    assert IcebergCatalogHook(lake_connection, catalog_name="other").catalog_name == "other"


def test_catalog_name_defaults_to_the_connection_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_PLAIN", json.dumps({"conn_type": "iceberg", "extra": _testing_sql_extra()}))
    assert IcebergCatalogHook("plain").catalog_name == "plain"


def test_properties_match_the_official_hooks_catalog(lake_connection: str) -> None:
    official = IcebergHook(lake_connection).catalog.properties
    ours = IcebergCatalogHook(lake_connection).catalog_properties()
    assert ours == {key: value for key, value in official.items() if key != "catalog_name"}


def test_rest_connection_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    connection = {
        "conn_type": "iceberg",
        "host": "https://catalog.example.com/ws/",
        "login": "client",
        "password": "client-secret",
        "extra": {"warehouse": "lake"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_REST_LAKE", json.dumps(connection))
    assert IcebergCatalogHook("rest_lake", catalog_name="rest").catalog_properties() == {
        "warehouse": "lake",
        "uri": "https://catalog.example.com/ws",
        "type": "rest",
        "credential": "client:client-secret",
    }


def test_the_catalog_is_the_named_sql_catalog_with_its_tables(lake_connection: str, events_table: str) -> None:
    hook = IcebergCatalogHook(lake_connection)
    assert hook.catalog.name == "testing"
    assert hook.table_exists(events_table)
    assert len(hook.load_table(events_table).snapshots()) == 2


def test_without_a_connection_the_catalog_is_pyicebergs_configuration(events_table: str) -> None:
    hook = IcebergCatalogHook(iceberg_conn_id=None, catalog_name="testing")
    assert hook.catalog_properties() == {}
    assert hook.spark_job_env() == {}
    assert hook.table_exists(events_table)


def test_spark_job_env_carries_every_property_and_masks_the_secret(lake_connection: str) -> None:
    from airflow.sdk._shared.secrets_masker import redact

    env = IcebergCatalogHook(lake_connection).spark_job_env()
    assert env["PYICEBERG_CATALOG__TESTING__TYPE"] == "sql"
    assert env["PYICEBERG_CATALOG__TESTING__S3__SECRET_ACCESS_KEY"] == SECRET
    assert SECRET not in redact(f"spark-submit printed {SECRET}")


def test_a_hook_needs_a_connection_or_a_catalog_name() -> None:
    with pytest.raises(ValueError, match="needs an iceberg_conn_id, a catalog_name"):
        IcebergCatalogHook(iceberg_conn_id=None)
