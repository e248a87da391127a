"""The API server app the plugin tests share: built once per module, with a JWT signing key set first.

Airflow's API server refuses to start without ``[api_auth] jwt_secret``; a test that opens a client without logging in
first (nothing generated the key yet) would otherwise fail on the key, not on what it checks.
"""

from __future__ import annotations

import secrets

import pytest


@pytest.fixture(scope="module")
def api_app() -> object:
    """Airflow's API server app as ``airflow api-server`` builds it (plugins mounted from the installed package)."""
    from airflow.api_fastapi.app import create_app
    from airflow.configuration import conf

    if not conf.get("api_auth", "jwt_secret", fallback=""):
        conf.set("api_auth", "jwt_secret", secrets.token_urlsafe(16))
    return create_app()
