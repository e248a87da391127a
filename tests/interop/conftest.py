"""Fixtures of the interop suite: the Java environment, one Iceberg Java session and one DuckDB connection per module.

Java's JdbcCatalog and DuckDB read the session's ``testing`` catalog (SQLite) that our jobs write to.
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
    started = time.monotonic()
    session = IcebergJava(
        java_environment,
        catalog=CATALOG,
        catalog_uri=os.environ["PYICEBERG_CATALOG__TESTING__URI"],
        warehouse=os.environ["PYICEBERG_CATALOG__TESTING__WAREHOUSE"],
        log_path=session_tmp / f"iceberg-java-{request.module.__name__.rsplit('.', 1)[-1]}.log",
    )
    print(f"Iceberg Java (Spark {session.spark_version}) started in {time.monotonic() - started:.1f}s")
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
