"""Table health in the Airflow UI: ``GET /iceberg/health/``, a page of charts for every Iceberg table the DAGs touch.

1. The tables are the active Airflow assets of the ``iceberg://`` scheme (a table's partitioned asset counts as the
   table), with the DAGs that are scheduled on them, produce them or read them (``GET .../api/tables``).
2. Each table's health (``table_health``: file size histogram, small and delete files per partition, deleted-row
   ratio, snapshots and rows over time, the last compactions, the compaction rules each partition reaches) is
   computed from its metadata and manifests and cached per metadata file (``GET .../api/tables/<catalog>/<ns>/<t>``).
3. The page (``health.html`` and ``health.js``, shipped with the package) asks for the list, then for the tables'
   health in groups of eight (``GET .../api/health``, up to three groups at a time), and draws each table as SVG
   charts as its group arrives.
4. The catalog of a table's URI is the connection of that id when there is one, else pyiceberg's configuration of
   the name where the API server has one, else the provider's connection (``ICEBERG_PROVIDER_ICEBERG_CONN_ID``)
   under that catalog name; the hook is kept for the cache's TTL, so one page load builds one catalog. No catalog
   or storage property is ever sent back; a failure answers with its kind and the table's name, the reason in the
   server's log with secrets masked.
5. The user must be logged in to Airflow and allowed to read assets (the auth manager decides, as for the asset
   pages); the page is served with a content security policy that runs only its own script.
"""

from __future__ import annotations

import logging
import threading
import time
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


def table_of_uri(uri: str) -> tuple[str, str, str] | None:
    """(catalog, namespace, table) of an Iceberg asset URI (a table's or its partitioned asset's)."""
    prefix = f"{SCHEME}://"
    if not uri.startswith(prefix):
        return None
    catalog, _, path = uri[len(prefix) :].partition("/")
    parts = [part for part in path.split("/") if part]
    if len(parts) == 3 and parts[2] == PARTITIONS_SEGMENT:
        parts = parts[:2]
    if not catalog or len(parts) != 2:
        return None
    return catalog, parts[0], parts[1]


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
    found: dict[tuple[str, str, str], set[str]] = {}
    for asset in session.scalars(query):
        table = table_of_uri(asset.uri)
        if table is None:
            continue
        dags = found.setdefault(table, set())
        dags |= {ref.dag_id for ref in asset.scheduled_dags}
        dags |= {ref.dag_id for ref in (*asset.producing_tasks, *asset.consuming_tasks)}
    listed = [
        {"catalog": catalog, "table": f"{namespace}.{name}", "namespace": namespace, "name": name, "dags": sorted(dags)}
        for (catalog, namespace, name), dags in sorted(found.items())
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


class _HookCache:
    """The catalog hook per catalog name, kept for the health cache's TTL (module doc, step 4): the tables of one
    catalog share one pyiceberg catalog (one REST configuration request, one SQL engine) per page load, and a
    changed connection is picked up after the TTL."""

    def __init__(self, ttl_seconds: float) -> None:
        self.ttl_seconds = ttl_seconds
        self._hooks: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def hook(self, catalog: str) -> Any:
        now = time.monotonic()
        with self._lock:
            held = self._hooks.get(catalog)
        if held is not None and now - held[0] < self.ttl_seconds:
            return held[1]
        hook = catalog_hook(catalog)
        with self._lock:
            self._hooks[catalog] = (now, hook)
        return hook


HOOKS = _HookCache(CACHE.ttl_seconds)


class HealthUnavailableError(Exception):
    """A table's health could not be answered: its HTTP status and the reason shown (no property in it)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def health_of(catalog: str, namespace: str, table: str) -> dict[str, Any]:
    """One table's health (module doc, step 2); ``HealthUnavailableError`` 404 for a table the catalog does not
    have, 502 when reading it fails (the reason logged with secrets masked)."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    name = f"{namespace}.{table}"
    hooks: list[Any] = []

    def load_table() -> Any:  # only when the cache asks the catalog again: a cached answer resolves no connection
        hooks.append(HOOKS.hook(catalog))
        return hooks[0].load_table(name)

    try:
        health = CACHE.health(catalog, name, load_table)
    except (NoSuchTableError, NoSuchNamespaceError):
        raise HealthUnavailableError(404, f"catalog {catalog} has no table {name}") from None
    except Exception as error:
        secrets = secret_values(_properties(hooks[0] if hooks else None))
        log.warning("table health of %s in %s failed: %s", name, catalog, mask_text(f"{error!r}", secrets))
        raise HealthUnavailableError(502, f"the health of {name} in catalog {catalog} could not be read") from None
    return {"catalog": catalog, **health}


@router.get("/api/tables/{catalog}/{namespace}/{table}", dependencies=ACCESS)
def table_health(catalog: str, namespace: str, table: str) -> JSONResponse:
    """One table's health (``health_of``)."""
    try:
        return JSONResponse(health_of(catalog, namespace, table))
    except HealthUnavailableError as unavailable:
        raise HTTPException(unavailable.status, unavailable.detail) from None


MAX_BATCH = 25


@router.get("/api/health", dependencies=ACCESS)
def tables_health(tables: str) -> JSONResponse:
    """Several tables' health in one answer (the page asks in groups, so a warm page of 100 tables is a few requests
    rather than 100): ``tables`` is a JSON list of ``[catalog, namespace, table]``, at most ``MAX_BATCH``; each
    answer is the table's health or ``{"status": ..., "detail": ...}`` as ``table_health`` would answer."""
    wanted = _batch(tables)
    answers: list[dict[str, Any]] = []
    for catalog, namespace, table in wanted:
        try:
            answers.append({"status": 200, **health_of(catalog, namespace, table)})
        except HealthUnavailableError as unavailable:
            answers.append(
                {
                    "status": unavailable.status,
                    "detail": unavailable.detail,
                    "catalog": catalog,
                    "table": f"{namespace}.{table}",  # as a health answer names it
                }
            )
    return JSONResponse({"tables": answers})


def _batch(text: str) -> list[tuple[str, str, str]]:
    """``tables_health``'s argument, checked: 400 naming what was expected."""
    import json

    expected = f"'tables' must be a JSON list of at most {MAX_BATCH} [catalog, namespace, table] lists of strings"
    try:
        parsed = json.loads(text)
    except ValueError:
        raise HTTPException(400, expected) from None
    valid = isinstance(parsed, list) and 0 < len(parsed) <= MAX_BATCH
    valid = valid and all(
        isinstance(item, list) and len(item) == 3 and all(isinstance(part, str) and part for part in item)
        for item in parsed
    )
    if not valid:
        raise HTTPException(400, expected)
    return [(item[0], item[1], item[2]) for item in parsed]


def _properties(hook: Any) -> dict[str, str]:
    try:
        return dict(hook.storage_properties()) if hook is not None else {}
    except Exception:
        return {}
