"""Iceberg tables as Assets: one URI shape, normalized by the handler the provider registers for the scheme."""

from __future__ import annotations

import pytest
from airflow.sdk import Asset

from airflow_iceberg_provider.assets import iceberg_table_asset, table_asset_uri
from airflow_iceberg_provider.get_provider_info import get_provider_info


def test_uri_of_a_table() -> None:
    assert table_asset_uri("Lake", "sales.orders") == "iceberg://lake/sales/orders"
    assert table_asset_uri("lake", "lake.sales.orders") == "iceberg://lake/lake.sales/orders"


def test_a_table_needs_a_namespace() -> None:
    with pytest.raises(ValueError, match="'orders' needs a namespace"):
        table_asset_uri("lake", "orders")


def test_airflow_normalizes_through_the_registered_handler() -> None:
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    assert "iceberg" in ProvidersManagerTaskRuntime().asset_uri_handlers
    assert Asset("iceberg://LAKE/sales/orders/").uri == "iceberg://lake/sales/orders"
    assert iceberg_table_asset("lake", "sales.orders") == Asset("iceberg://lake/sales/orders")
    with pytest.raises(ValueError, match="must have a namespace and a table"):
        Asset("iceberg://lake/orders")


def test_the_provider_defines_no_connection_type_of_its_own() -> None:
    """The ``iceberg`` connection type belongs to the official Iceberg provider; defining one would clash."""
    assert "connection-types" not in get_provider_info()
