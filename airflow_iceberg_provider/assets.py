"""Iceberg tables as Airflow Assets: one URI scheme, ``iceberg://<catalog>/<namespace>/<table>``.

- ``<catalog>`` is the catalog name (the operator's ``catalog`` argument, else its ``iceberg_conn_id``);
- ``<namespace>`` is the dotted namespace (``sales`` or ``lake.sales``), ``<table>`` the table name.

So ``sales.orders`` in catalog ``lake`` is ``iceberg://lake/sales/orders``. The provider registers a normalizer for
the scheme (``get_provider_info``: ``asset-uris``) that lower-cases the catalog and rejects URIs of another shape.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult

SCHEME = "iceberg"


def table_asset_uri(catalog: str, table: str) -> str:
    """The asset URI of ``table`` ("namespace.table") in ``catalog``."""
    namespace, _, name = table.rpartition(".")
    if not namespace or not name:
        raise ValueError(f"table {table!r} needs a namespace: 'namespace.table'")
    if not catalog:
        raise ValueError(f"table {table!r} needs a catalog name for its asset URI")
    return f"{SCHEME}://{catalog.lower()}/{namespace}/{name}"


def iceberg_table_asset(catalog: str, table: str, **kwargs: Any) -> Any:
    """An Airflow ``Asset`` for ``table`` in ``catalog`` (extra keyword arguments go to ``Asset``)."""
    from airflow.sdk import Asset

    return Asset(uri=table_asset_uri(catalog, table), **kwargs)


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's normalizer for ``iceberg://`` asset URIs: lower-case catalog, exactly namespace and table."""
    if not uri.netloc:
        raise ValueError(
            f"Iceberg asset URI {uri.geturl()!r} has no catalog: use iceberg://<catalog>/<namespace>/<table>"
        )
    segments = [segment for segment in uri.path.split("/") if segment]
    if len(segments) != 2:
        raise ValueError(
            f"Iceberg asset URI {uri.geturl()!r} must have a namespace and a table: "
            "iceberg://<catalog>/<namespace>/<table>"
        )
    return uri._replace(netloc=uri.netloc.lower(), path="/" + "/".join(segments))
