"""Fixtures for the example DAG tests: a migrated Airflow database, local Spark, the example settings pointed at the
session's ``testing`` catalog."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from tests.support.airflow_env import SPARK_LOCAL_CONNECTION, migrate_airflow_db, path_with_spark_submit


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """The session's Airflow metadata database, migrated once."""
    migrate_airflow_db()


@pytest.fixture
def example_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The example DAGs' settings on the ``testing`` catalog, namespace ``example_dags``, output under tmp_path."""
    monkeypatch.setenv("ICEBERG_PROVIDER_CATALOG", "testing")
    monkeypatch.setenv("ICEBERG_PROVIDER_NAMESPACE", "example_dags")
    monkeypatch.setenv("ICEBERG_PROVIDER_OUTPUT_ROOT", str(tmp_path / "output"))
    monkeypatch.delenv("ICEBERG_PROVIDER_ICEBERG_CONN_ID", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", SPARK_LOCAL_CONNECTION)
    monkeypatch.setenv("PATH", path_with_spark_submit())
    return tmp_path / "output"


@pytest.fixture
def example_events(testing_catalog) -> str:
    """A fresh ``example_dags.events`` in ``testing``: day 1 (4 rows), then day 2 (3 rows), two snapshots."""
    testing_catalog.create_namespace_if_not_exists("example_dags")
    name = "example_dags.events"
    if testing_catalog.table_exists(name):
        testing_catalog.drop_table(name)
    day1 = pa.table(
        {"id": pa.array([1, 2, 3, 4], pa.int64()), "ts": pa.array(["2026-01-01"] * 4, pa.string()).cast(pa.date32())}
    )
    table = testing_catalog.create_table(name, schema=day1.schema)
    table.append(day1)
    day2 = pa.table({"id": pa.array([5, 6, 7], pa.int64()), "ts": pa.array(["2026-01-02"] * 3).cast(pa.date32())})
    table.append(day2)
    return name
