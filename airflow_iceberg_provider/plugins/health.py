"""Table health in the Airflow UI: ``GET /iceberg/health/``, a page of charts for every Iceberg table the DAGs touch.

1. The tables are the active Airflow assets of the ``iceberg://`` scheme (a table's partitioned asset counts as the
   table), with the DAGs that are scheduled on them, produce them or read them (``GET .../api/tables``).
2. Each table's health (``table_health``: file size histogram, small and delete files per partition, deleted-row
   ratio, snapshots and rows over time, the last compactions, the compaction rules each partition reaches) is
   computed from its metadata and manifests and cached per metadata file (``GET .../api/tables/<catalog>/<ns>/<t>``).
3. The page (``health.html`` and ``health.js``, shipped with the package) asks for the list, then for the tables
   six at a time, and draws each as SVG charts as it arrives.
4. The catalog of a table's URI is the connection of that id when there is one, else pyiceberg's configuration of
   the name where the API server has one, else the provider's connection (``ICEBERG_PROVIDER_ICEBERG_CONN_ID``)
   under that catalog name. No
   catalog or storage property is ever sent back; a failure answers with its kind and the table's name, the reason
   in the server's log with secrets masked.
5. The user must be logged in to Airflow and allowed to read assets (the auth manager decides, as for the asset
   pages); the page is served with a content security policy that runs only its own script.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from importlib import resources
from typing import Any

from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import requires_access_asset
from fastapi import APIRouter, Depends, HTTPException, Response
from fastapi.responses import JSONResponse

from airflow_iceberg_provider.assets import PARTITIONS_SEGMENT, SCHEME
from airflow_iceberg_provider.credentials import mask_text, secret_values
from airflow_iceberg_provider.table_health import HealthCache

log = logging.getLogger(__name__)

router = APIRouter(prefix="/health", tags=["Table health"])

PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; frame-ancestors 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, no-cache",
    "Referrer-Policy": "no-referrer",
}
ACCESS = [Depends(requires_access_asset(method="GET"))]
CACHE = HealthCache()


@lru_cache(maxsize=4)
def _static(name: str) -> str:
    return resources.files("airflow_iceberg_provider.plugins").joinpath("static", name).read_text()


@router.get("/", response_class=Response, dependencies=ACCESS)
def health_page() -> Response:
    """The page: its script draws the tables (module doc, step 3)."""
    return Response(_static("health.html"), media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


@router.get("/health.js", response_class=Response, dependencies=ACCESS)
def health_script() -> Response:
    """The page's script."""
    return Response(_static("health.js"), media_type="text/javascript; charset=utf-8", headers=PAGE_HEADERS)


def table_of_uri(uri: str) -> tuple[str, str] | None:
    """(catalog, ``namespace.table``) of an Iceberg asset URI (a table's or its partitioned asset's)."""
    prefix = f"{SCHEME}://"
    if not uri.startswith(prefix):
        return None
    catalog, _, path = uri[len(prefix) :].partition("/")
    parts = [part for part in path.split("/") if part]
    if len(parts) == 3 and parts[2] == PARTITIONS_SEGMENT:
        parts = parts[:2]
    if not catalog or len(parts) != 2:
        return None
    return catalog, f"{parts[0]}.{parts[1]}"


@router.get("/api/tables", dependencies=ACCESS)
def tables(session: SessionDep) -> JSONResponse:
    """The Iceberg tables the DAGs touch, with those DAGs (module doc, step 1)."""
    from airflow.models.asset import AssetModel
    from sqlalchemy import select
    from sqlalchemy.orm import selectinload

    query = (
        select(AssetModel)
        .where(AssetModel.uri.like(f"{SCHEME}://%"), AssetModel.active.has())
        .options(
            selectinload(AssetModel.scheduled_dags),
            selectinload(AssetModel.producing_tasks),
            selectinload(AssetModel.consuming_tasks),
        )
    )
    found: dict[tuple[str, str], set[str]] = {}
    for asset in session.scalars(query):
        table = table_of_uri(asset.uri)
        if table is None:
            continue
        dags = found.setdefault(table, set())
        dags |= {ref.dag_id for ref in asset.scheduled_dags}
        dags |= {ref.dag_id for ref in (*asset.producing_tasks, *asset.consuming_tasks)}
    listed = [
        {"catalog": catalog, "table": name, "dags": sorted(dags)} for (catalog, name), dags in sorted(found.items())
    ]
    return JSONResponse({"tables": listed})


def catalog_hook(catalog: str) -> Any:
    """The catalog hook for a URI's catalog name (module doc, step 4)."""
    from airflow.exceptions import AirflowNotFoundException
    from pyiceberg.utils.config import Config

    from airflow_iceberg_provider.airflow_compat import AirflowNotFoundException as TaskNotFound
    from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook
    from airflow_iceberg_provider.settings import ProviderSettings

    def connection(conn_id: str, name: str | None) -> Any | None:
        hook = IcebergCatalogHook(iceberg_conn_id=conn_id, catalog_name=name)
        try:
            hook.catalog_properties()
        except (AirflowNotFoundException, TaskNotFound):
            return None
        return hook

    named = connection(catalog, None)
    if named is not None:
        return named
    if Config().get_catalog_config(catalog) is not None:
        return IcebergCatalogHook(iceberg_conn_id=None, catalog_name=catalog)
    provider = connection(ProviderSettings.from_environment().iceberg_conn_id, catalog)
    return provider or IcebergCatalogHook(iceberg_conn_id=None, catalog_name=catalog)


@router.get("/api/tables/{catalog}/{namespace}/{table}", dependencies=ACCESS)
def table_health(catalog: str, namespace: str, table: str) -> JSONResponse:
    """One table's health (module doc, step 2); 404 for a table the catalog does not have, 502 when it fails."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    name = f"{namespace}.{table}"
    hook = None
    try:
        hook = catalog_hook(catalog)
        health = CACHE.health(catalog, name, lambda: hook.load_table(name))
    except (NoSuchTableError, NoSuchNamespaceError):
        raise HTTPException(404, f"catalog {catalog} has no table {name}") from None
    except Exception as error:
        secrets = secret_values(_properties(hook))
        log.warning("table health of %s in %s failed: %s", name, catalog, mask_text(f"{error!r}", secrets))
        raise HTTPException(502, f"the health of {name} in catalog {catalog} could not be read") from None
    return JSONResponse({"catalog": catalog, **health})


def _properties(hook: Any) -> dict[str, str]:
    try:
        return dict(hook.storage_properties()) if hook is not None else {}
    except Exception:
        return {}
