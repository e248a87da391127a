"""Iceberg tables as Airflow Assets: one URI scheme, ``iceberg://<catalog>/<namespace>/<table>``.

- ``<catalog>`` is the catalog name (the operator's ``catalog`` argument, else its ``iceberg_conn_id``);
- ``<namespace>`` is the dotted namespace (``sales`` or ``lake.sales``), ``<table>`` the table name.

So ``sales.orders`` in catalog ``lake`` is ``iceberg://lake/sales/orders``. The provider registers a normalizer for
the scheme (``get_provider_info``: ``asset-uris``) that lower-cases the catalog and rejects URIs of another shape.

A table also has a partitioned asset, ``iceberg://<catalog>/<namespace>/<table>/partitions`` (Airflow 3.3+: an
ingest emits one event on it per partition it changed, keyed by the partition's path text; see
``partition_events``). It is an asset of its own so that DAGs scheduled on the table's asset keep getting one
event per commit: Airflow queues a DAG that is not partitioned only for events without a partition key.

Airflow keeps one Asset per (name, URI), watchers included: when a DAG file declares the table's Asset without the
watcher another declaration carries, parsing that file removes the watcher. So what an operator declares for its
table by itself can never replace a declaration of the user's:
1. an Asset (or reference) for the table already in the task's ``inlets``/``outlets`` is kept, nothing is added;
2. else, when the operator's DAG is scheduled on the table's Asset (a watched one, say), that very Asset;
3. else, for an outlet, a reference by URI (``Asset.ref(uri=...)``), which names the table's Asset wherever it is
   declared and declares nothing itself: a DAG scheduled on the table still sees an ingest's event, and no file
   that merely runs an operator on the table can drop a watcher declared in another file. An inlet is left out:
   Airflow resolves inlet references when the task starts and fails the task when no DAG declares the Asset.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult

SCHEME = "iceberg"
PARTITIONS_SEGMENT = "partitions"
DEFAULT_WATCH_POLL_SECONDS = 60.0


def table_asset_uri(catalog: str, table: str) -> str:
    """The asset URI of ``table`` ("namespace.table") in ``catalog``."""
    check_table_identifier(table)
    namespace, _, name = table.rpartition(".")
    if not catalog:
        raise ValueError(f"table {table!r} needs a catalog name for its asset URI")
    return f"{SCHEME}://{catalog.lower()}/{namespace}/{name}"


def partitions_asset_uri(catalog: str, table: str) -> str:
    """The URI of the table's partitioned asset (module doc): the table's URI and ``/partitions``."""
    return f"{table_asset_uri(catalog, table)}/{PARTITIONS_SEGMENT}"


def check_table_identifier(table: str, owner: str = "") -> None:
    """Refuse a table identifier without a namespace or with an empty part (``t``, ``db..t``); templates pass.

    An ``XComArg`` (a task's output) reads as a template, so it passes too: its value is known at run time.
    """
    table = str(table)
    if "{{" in table:
        return
    parts = table.split(".")
    if len(parts) < 2 or any(not part.strip() for part in parts):
        prefix = f"{owner}: " if owner else ""
        raise ValueError(f"{prefix}table {table!r} needs a namespace and no empty part: 'namespace.table'")


def iceberg_table_asset(catalog: str, table: str, **kwargs: Any) -> Any:
    """An Airflow ``Asset`` for ``table`` in ``catalog`` (extra keyword arguments go to ``Asset``)."""
    from airflow.sdk import Asset

    return Asset(uri=table_asset_uri(catalog, table), **kwargs)


def iceberg_partitions_asset(catalog: str, table: str, **kwargs: Any) -> Any:
    """The table's partitioned ``Asset`` (module doc): schedule a DAG on it with ``PartitionedAssetTimetable`` to
    run once per partition an ingest changed, with ``dag_run.partition_key`` the partition's path text."""
    from airflow.sdk import Asset

    return Asset(uri=partitions_asset_uri(catalog, table), **kwargs)


def watched_table_asset(
    catalog: str,
    table: str,
    *,
    iceberg_conn_id: str | None = None,
    poll_interval: float = DEFAULT_WATCH_POLL_SECONDS,
    branch: str = "main",
    **kwargs: Any,
) -> Any:
    """The table's Asset with a watcher that sends an event for every new snapshot of ``branch``, whoever commits.

    The watcher (``IcebergCatalogSnapshotTrigger``) polls the table's metadata in the triggerer every
    ``poll_interval`` seconds while a DAG that is not paused is scheduled on the Asset. Declare it in one place (a
    module the DAG files share) if several files name it: Airflow keeps one declaration per asset.
    """
    from airflow.sdk import AssetWatcher

    from airflow_iceberg_provider.triggers.snapshot import IcebergCatalogSnapshotTrigger

    trigger = IcebergCatalogSnapshotTrigger(
        table=table,
        catalog_name=catalog,
        iceberg_conn_id=iceberg_conn_id,
        poll_interval=poll_interval,
        branch=branch,
    )
    watcher = AssetWatcher(name=f"{catalog.lower()}.{table}.{branch}.snapshots", trigger=trigger)
    return iceberg_table_asset(catalog, table, watchers=[watcher], **kwargs)


def declared_uri(obj: Any) -> str | None:
    """The URI an inlet or outlet names (an Asset or a reference by URI); ``None`` for anything else."""
    from airflow.sdk import Asset
    from airflow.sdk.definitions.asset import AssetUriRef

    if isinstance(obj, (Asset, AssetUriRef)):
        return obj.uri
    return None


def schedule_assets(condition: Any) -> list[Any]:
    """The Assets a DAG's schedule names (``schedule=[...]``, ``a | b``, ``a & b``), in order."""
    from airflow.sdk import Asset

    if isinstance(condition, Asset):
        return [condition]
    return [asset for part in getattr(condition, "objects", ()) for asset in schedule_assets(part)]


def operator_table_asset(
    catalog: str, table: str, declared: list[Any], scheduled_on: list[Any], *, outlet: bool
) -> Any | None:
    """What an operator declares for its table (rules 1-3 above); ``None`` for nothing.

    ``declared`` holds the task's own inlets and outlets, ``scheduled_on`` the Assets its DAG is scheduled on.
    """
    return operator_asset(table_asset_uri(catalog, table), declared, scheduled_on, outlet=outlet)


def operator_asset(uri: str, declared: list[Any], scheduled_on: list[Any], *, outlet: bool) -> Any | None:
    """What an operator declares for the asset at ``uri`` (rules 1-3 above); ``None`` for nothing."""
    from airflow.sdk import Asset

    if any(declared_uri(obj) == uri for obj in declared):
        return None
    scheduled = next((asset for asset in scheduled_on if asset.uri == uri), None)
    if scheduled is not None:
        return scheduled
    return Asset.ref(uri=uri) if outlet else None


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's normalizer for ``iceberg://`` asset URIs: lower-case catalog, namespace and table (and
    ``partitions`` for a table's partitioned asset)."""
    if not uri.netloc:
        raise ValueError(
            f"Iceberg asset URI {uri.geturl()!r} has no catalog: use iceberg://<catalog>/<namespace>/<table>"
        )
    segments = [segment for segment in uri.path.split("/") if segment]
    if len(segments) != 2 and not (len(segments) == 3 and segments[2] == PARTITIONS_SEGMENT):
        raise ValueError(
            f"Iceberg asset URI {uri.geturl()!r} must have a namespace and a table: "
            f"iceberg://<catalog>/<namespace>/<table>, or its partitions: .../<table>/{PARTITIONS_SEGMENT}"
        )
    return uri._replace(netloc=uri.netloc.lower(), path="/" + "/".join(segments))
