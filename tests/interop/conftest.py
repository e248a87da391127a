"""Fixtures of the interop suite: the Java environments, one Iceberg Java session and one DuckDB connection per module.

Java's JdbcCatalog and DuckDB read the session's ``testing`` catalog (SQLite) that our jobs write to. Iceberg 1.10.2
on Spark 3.5 (``iceberg_java``) reads every table; Iceberg 1.12.0 on Spark 4.1 (``iceberg_java_112``, its own venv)
writes and reads format v3's new types.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import duckdb_reader, java_env
from tests.support.iceberg_java import IcebergJava
from tests.support.interop_readers import Readers

CATALOG = "testing"


@pytest.fixture(scope="session")
def java_environment() -> java_env.JavaEnv:
    """Spark 3.5 + the Iceberg runtime (built on first use, then cached per machine)."""
    return java_env.ensure()


@pytest.fixture(scope="module")
def iceberg_java(java_environment, testing_catalog, session_tmp: Path, request) -> Iterator[IcebergJava]:
    """One Iceberg Java session for the module, on the ``testing`` catalog."""
    yield from _java_session(java_environment, session_tmp, request.module.__name__)


@pytest.fixture(scope="session")
def java_environment_112() -> java_env.JavaEnv:
    """Spark 4.1 + the Iceberg 1.12 runtime (built on first use, then cached per machine)."""
    return java_env.ensure("1.12")


@pytest.fixture(scope="module")
def iceberg_java_112(java_environment_112, testing_catalog, session_tmp: Path, request) -> Iterator[IcebergJava]:
    """One Iceberg 1.12 session (Spark 4.1, geospatial types on) for the module, on the ``testing`` catalog."""
    yield from _java_session(
        java_environment_112, session_tmp, request.module.__name__, {"spark.sql.geospatial.enabled": "true"}
    )


def _java_session(
    environment: java_env.JavaEnv, session_tmp: Path, module: str, spark_conf: dict[str, str] | None = None
) -> Iterator[IcebergJava]:
    started = time.monotonic()
    session = IcebergJava(
        environment,
        catalog=CATALOG,
        catalog_uri=os.environ["PYICEBERG_CATALOG__TESTING__URI"],
        warehouse=os.environ["PYICEBERG_CATALOG__TESTING__WAREHOUSE"],
        log_path=session_tmp / f"iceberg-java-{environment.iceberg_version}-{module.rsplit('.', 1)[-1]}.log",
        spark_conf=spark_conf,
    )
    print(
        f"Iceberg Java {environment.iceberg_version} (Spark {session.spark_version}) started in "
        f"{time.monotonic() - started:.1f}s"
    )
    yield session
    session.close()


@pytest.fixture(scope="module")
def duckdb_connection():
    """One DuckDB connection for the module, iceberg and avro extensions loaded from their packages."""
    con = duckdb_reader.connect()
    yield con
    con.close()


@pytest.fixture(scope="module")
def readers(iceberg_java, duckdb_connection) -> Iterator[Readers]:
    """Our reader, Iceberg Java and DuckDB over the ``testing`` catalog; prints each one's total seconds."""
    module_readers = Readers(CATALOG, iceberg_java, duckdb_connection)
    yield module_readers
    spent = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in module_readers.seconds.items())
    print(f"interop readers' time: {spent}")
