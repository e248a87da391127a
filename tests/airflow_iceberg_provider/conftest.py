"""Fixtures for the provider's tests: a migrated Airflow database, local Spark, a small table in ``testing``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.support.airflow_env import SPARK_LOCAL_CONNECTION, migrate_airflow_db, path_with_spark_submit


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """The session's Airflow metadata database, migrated once."""
    migrate_airflow_db()


@pytest.fixture
def spark_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """``spark_default`` pointing at ``local[2]``, and spark-submit on PATH."""
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", SPARK_LOCAL_CONNECTION)
    monkeypatch.setenv("PATH", path_with_spark_submit())


@pytest.fixture
def events_table(testing_catalog, request) -> str:
    """A fresh two-snapshot table ``airflow_tests.<test name>`` in the ``testing`` catalog (10 + 5 rows)."""
    testing_catalog.create_namespace_if_not_exists("airflow_tests")
    name = "airflow_tests." + "".join(c if c.isalnum() else "_" for c in request.node.name)[:60]
    if testing_catalog.table_exists(name):
        testing_catalog.drop_table(name)
    first = pa.table({"id": pa.array(range(10), pa.int64()), "category": pa.array(["a", "b"] * 5)})
    table = testing_catalog.create_table(name, schema=first.schema)
    table.append(first)
    table.append(pa.table({"id": pa.array(range(10, 15), pa.int64()), "category": pa.array(["c"] * 5)}))
    return name
