"""Compaction reports over HTTP, through Airflow's own API server app with the provider's plugin mounted.

Local and S3 report roots (S3 on SeaweedFS, its keys from an ``iceberg`` connection); login and authorization as
Airflow's UI has them; nothing outside the report root, no credential in any answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_iceberg_provider.plugins.urls import URL_PREFIX
from airflow_iceberg_provider.report_store import write_report

PAGE = "<!DOCTYPE html><html><body><h1>Compaction report: demo.events</h1></body></html>"
REPORT = "demo_dag/manual__2026-01-01T00_00_00_00_00/compact.html"

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]


@pytest.fixture
def client(api_app) -> Iterator[object]:
    """A client of the API server without a session."""
    from fastapi.testclient import TestClient

    with TestClient(api_app, base_url="http://localhost:8080") as test_client:
        yield test_client


@pytest.fixture
def logged_in(api_app) -> Iterator[object]:
    """A client with the admin's UI session cookie."""
    from fastapi.testclient import TestClient

    with TestClient(api_app, base_url="http://localhost:8080", cookies={"_token": session_token()}) as test_client:
        yield test_client


def session_token() -> str:
    """A UI session token of the admin user, as the login page sets in the ``_token`` cookie."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))


@pytest.fixture
def local_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "reports"
    write_report(str(root / REPORT), PAGE, {})
    monkeypatch.setenv("ICEBERG_PROVIDER_REPORT_ROOT", str(root))
    return root


def test_the_plugin_is_mounted_by_airflows_own_discovery(api_app) -> None:
    from airflow.plugins_manager import get_plugin_info

    plugins = {plugin["name"]: plugin for plugin in get_plugin_info()}
    assert [app["url_prefix"] for app in plugins["iceberg_provider"]["fastapi_apps"]] == [URL_PREFIX]
    assert any(getattr(route, "path", None) == URL_PREFIX for route in api_app.routes)


@pytest.mark.usefixtures("local_root")
def test_a_logged_in_user_gets_the_report_with_a_policy_that_runs_no_script(logged_in) -> None:
    answer = logged_in.get(f"{URL_PREFIX}/reports/{REPORT}")
    assert answer.status_code == 200, answer.text
    assert answer.text == PAGE
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    policy = answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "sandbox" in policy and "script-src" not in policy
    assert answer.headers["x-content-type-options"] == "nosniff"


@pytest.mark.usefixtures("local_root")
def test_a_bearer_token_works_as_for_airflows_api(client) -> None:
    answer = client.get(f"{URL_PREFIX}/reports/{REPORT}", headers={"Authorization": f"Bearer {session_token()}"})
    assert answer.status_code == 200 and answer.text == PAGE


@pytest.mark.usefixtures("local_root")
def test_without_a_session_a_browser_goes_to_the_login_page_and_an_api_client_gets_401(client) -> None:
    page = client.get(f"{URL_PREFIX}/reports/{REPORT}", headers={"Accept": "text/html"}, follow_redirects=False)
    assert page.status_code == 303
    assert "/login" in page.headers["location"] and "next=" in page.headers["location"]
    assert client.get(f"{URL_PREFIX}/reports/{REPORT}").status_code == 401


@pytest.mark.parametrize(
    "path",
    [
        "demo_dag/run/compact.txt",  # not a report file
        "demo_dag/compact.html",  # not <dag>/<run>/<file>
        "demo_dag/%2e%2e/%2e%2e/secret.html",  # traversal, encoded so the client keeps it
        "demo_dag/run/.hidden.html",
        "demo_dag/run//compact.html",
        "demo_dag/run/missing.html",
    ],
)
def test_anything_but_a_report_under_the_root_is_not_found(logged_in, local_root: Path, path: str) -> None:
    (local_root.parent / "secret.html").write_text("secret")
    answer = logged_in.get(f"{URL_PREFIX}/reports/{path}")
    assert answer.status_code == 404, (path, answer.status_code, answer.text)
    assert "secret" not in answer.text


def test_a_link_out_of_the_root_is_not_followed(logged_in, local_root: Path) -> None:
    outside = local_root.parent / "outside.html"
    outside.write_text("<p>outside</p>")
    (local_root / "demo_dag" / "run").mkdir(parents=True)
    (local_root / "demo_dag" / "run" / "compact.html").symlink_to(outside)
    answer = logged_in.get(f"{URL_PREFIX}/reports/demo_dag/run/compact.html")
    assert answer.status_code == 404 and "outside" not in answer.text


@pytest.mark.s3
def test_reports_on_s3_are_read_with_the_connections_storage_properties_and_never_echo_them(
    logged_in, seaweedfs, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = "s3://warehouse/compaction-reports"
    properties = {"type": "sql", **seaweedfs.s3_properties()}
    write_report(f"{root}/{REPORT}", PAGE, properties)
    connection = {"conn_type": "iceberg", "extra": properties}
    monkeypatch.setenv("AIRFLOW_CONN_REPORT_STORE", json.dumps(connection))
    monkeypatch.setenv("ICEBERG_PROVIDER_ICEBERG_CONN_ID", "report_store")
    monkeypatch.setenv("ICEBERG_PROVIDER_REPORT_ROOT", root)

    answer = logged_in.get(f"{URL_PREFIX}/reports/{REPORT}")
    assert answer.status_code == 200, answer.text
    assert answer.text == PAGE
    assert logged_in.get(f"{URL_PREFIX}/reports/demo_dag/run/missing.html").status_code == 404

    # Wrong keys: the answer says the store could not be read, and carries no key.
    wrong = {**properties, "s3.secret-access-key": "not-the-secret-key-123"}
    monkeypatch.setenv("AIRFLOW_CONN_REPORT_STORE", json.dumps({"conn_type": "iceberg", "extra": wrong}))
    denied = logged_in.get(f"{URL_PREFIX}/reports/{REPORT}")
    assert denied.status_code == 502, denied.text
    assert denied.json() == {"detail": f"the report store could not be read for {REPORT}"}
    for secret in (seaweedfs.secret_key, seaweedfs.access_key, "not-the-secret-key-123"):
        assert secret not in denied.text
