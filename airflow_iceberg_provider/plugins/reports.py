"""Compaction reports over HTTP: ``GET /iceberg/reports/<dag_id>/<run>/<task>.html`` from the report root.

1. The path is checked before anything is opened (``report_store.report_parts``): safe names only, an ``.html``
   file, three parts or more; anything else is 404.
2. The user must be logged in to Airflow and allowed to read the task instances of ``<dag_id>`` (the auth manager
   decides, as for the task's own page); a browser without a session is sent to the login page and back.
3. The file is read from ``ICEBERG_PROVIDER_REPORT_ROOT`` through that location's FileIO, configured with the
   storage properties of the provider's catalog (``ICEBERG_PROVIDER_ICEBERG_CONN_ID``'s connection when it exists,
   else pyiceberg's configuration of ``ICEBERG_PROVIDER_CATALOG``); no property or credential is ever sent back,
   and a storage error answers 502 with the report's path only.
4. The page is served with a content security policy that runs no script and loads nothing (the report is one
   self-contained page of inline styles and SVG), in a sandbox, so a page under the root cannot act on the user's
   Airflow session.
"""

from __future__ import annotations

import logging

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag
from fastapi import APIRouter, Depends, HTTPException, Response

from airflow_iceberg_provider.credentials import mask_text, secret_values
from airflow_iceberg_provider.report_store import ReportNotFoundError, is_local, read_report, report_parts
from airflow_iceberg_provider.settings import ProviderSettings

log = logging.getLogger(__name__)

router = APIRouter(prefix="/reports", tags=["Compaction reports"])

REPORT_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, no-cache",
    "Referrer-Policy": "no-referrer",
}


def report_storage_properties(settings: ProviderSettings) -> dict[str, str]:
    """Storage properties for the report root: the provider's connection when it exists, else pyiceberg's config."""
    from airflow.exceptions import AirflowNotFoundException

    from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook

    try:
        return IcebergCatalogHook(settings.iceberg_conn_id, settings.catalog).storage_properties()
    except AirflowNotFoundException:
        return IcebergCatalogHook(None, settings.catalog).storage_properties()


@router.get(
    "/{dag_id}/{report_path:path}",
    response_class=Response,
    dependencies=[Depends(requires_access_dag(method="GET", access_entity=DagAccessEntity.TASK_INSTANCE))],
)
def compaction_report(dag_id: str, report_path: str) -> Response:
    """The HTML report of a compaction task of ``dag_id``."""
    relative = f"{dag_id}/{report_path}"
    try:
        report_parts(relative)
    except ValueError:
        raise HTTPException(404, "no such report") from None
    settings = ProviderSettings.from_environment()
    properties: dict[str, str] = {}
    try:
        properties = {} if is_local(settings.report_root) else report_storage_properties(settings)
        page = read_report(settings.report_root, relative, properties)
    except ReportNotFoundError:
        raise HTTPException(404, f"no report at {relative} under the report root") from None
    except Exception as error:
        # The server's log says why (secrets masked); the answer names the report only.
        reason = mask_text(f"{type(error).__name__}: {error}", secret_values(properties))
        log.warning("reading compaction report %s under %s failed: %s", relative, settings.report_root, reason)
        raise HTTPException(502, f"the report store could not be read for {relative}") from None
    return Response(content=page, media_type="text/html; charset=utf-8", headers=REPORT_HEADERS)
