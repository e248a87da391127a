"""Event-driven scheduling under real Airflow processes: a commit made outside Airflow starts the event-driven DAG.

The example DAGs run in a deployment of their own (scheduler, DAG processor, triggerer on SQLite). The table's
watcher is declared by ``iceberg_on_new_snapshot`` while four other example files name the same table through
operators; every file is parsed again every few seconds, so a declaration that dropped the watcher would stop it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pytest

from tests.support.live_airflow import live_airflow

EVENT_DAG = "iceberg_on_new_snapshot"
EXAMPLE_DAGS = {
    "iceberg_demo_pipeline",
    "iceberg_hourly_ingest",
    "iceberg_nightly_compaction",
    "iceberg_backfill_time_travel",
    "iceberg_on_new_snapshot",
    "iceberg_spark_submit_read",
}
POLL_SECONDS = 2
NAMESPACE = "live_airflow"
TABLE = f"{NAMESPACE}.events"
ASSET_URI = f"iceberg://testing/{NAMESPACE}/events"


def _append(catalog, ids: list[int]) -> int:
    table = catalog.load_table(TABLE)
    table.append(pa.table({"id": pa.array(ids, pa.int64())}))
    return table.refresh().current_snapshot().snapshot_id


def _watchers(airflow) -> int:
    """How many watchers the table's Asset has in the database now."""
    rows = airflow.sql(
        "SELECT count(*) FROM asset_watcher w JOIN asset a ON a.id = w.asset_id WHERE a.uri = :uri", uri=ASSET_URI
    )
    return int(rows[0][0])


def _runs_for_snapshot(airflow, snapshot_id: int) -> list[tuple[str, str]]:
    """Asset-triggered runs of the event DAG that consumed a watcher event for ``snapshot_id``."""
    rows = airflow.sql(
        "SELECT r.run_id, r.run_type, e.extra FROM dag_run r "
        "JOIN dagrun_asset_event link ON link.dag_run_id = r.id "
        "JOIN asset_event e ON e.id = link.event_id "
        "JOIN asset a ON a.id = e.asset_id "
        "WHERE r.dag_id = :dag_id AND a.uri = :uri",
        dag_id=EVENT_DAG,
        uri=ASSET_URI,
    )
    matching = []
    for run_id, run_type, extra in rows:
        payload = (extra if isinstance(extra, dict) else json.loads(extra or "{}")).get("payload") or {}
        if payload.get("snapshot_id") == snapshot_id:
            matching.append((run_id, run_type))
    return matching


@pytest.mark.airflow
def test_an_outside_commit_starts_the_event_driven_dag(testing_catalog, session_tmp: Path) -> None:
    testing_catalog.create_namespace_if_not_exists(NAMESPACE)
    if testing_catalog.table_exists(TABLE):
        testing_catalog.drop_table(TABLE)
    testing_catalog.create_table(TABLE, schema=pa.schema([("id", pa.int64())]))
    first = _append(testing_catalog, [1])
    started = time.monotonic()
    env = {
        "ICEBERG_PROVIDER_CATALOG": "testing",
        "ICEBERG_PROVIDER_NAMESPACE": NAMESPACE,
        "ICEBERG_PROVIDER_ICEBERG_CONN_ID": "",
        "ICEBERG_PROVIDER_OUTPUT_ROOT": str(session_tmp / "live-airflow-output"),
        "ICEBERG_DEMO_WATCH_POLL_SECONDS": str(POLL_SECONDS),
    }
    home = session_tmp / "live-airflow-home"
    with live_airflow(home, f"sqlite:///{home}/airflow.db", env) as airflow:
        # Every example DAG parses in the DAG processor; then the event-driven one is unpaused, as in the UI.
        airflow.wait_for(
            "the example DAGs in the database",
            lambda: {row[0] for row in airflow.sql("SELECT dag_id FROM dag")} >= EXAMPLE_DAGS,
            timeout=180,
        )
        assert airflow.sql("SELECT filename, stacktrace FROM import_error") == []

        # The watcher starts with the next parse and reports the head it finds first: the trigger is running.
        airflow.wait_for("a run for the table's first snapshot", lambda: _runs_for_snapshot(airflow, first), 120)

        # Every other example file is parsed again after the watcher ran, and none of them drops the watcher even
        # for a moment (a file declaring the table's Asset without it would, until the next parse of this one).
        (watcher_seen,) = airflow.sql("SELECT max(timestamp) FROM asset_event")[0]
        watcher_samples: list[int] = []

        def every_other_file_parsed_again() -> bool:
            watcher_samples.append(_watchers(airflow))
            (parsed,) = airflow.sql(
                "SELECT count(*) FROM dag WHERE dag_id <> :dag_id AND last_parsed_time > :seen",
                dag_id=EVENT_DAG,
                seen=watcher_seen,
            )[0]
            return parsed >= len(EXAMPLE_DAGS) - 1

        airflow.wait_for("every example file parsed again", every_other_file_parsed_again, timeout=60, interval=0.5)
        assert set(watcher_samples) == {1}, watcher_samples
        committed_at = time.monotonic()
        outside = _append(testing_catalog, [2, 3])
        (run_id, run_type), *_ = airflow.wait_for(
            "an asset-triggered run for the outside commit",
            lambda: _runs_for_snapshot(airflow, outside),
            timeout=POLL_SECONDS + 60,
        )
        latency = time.monotonic() - committed_at
        assert run_type == "asset_triggered", run_id
        assert _watchers(airflow) == 1
    print(f"outside commit -> run in {latency:.1f}s; live Airflow test {time.monotonic() - started:.0f}s in all")
