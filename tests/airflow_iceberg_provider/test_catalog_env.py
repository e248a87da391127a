"""Catalog properties survive the trip through pyiceberg's own environment parsing, or are refused by name."""

from __future__ import annotations

import os

import pytest
from pyiceberg.utils.config import Config

from airflow_iceberg_provider.catalog_env import CatalogEnvironmentError, catalog_env_name, catalog_environment

PROPERTIES = {
    "type": "sql",
    "uri": "postgresql+psycopg2://lake:s3cr%40t@db:5432/catalog",
    "warehouse": "s3://warehouse/",
    "s3.endpoint": "http://127.0.0.1:9000",
    "s3.secret-access-key": "minio-secret",
    "s3.path-style-access": True,
}


def test_names_follow_pyiceberg_rules() -> None:
    assert catalog_env_name("lake", "s3.secret-access-key") == "PYICEBERG_CATALOG__LAKE__S3__SECRET_ACCESS_KEY"
    assert catalog_env_name("my-lake", "uri") == "PYICEBERG_CATALOG__MY_LAKE__URI"


@pytest.mark.parametrize("catalog_name", ["lake", "my-lake", "Lake2"])
def test_pyiceberg_reads_back_every_property(monkeypatch: pytest.MonkeyPatch, catalog_name: str) -> None:
    for name in [n for n in os.environ if n.startswith("PYICEBERG_CATALOG__")]:
        monkeypatch.delenv(name)
    for name, value in catalog_environment(catalog_name, PROPERTIES).items():
        monkeypatch.setenv(name, value)
    read_back = Config().get_catalog_config(catalog_name)
    assert read_back == {key: "true" if value is True else value for key, value in PROPERTIES.items()}


@pytest.mark.parametrize(
    ("catalog_name", "key", "named"),
    [
        ("my_lake", "uri", "my_lake"),
        ("lake", "init_catalog_tables", "init_catalog_tables"),
        ("lake", "header.X-Tenant", "header.X-Tenant"),
        ("lake", "s3..endpoint", "s3..endpoint"),
    ],
)
def test_names_that_would_change_are_refused(catalog_name: str, key: str, named: str) -> None:
    with pytest.raises(CatalogEnvironmentError, match=named.replace(".", r"\.")):
        catalog_env_name(catalog_name, key)


def test_nested_values_are_refused() -> None:
    with pytest.raises(CatalogEnvironmentError, match="'s3' of catalog 'lake' is a dict"):
        catalog_environment("lake", {"s3": {"endpoint": "x"}})
