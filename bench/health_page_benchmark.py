"""How long the table health page takes to show N tables, in a real browser against a running Airflow API server.

1. In a fresh Airflow home (SQLite) and a fresh SQL catalog (SQLite, local warehouse), write ``N`` tables for each
   size in ``--tables`` (each: ``--appends`` one-row appends into one partition, one into another, and a compaction,
   as the page's tests do), and register one DAG whose tasks touch them all (outlets and inlets, table and
   partitioned assets), so the page lists ``N`` tables.
2. Start ``airflow api-server`` (one worker, the simple auth manager) and headless Chromium.
3. Open ``/iceberg/health/`` and read, from the browser's own ``performance`` clock (ms from the navigation's
   start): (a) the page's load event, (b) every table's card listed (the script's mark), (c) every table's charts
   drawn (its mark), and the list request's own duration. The first load is cold (each table's health computed
   from its metadata and manifests); the loads after it are warm (the server's cache per metadata file): median of
   ``--repeats``; one more load after the cache's TTL is "revalidated" (each table's metadata location asked of
   the catalog again, the health itself unchanged and not recomputed).
4. Each size runs in a process, Airflow home and catalog of its own; one JSON line per size is printed and all are
   written to ``--output``.

Usage (from the repository root, the project's venv): ``python bench/health_page_benchmark.py --tables 10 100 300``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))


def _environment(root: Path) -> None:
    """Step 1's Airflow home and catalog, set before anything imports Airflow or pyiceberg."""
    os.environ["AIRFLOW_HOME"] = str(root / "airflow")
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(root / "dags")
    os.environ["AIRFLOW__OPENLINEAGE__DISABLED"] = "True"
    os.environ["PYICEBERG_HOME"] = str(root / "pyiceberg-home")
    (root / "warehouse").mkdir(parents=True, exist_ok=True)
    (root / "dags").mkdir(exist_ok=True)
    os.environ["PYICEBERG_CATALOG__BENCH__TYPE"] = "sql"
    os.environ["PYICEBERG_CATALOG__BENCH__URI"] = f"sqlite:///{root}/catalog.db"
    os.environ["PYICEBERG_CATALOG__BENCH__WAREHOUSE"] = f"file://{root}/warehouse"


def _tables(count: int, appends: int) -> list[str]:
    """Step 1: ``count`` tables in namespace ``health_bench_<count>``, and one DAG touching them all."""
    from datetime import datetime

    from airflow.sdk import DAG
    from airflow.sdk.bases.operator import BaseOperator
    from pyiceberg.catalog import load_catalog

    from airflow_iceberg_provider.assets import iceberg_partitions_asset, iceberg_table_asset
    from tests.support.airflow_env import register_dag
    from tests.support.health_page import make_health_table

    catalog = load_catalog("bench")
    names = [f"health_bench_{count}.t{index:04d}" for index in range(count)]
    with DAG(f"health_bench_{count}", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        for index, name in enumerate(names):
            make_health_table(catalog, name, appends=appends)
            asset = (iceberg_partitions_asset if index % 3 == 1 else iceberg_table_asset)("bench", name)
            if index % 3 == 2:
                BaseOperator(task_id=f"read_{index}", inlets=[asset])
            else:
                BaseOperator(task_id=f"write_{index}", outlets=[asset])
    register_dag(dag)
    return names


# The browser's own clock, in ms from the navigation's start: the page's load event, the marks the page's script sets
# when every card is listed and when every table is drawn, and the list request as the page made it.
_TIMES = """
const nav = performance.getEntriesByType('navigation')[0];
const mark = (name) => (performance.getEntriesByName(name)[0] || {}).startTime || null;
const list = performance.getEntriesByType('resource').find((entry) => entry.name.endsWith('/api/tables'));
return {loaded: nav.loadEventEnd, listed: mark('iceberg-tables-listed'), drawn: mark('iceberg-tables-drawn'),
        list_request: list ? list.duration : null,
        drawn_cards: document.querySelectorAll('section.table[data-state="drawn"]').length};
"""


def _load_page(browser: Any, url: str, timeout: float = 900) -> dict[str, Any]:
    """Step 3: one load of the page; the browser's times in ms (rounded)."""
    from tests.support.browser import wait_for

    browser.open(url)
    wait_for(lambda: browser.find("body").attribute("data-loaded"), timeout, "the page to draw every table")
    times: dict[str, Any] = browser.script(_TIMES)
    return {key: round(value, 1) if isinstance(value, float) else value for key, value in times.items()}


def measure(count: int, appends: int, repeats: int) -> dict[str, Any]:
    """Steps 1-4 for one size, in an Airflow home and catalog of its own."""
    root = Path(tempfile.mkdtemp(prefix=f"health-bench-{count}-"))
    _environment(root)

    from airflow_iceberg_provider.plugins.health import CACHE
    from tests.support.airflow_env import migrate_airflow_db
    from tests.support.browser import browser_session
    from tests.support.health_page import api_server

    migrate_airflow_db()
    started = time.perf_counter()
    _tables(count, appends)
    setup_seconds = time.perf_counter() - started
    env = {"AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"}
    with api_server(root / "api-server.log", env) as base, browser_session() as browser:
        url = f"{base}/iceberg/health/"
        load = os.getloadavg()[0]
        cold = _load_page(browser, url)
        warm = [_load_page(browser, url) for _ in range(repeats)]
        time.sleep(CACHE.ttl_seconds + 1)
        revalidated = _load_page(browser, url)
    if cold["drawn_cards"] != count or any(run["drawn_cards"] != count for run in warm):
        raise RuntimeError(f"the page drew {cold['drawn_cards']} of {count} tables")
    keys = ("loaded", "listed", "drawn", "list_request")
    return {
        "tables": count,
        "data_files_per_table": appends,
        "cold_ms": {key: cold[key] for key in keys},
        "warm_ms": {key: statistics.median(run[key] for run in warm) for key in keys},
        "revalidated_ms": {key: revalidated[key] for key in keys},
        "warm_runs": repeats,
        "setup_seconds": round(setup_seconds, 1),
        "load_1min": round(load, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[10, 100], help="table counts to measure")
    parser.add_argument("--appends", type=int, default=12, help="one-row appends per table (its data files)")
    parser.add_argument("--repeats", type=int, default=3, help="warm page loads per size (median reported)")
    parser.add_argument("--one", action="store_true", help="measure the one size given, in this process")
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "bench" / "results" / "health_page.json")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.tables[0], args.appends, args.repeats)), flush=True)
        return 0
    results = []
    for count in args.tables:  # each size in a process (and Airflow home) of its own
        command = [sys.executable, __file__, "--one", "--tables", str(count), "--appends", str(args.appends)]
        done = subprocess.run([*command, "--repeats", str(args.repeats)], capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps(result), flush=True)
        results.append(result)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    command = "python bench/health_page_benchmark.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.output.write_text(json.dumps({"command": command, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
