"""The FastAPI app of the provider's plugin: every router of ``plugins/`` under one URL prefix.

The API server mounts the app at ``URL_PREFIX``, so a route ``/reports/...`` answers at ``/iceberg/reports/...``
(below Airflow's ``[api] base_url`` path when Airflow is served under one). Routers authenticate with the Airflow
session's token (the ``_token`` cookie the UI sets, or an ``Authorization: Bearer`` header) and authorize with the
auth manager, like Airflow's own API.
"""

from __future__ import annotations

import importlib

from fastapi import FastAPI, Request, Response
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import RedirectResponse
from starlette.exceptions import HTTPException

from airflow_iceberg_provider.plugins.urls import URL_PREFIX

__all__ = ["ROUTER_MODULES", "URL_PREFIX", "create_app"]

# Modules of this package that each define ``router`` (a fastapi.APIRouter); the order is the order of inclusion.
ROUTER_MODULES: tuple[str, ...] = (
    "airflow_iceberg_provider.plugins.reports",
    "airflow_iceberg_provider.plugins.health",
)


def create_app() -> FastAPI:
    """The plugin's app with every router of ``ROUTER_MODULES`` included."""
    app = FastAPI(
        title="Apache Iceberg provider",
        description="Pages and APIs of airflow-iceberg-provider, served by the Airflow API server.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    for module in ROUTER_MODULES:
        app.include_router(importlib.import_module(module).router)
    app.add_exception_handler(HTTPException, _login_first)
    return app


async def _login_first(request: Request, error: Exception) -> Response:
    """A page opened in a browser without an Airflow session goes to the login page, and back here after it."""
    assert isinstance(error, HTTPException)
    wants_page = request.method == "GET" and "text/html" in request.headers.get("accept", "")
    if error.status_code == 401 and wants_page:
        from airflow.api_fastapi.app import get_auth_manager

        return RedirectResponse(get_auth_manager().get_url_login(next_url=str(request.url)), status_code=303)
    return await http_exception_handler(request, error)
