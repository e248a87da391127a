"""The table health page's API, through Airflow's own API server app with the provider's plugin mounted: the tables
the DAGs touch, each one's health from a real table (SQLite catalog), login and no credential in any answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

import pytest

from airflow_iceberg_provider.plugins.urls import URL_PREFIX
from tests.support.airflow_env import register_dag
from tests.support.health_page import make_health_table

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
TABLE = "health_api.events"


def _client(api_app, token: str | None) -> object:
    from fastapi.testclient import TestClient

    cookies = {"_token": token} if token else {}
    return TestClient(api_app, base_url="http://localhost:8080", cookies=cookies)


@pytest.fixture
def logged_in(api_app) -> Iterator[object]:
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))
    with _client(api_app, token) as client:
        yield client


@pytest.fixture(scope="module")
def health_table(testing_catalog) -> str:
    """40 one-row appends (Amoro's fragment rule in one partition), a compaction; declared by a DAG's task."""
    from airflow.sdk import DAG
    from airflow.sdk.bases.operator import BaseOperator

    from airflow_iceberg_provider.assets import iceberg_table_asset

    make_health_table(testing_catalog, TABLE)
    with DAG("health_api_dag", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        BaseOperator(task_id="touch", outlets=[iceberg_table_asset("testing", TABLE)])
    register_dag(dag)
    return TABLE


def test_the_page_and_its_script_need_a_session(api_app) -> None:
    with _client(api_app, None) as client:
        assert client.get(f"{URL_PREFIX}/health/api/tables").status_code == 401


def test_the_page_runs_only_its_own_script(logged_in) -> None:
    page = logged_in.get(f"{URL_PREFIX}/health/")
    assert page.status_code == 200 and '<script src="health.js">' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    script = logged_in.get(f"{URL_PREFIX}/health/health.js")
    assert script.status_code == 200 and "drawTable" in script.text


def test_the_tables_the_dags_touch_and_each_ones_health(logged_in, health_table: str) -> None:
    listed = logged_in.get(f"{URL_PREFIX}/health/api/tables").json()["tables"]
    namespace, name = health_table.split(".")
    entry = {"catalog": "testing", "table": health_table, "namespace": namespace, "name": name}
    assert {**entry, "dags": ["health_api_dag"]} in listed
    answer = logged_in.get(f"{URL_PREFIX}/health/api/tables/testing/health_api/events")
    assert answer.status_code == 200, answer.text
    health = answer.json()
    assert health["totals"]["data_files"] == 40 and health["totals"]["small_data_files"] == 40
    by_name = {p["partition"]: p for p in health["partitions"]}
    assert by_name["category=a"]["rules"] == ["amoro_fragments"]  # 39 fragments >= 12; not > 100 small files
    assert by_name["category=b"]["rules"] == []
    assert health["partitions_reaching"] == {"glue": 0, "amoro_fragments": 1, "amoro_deletes": 0}
    assert sum(bin_["files"] for bin_ in health["size_histogram"]) == 40
    assert len(health["history"]) == 41 and health["history"][-1]["operation"] == "replace"
    (compaction,) = health["compactions"]
    assert (compaction["data_files_removed"], compaction["data_files_added"]) == (1, 1)


def test_an_unknown_table_is_404_and_a_failing_catalog_echoes_no_credential(logged_in, monkeypatch) -> None:
    assert logged_in.get(f"{URL_PREFIX}/health/api/tables/testing/health_api/missing").status_code == 404
    secret = "s3cr3t-catalog-password"
    connection = {"conn_type": "iceberg", "host": "http://127.0.0.1:9", "login": "client", "password": secret}
    monkeypatch.setenv("AIRFLOW_CONN_BROKEN_CATALOG", json.dumps(connection))
    answer = logged_in.get(f"{URL_PREFIX}/health/api/tables/broken_catalog/ns/t")
    assert answer.status_code == 502
    assert secret not in answer.text and "could not be read" in answer.text


def test_a_group_of_tables_is_answered_in_one_request_as_one_by_one(logged_in, health_table: str, monkeypatch) -> None:
    """The page's grouped request: each table's answer equals its own request's; a missing table and a failing
    catalog answer in their place (404, 502 without the credential), the others still drawn."""
    secret = "s3cr3t-catalog-password"
    connection = {"conn_type": "iceberg", "host": "http://127.0.0.1:9", "login": "client", "password": secret}
    monkeypatch.setenv("AIRFLOW_CONN_BROKEN_GROUP", json.dumps(connection))
    wanted = [["testing", "health_api", "events"], ["testing", "health_api", "missing"], ["broken_group", "ns", "t"]]
    answer = logged_in.get(f"{URL_PREFIX}/health/api/health", params={"tables": json.dumps(wanted)})
    assert answer.status_code == 200, answer.text
    found, missing, broken = answer.json()["tables"]
    alone = logged_in.get(f"{URL_PREFIX}/health/api/tables/testing/health_api/events").json()
    assert found == {"status": 200, **alone}
    assert (missing["status"], broken["status"]) == (404, 502)
    tables = [entry["table"] for entry in (found, missing, broken)]
    assert tables == ["health_api.events", "health_api.missing", "ns.t"]  # each named as a health answer names it
    assert "has no table health_api.missing" in missing["detail"] and secret not in answer.text


@pytest.mark.parametrize(
    "tables", ["not json", "[]", '[["testing", "ns"]]', '[["testing", "ns", 3]]', json.dumps([["c", "n", "t"]] * 26)]
)
def test_a_malformed_group_is_refused_saying_what_is_expected(logged_in, tables: str) -> None:
    answer = logged_in.get(f"{URL_PREFIX}/health/api/health", params={"tables": tables})
    assert answer.status_code == 400
    assert "JSON list of at most 25 [catalog, namespace, table]" in answer.json()["detail"]


def test_a_group_needs_a_session(api_app) -> None:
    with _client(api_app, None) as client:
        answer = client.get(f"{URL_PREFIX}/health/api/health", params={"tables": '[["testing", "a", "b"]]'})
        assert answer.status_code == 401
