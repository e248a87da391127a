"""The table health page in a real browser: ``airflow api-server`` with the provider's plugin, headless Chromium
(``tests/support/browser.py``) loading ``/iceberg/health/``, and what the page then shows read from it (and a
screenshot, kept for a look)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from tests.support.airflow_env import register_dag
from tests.support.browser import browser_session, wait_for
from tests.support.health_page import api_server, make_health_table

TABLES = ("browser_health.orders", "browser_health.events", "browser_health.clicks")
SECRET = "s3cr3t-catalog-password"


@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_the_page_draws_every_table_the_dags_touch(testing_catalog, session_tmp: Path) -> None:
    from airflow.sdk import DAG
    from airflow.sdk.bases.operator import BaseOperator

    from airflow_iceberg_provider.assets import iceberg_partitions_asset, iceberg_table_asset

    for index, name in enumerate(TABLES):
        make_health_table(testing_catalog, name, appends=15 + 10 * index)
    with DAG("browser_health_dag", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        BaseOperator(task_id="orders", outlets=[iceberg_table_asset("testing", TABLES[0])])
        BaseOperator(task_id="events", outlets=[iceberg_partitions_asset("testing", TABLES[1])])
        BaseOperator(task_id="clicks", inlets=[iceberg_table_asset("testing", TABLES[2])])
    register_dag(dag)
    # A connection with a secret that no answer may show (the provider's catalog connection).
    connection = {"conn_type": "iceberg", "host": "http://127.0.0.1:9", "login": "id", "password": SECRET}
    env = {"AIRFLOW_CONN_ICEBERG_DEFAULT": json.dumps(connection)}

    with api_server(session_tmp / "health-api-server.log", env) as base, browser_session() as browser:
        browser.open(f"{base}/iceberg/health/")
        wait_for(lambda: browser.find("body").attribute("data-loaded"), 120, "the page to draw every table")
        dom = browser.script("return document.documentElement.outerHTML;")
        shot = browser.screenshot(session_tmp / "table-health.png")

    assert SECRET not in dom
    drawn = re.findall(
        r'<section class="table" data-table="testing\.(browser_health\.\w+)" [^>]*data-state="(\w+)"', dom
    )
    assert {name for name, _ in drawn} >= set(TABLES), dom[:3000]
    assert {state for name, state in drawn if name in TABLES} == {"drawn"}
    for name in TABLES:
        card = dom[dom.index(f'data-table="testing.{name}"') :]
        card = card[: card.index("</section>")]
        # Six pictures per table, each an SVG chart.
        assert len(re.findall(r'<svg [^>]*class="chart chart-', card)) == 6, name
        assert 'class="bar"' in card and 'class="rows"' in card and 'class="removed"' in card
        # Partition a (14, 24 or 34 one-row files) reaches Amoro's fragment rule (12); b (one file) none.
        assert sorted(re.findall(r'class="tile" data-rules="([^"]*)"', card)) == ["", "amoro_fragments"], name
    assert "browser_health_dag" in dom
    assert shot.stat().st_size > 10_000
