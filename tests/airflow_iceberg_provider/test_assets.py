"""Iceberg tables as Assets: one URI shape, normalized by the handler the provider registers for the scheme."""

from __future__ import annotations

import pytest
from airflow.sdk import Asset

from airflow_iceberg_provider.assets import iceberg_table_asset, table_asset_uri
from airflow_iceberg_provider.get_provider_info import get_provider_info


def test_uri_of_a_table() -> None:
    assert table_asset_uri("Lake", "sales.orders") == "iceberg://lake/sales/orders"
    assert table_asset_uri("lake", "lake.sales.orders") == "iceberg://lake/lake.sales/orders"


def test_a_tables_partitioned_asset_is_its_uri_and_partitions() -> None:
    from airflow_iceberg_provider.assets import iceberg_partitions_asset

    assert iceberg_partitions_asset("Lake", "sales.orders").uri == "iceberg://lake/sales/orders/partitions"
    assert Asset("iceberg://LAKE/sales/orders/partitions/").uri == "iceberg://lake/sales/orders/partitions"
    with pytest.raises(ValueError, match="or its partitions"):
        Asset("iceberg://lake/sales/orders/files")


def test_a_table_needs_a_namespace() -> None:
    with pytest.raises(ValueError, match="'orders' needs a namespace"):
        table_asset_uri("lake", "orders")


def test_airflow_normalizes_through_the_registered_handler() -> None:
    try:  # Airflow 3.2+: the task runtime's own registry
        from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime as Registry
    except ImportError:  # Airflow 3.1: the one providers manager
        from airflow.providers_manager import ProvidersManager as Registry  # type: ignore[assignment, no-redef]

    assert "iceberg" in Registry().asset_uri_handlers
    assert Asset("iceberg://LAKE/sales/orders/").uri == "iceberg://lake/sales/orders"
    assert iceberg_table_asset("lake", "sales.orders") == Asset("iceberg://lake/sales/orders")
    with pytest.raises(ValueError, match="must have a namespace and a table"):
        Asset("iceberg://lake/orders")


def test_the_provider_defines_no_connection_type_of_its_own() -> None:
    """The ``iceberg`` connection type belongs to the official Iceberg provider; defining one would clash."""
    assert "connection-types" not in get_provider_info()


def test_an_operator_names_the_table_by_reference_unless_its_dag_is_scheduled_on_it() -> None:
    from airflow.sdk.definitions.asset import AssetUriRef

    from airflow_iceberg_provider.assets import operator_table_asset, schedule_assets, watched_table_asset

    reference = operator_table_asset("lake", "sales.orders", [], [], outlet=True)
    assert reference == AssetUriRef("iceberg://lake/sales/orders")
    # An inlet reference would fail the task at start when no DAG declares the Asset: none is declared.
    assert operator_table_asset("lake", "sales.orders", [], [], outlet=False) is None
    watched = watched_table_asset("lake", "sales.orders", poll_interval=5)
    other = Asset("s3://bucket/other")
    scheduled_on = schedule_assets(other | (Asset("s3://bucket/third") & watched))
    assert scheduled_on == [other, Asset("s3://bucket/third"), watched]
    assert operator_table_asset("Lake", "sales.orders", [], scheduled_on, outlet=False) is watched
    (watcher,) = watched.watchers
    assert watcher.trigger.serialize()[1]["catalog_name"] == "lake"
    assert watcher.trigger.serialize()[1]["poll_interval"] == 5


def test_an_operator_adds_nothing_when_the_task_already_names_the_table() -> None:
    from airflow_iceberg_provider.assets import operator_table_asset

    mine = iceberg_table_asset("lake", "sales.orders")
    assert operator_table_asset("lake", "sales.orders", [mine], [], outlet=True) is None
    reference = Asset.ref(uri="iceberg://lake/sales/orders")
    assert operator_table_asset("lake", "sales.orders", [reference], [], outlet=True) is None
    assert operator_table_asset("lake", "sales.orders", [Asset("s3://bucket/other")], [], outlet=True) is not None


def test_the_operator_keeps_the_users_asset_and_reuses_its_dags_watched_one() -> None:
    from airflow.sdk import DAG

    from airflow_iceberg_provider.assets import watched_table_asset
    from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator
    from airflow_iceberg_provider.operators.read import IcebergReadOperator

    watched = watched_table_asset("lake", "sales.orders")
    with DAG("assets_watched", schedule=[watched], start_date=None):
        read = IcebergReadOperator(task_id="read", catalog="lake", table="sales.orders", output_path="/o")
        ingest = IcebergIngestOperator(
            task_id="ingest", catalog="lake", table="sales.orders", source="/s", outlets=[watched]
        )
    assert read.inlets == [watched]
    # The user's Asset kept as is; beside it (Airflow 3.3+) a reference to the table's partitioned asset.
    from airflow_iceberg_provider.partition_events import task_partition_keys_supported

    assert ingest.outlets[0] is watched
    partitioned = ["iceberg://lake/sales/orders/partitions"] if task_partition_keys_supported() else []
    assert [outlet.uri for outlet in ingest.outlets[1:]] == partitioned
