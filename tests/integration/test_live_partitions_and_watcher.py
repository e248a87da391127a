"""Airflow 3.3 under real processes (scheduler with its LocalExecutor, DAG processor, triggerer; SQLite):

1. an ingest task emits one asset event per partition it changed, and the example DAG ``iceberg_partition_refresh``
   runs once per changed partition with that key, each run exporting exactly that partition's rows;
2. the snapshot watchers of two tables of one catalog share one poll loop; the triggerer is killed (SIGKILL) and
   later stopped (SIGTERM) between commits, commits land while it is down, and every commit is reported exactly
   once, none twice, none missed.

One deployment serves both (the two-core machine runs one Airflow at a time). Its DAG folder holds the example
``iceberg_partition_refresh.py`` and two small DAG files written here: the producer (one ingest task) and a DAG
scheduled on the two watched tables.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.airflow_env import SPARK_LOCAL_CONNECTION, path_with_spark_submit
from tests.support.live_airflow import REPO_ROOT, LiveAirflow, live_airflow

NAMESPACE = "live_partitions"
WATCHED = ("live_watch.a", "live_watch.b")
PRODUCER = f'''
import os
from datetime import datetime

from airflow.sdk import dag

from airflow_iceberg_provider.assets import iceberg_table_asset
from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator


@dag(schedule=None, start_date=datetime(2026, 1, 1), catchup=False)
def live_partition_ingest():
    IcebergIngestOperator(
        task_id="ingest",
        catalog="testing",
        table="{NAMESPACE}.events",
        source=os.environ["LIVE_PARTITION_SOURCE"],
        mode="append",
        create_if_missing=True,
        partition_by="day(ts)",
        conf={{"spark.ui.enabled": "false"}},
        outlets=[iceberg_table_asset("testing", "{NAMESPACE}.events")],
    )


live_partition_ingest()
'''
WATCHER_DAG = f'''
from datetime import datetime

from airflow.sdk import dag, task

from airflow_iceberg_provider.assets import watched_table_asset

FIRST = watched_table_asset("testing", "{WATCHED[0]}", poll_interval=1)
SECOND = watched_table_asset("testing", "{WATCHED[1]}", poll_interval=1)


@dag(schedule=FIRST | SECOND, start_date=datetime(2026, 1, 1), catchup=False)
def live_watch():
    @task
    def noted():
        return None

    noted()


live_watch()
'''


@pytest.fixture(scope="module")
def deployment(session_tmp: Path, testing_catalog):
    dags = session_tmp / "live-partitions-dags"
    dags.mkdir()
    (dags / "iceberg_partition_refresh.py").symlink_to(REPO_ROOT / "dags" / "iceberg_partition_refresh.py")
    (dags / "live_partition_ingest.py").write_text(PRODUCER)
    (dags / "live_watch.py").write_text(WATCHER_DAG)
    for name in WATCHED:
        testing_catalog.create_namespace_if_not_exists(name.split(".")[0])
        if testing_catalog.table_exists(name):
            testing_catalog.drop_table(name)
        testing_catalog.create_table(name, schema=pa.schema([("id", pa.int64()), ("category", pa.string())]))
        _append(testing_catalog, name, [0])
    env = {
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__TRIGGERER__CAPACITY": "10",
        "AIRFLOW_CONN_SPARK_DEFAULT": SPARK_LOCAL_CONNECTION,
        "PATH": path_with_spark_submit(),
        "ICEBERG_PROVIDER_CATALOG": "testing",
        "ICEBERG_PROVIDER_NAMESPACE": NAMESPACE,
        "ICEBERG_PROVIDER_ICEBERG_CONN_ID": "",
        "ICEBERG_PROVIDER_OUTPUT_ROOT": str(session_tmp / "live-partitions-output"),
        "LIVE_PARTITION_SOURCE": str(session_tmp / "live-partitions-source"),
    }
    home = session_tmp / "live-partitions-home"
    database = f"sqlite:///{home}/airflow.db"
    started = time.monotonic()
    with live_airflow(home, database, env, run_tasks=True) as airflow:
        airflow.wait_for(
            "the test DAGs in the database",
            lambda: (
                {row[0] for row in airflow.sql("SELECT dag_id FROM dag")}
                >= {"iceberg_partition_refresh", "live_partition_ingest", "live_watch"}
            ),
            timeout=240,
        )
        assert airflow.sql("SELECT filename, stacktrace FROM import_error") == []
        yield airflow
    print(f"live Airflow (partitions and watcher) {time.monotonic() - started:.0f}s in all")


def _append(catalog, name: str, ids: list[int]) -> int:
    table = catalog.load_table(name)
    table.append(pa.table({"id": pa.array(ids, pa.int64()), "category": ["c"] * len(ids)}))
    return table.refresh().current_snapshot().snapshot_id


def _extra(value) -> dict:
    return value if isinstance(value, dict) else json.loads(value or "{}")


# ---- 1. partitioned asset events -----------------------------------------------------------------------------


@pytest.mark.airflow
@pytest.mark.spark
def test_an_ingest_runs_the_refresh_dag_once_per_changed_partition(deployment: LiveAirflow, session_tmp) -> None:
    source = session_tmp / "live-partitions-source"
    source.mkdir()
    day = datetime(2026, 3, 1, 8, tzinfo=UTC)
    stamps = [day, day + timedelta(hours=1), day + timedelta(days=1), day + timedelta(days=1, hours=2)]
    rows = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "ts": pa.array(stamps, pa.timestamp("us", tz="UTC"))})
    pq.write_table(rows, source / "part-0.parquet")

    deployment.airflow("dags", "trigger", "live_partition_ingest")
    deployment.wait_for(
        "the ingest run to succeed",
        lambda: deployment.sql("SELECT 1 FROM dag_run WHERE dag_id = 'live_partition_ingest' AND state = 'success'"),
        timeout=600,
        interval=2,
    )
    keys = ["ts_day=2026-03-01", "ts_day=2026-03-02"]
    events = deployment.sql(
        "SELECT a.uri, e.partition_key, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
        "WHERE e.source_dag_id = 'live_partition_ingest' ORDER BY e.id"
    )
    table_uri = f"iceberg://testing/{NAMESPACE}/events"
    partitioned = sorted(key for uri, key, _ in events if uri == table_uri + "/partitions")
    assert partitioned == keys, events
    (table_event,) = [_extra(extra) for uri, key, extra in events if uri == table_uri]
    assert table_event["partitions"] == keys and table_event["operation"] == "append"

    def refresh_runs():
        runs = deployment.sql(
            "SELECT partition_key, state FROM dag_run WHERE dag_id = 'iceberg_partition_refresh' ORDER BY id"
        )
        return runs if len(runs) == 2 and all(state in ("success", "failed") for _, state in runs) else None

    runs = deployment.wait_for("a refresh run per partition", refresh_runs, timeout=600, interval=2)
    assert sorted(runs) == [(key, "success") for key in keys], deployment.log_tail("scheduler", 80)
    output = session_tmp / "live-partitions-output" / "partition_refresh"
    assert sorted(pq.read_table(output / keys[0]).column("id").to_pylist()) == [1, 2]
    assert sorted(pq.read_table(output / keys[1]).column("id").to_pylist()) == [3, 4]


# ---- 2. the watcher across triggerer restarts ----------------------------------------------------------------


def _watcher_events(deployment: LiveAirflow) -> Counter:
    """How many watcher events each (table, snapshot id) has."""
    rows = deployment.sql(
        "SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id WHERE a.uri LIKE 'iceberg://testing/live_watch/%'"
    )
    found: Counter = Counter()
    for (extra,) in rows:
        payload = _extra(extra).get("payload") or {}
        found[(payload.get("table"), payload.get("snapshot_id"))] += 1
    return found


def _stored_cursor(deployment: LiveAirflow, name: str) -> int | None:
    uri = "iceberg://testing/" + name.replace(".", "/")
    rows = deployment.sql(
        "SELECT s.value FROM asset_state_store s JOIN asset a ON a.id = s.asset_id "
        "WHERE a.uri = :uri AND s.key = 'iceberg_snapshot_cursor'",
        uri=uri,
    )
    return json.loads(rows[0][0])["snapshot_id"] if rows else None


@pytest.mark.airflow
def test_the_watcher_reports_every_commit_once_across_triggerer_restarts(deployment: LiveAirflow, testing_catalog):
    first, second = WATCHED
    heads = {name: testing_catalog.load_table(name).current_snapshot().snapshot_id for name in WATCHED}
    expected: Counter = Counter({(name, head): 1 for name, head in heads.items()})

    def all_reported_and_stored() -> bool:
        seen = _watcher_events(deployment)
        if not set(expected) <= set(seen):
            return False
        newest = {name: snapshot for name, snapshot in expected}  # insertion order: the newest last
        return all(_stored_cursor(deployment, name) == snapshot for name, snapshot in newest.items())

    deployment.wait_for("the heads reported and their cursors stored", all_reported_and_stored, 240)
    commit = _append(testing_catalog, first, [1])
    expected[(first, commit)] = 1
    deployment.wait_for("the commit reported and its cursor stored", all_reported_and_stored, 120)

    for sig in (signal.SIGKILL, signal.SIGTERM):
        deployment.stop_process("triggerer", sig)
        for name, ids in ((first, [2]), (first, [3, 4]), (second, [5])):
            expected[(name, _append(testing_catalog, name, ids))] = 1
        deployment.start_process("triggerer")
        deployment.wait_for(f"the commits made while stopped ({sig.name})", all_reported_and_stored, 240)

    time.sleep(3)  # a few more polls: nothing is reported again
    assert _watcher_events(deployment) == expected
    # One poll loop for the catalog in each triggerer process, serving both tables.
    loops = deployment.log_tail("triggerer", 100000).count("poll loop for catalog ('airflow-iceberg-provider")
    assert loops == 3, deployment.log_tail("triggerer", 60)
