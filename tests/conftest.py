"""Session-wide test setup: isolated Airflow home, loopback-only Spark, and real services started on demand.

Services (PostgreSQL, Spark standalone, SeaweedFS) start the first time a test asks for them and stop by PID at
session end.
A service that cannot start fails the tests that need it; nothing here skips.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# Set before anything imports airflow or pyspark: an Airflow home of our own on SQLite, Spark bound to loopback,
# and this interpreter for Spark's Python workers.
_SESSION_TMP = Path(tempfile.mkdtemp(prefix="aip-tests-"))
# Removed when the interpreter exits (after the session's services have stopped), so runs do not pile up on disk;
# AIP_KEEP_TEST_TMP=1 keeps it for a look after a failure.
if os.environ.get("AIP_KEEP_TEST_TMP") != "1":
    atexit.register(shutil.rmtree, _SESSION_TMP, ignore_errors=True)
os.environ["AIRFLOW_HOME"] = str(_SESSION_TMP / "airflow")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO_ROOT / "dags")
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "False"
# The OpenLineage provider is installed for the lineage tests; no test emits events.
os.environ["AIRFLOW__OPENLINEAGE__DISABLED"] = "True"
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
os.environ.setdefault("SPARK_LOCAL_HOSTNAME", "localhost")
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
# pyiceberg must not pick up a developer's ~/.pyiceberg.yaml.
os.environ["PYICEBERG_HOME"] = str(_SESSION_TMP / "pyiceberg-home")
# Catalogs by name, for code that resolves them through pyiceberg's configuration. Spark's Python workers inherit
# the environment the JVM started with, so these are set before any SparkSession exists.
os.environ["PYICEBERG_CATALOG__CONFORMANCE__TYPE"] = "sql"
os.environ["PYICEBERG_CATALOG__CONFORMANCE__URI"] = "sqlite:////tmp/iceberg-conformance/corpus/catalog.db"
os.environ["PYICEBERG_CATALOG__CONFORMANCE__WAREHOUSE"] = "file:///tmp/iceberg-conformance/corpus/warehouse"
(_SESSION_TMP / "testing-warehouse").mkdir()
os.environ["PYICEBERG_CATALOG__TESTING__TYPE"] = "sql"
os.environ["PYICEBERG_CATALOG__TESTING__URI"] = f"sqlite:///{_SESSION_TMP}/testing-catalog.db"
os.environ["PYICEBERG_CATALOG__TESTING__WAREHOUSE"] = f"file://{_SESSION_TMP}/testing-warehouse"

from tests.support import object_store, services  # noqa: E402
from tests.support.conformance import catalog_properties, extract_corpus  # noqa: E402


@pytest.fixture(scope="session")
def session_tmp() -> Path:
    """A temp dir for the whole session (Airflow home, warehouses of session fixtures)."""
    return _SESSION_TMP


@pytest.fixture(scope="session")
def postgres() -> Iterator[services.PostgresServer]:
    """A real PostgreSQL 15 server on 127.0.0.1, data dir in a temp dir."""
    server = services.start_postgres()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def spark_standalone() -> Iterator[services.SparkStandalone]:
    """A real Spark standalone master and worker on 127.0.0.1."""
    cluster = services.start_spark_standalone()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def seaweedfs() -> Iterator[object_store.SeaweedFS]:
    """A real SeaweedFS (S3 API + Iceberg REST catalog) on 127.0.0.1: buckets warehouse, landing; table bucket
    lakehouse."""
    server = object_store.start_seaweedfs()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_rest_catalog(seaweedfs: object_store.SeaweedFS) -> str:
    """Catalog name ``s3rest``: SeaweedFS's Iceberg REST catalog over table bucket lakehouse, set in the environment."""
    os.environ.update(object_store.catalog_env("s3rest", seaweedfs.rest_catalog_properties()))
    return "s3rest"


@pytest.fixture(scope="session")
def s3_sql_catalog(seaweedfs: object_store.SeaweedFS, postgres: services.PostgresServer) -> str:
    """Catalog name ``s3sql``: a SQL catalog on PostgreSQL with its warehouse in s3://warehouse/sql."""
    uri = postgres.create_database("s3sql_catalog")
    properties = seaweedfs.sql_catalog_properties(uri, "s3://warehouse/sql")
    os.environ.update(object_store.catalog_env("s3sql", properties))
    return "s3sql"


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession shared by the session (stopped at the end)."""
    import logging

    from pyspark.sql import SparkSession

    # py4j logs from __del__ at interpreter exit, after pytest closed the streams.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("airflow-iceberg-provider-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def conformance_catalog():
    """The conformance corpus extracted to /tmp/iceberg-conformance, as a pyiceberg SQL catalog."""
    from pyiceberg.catalog import load_catalog

    extract_corpus()
    return load_catalog("conformance", **catalog_properties())


@pytest.fixture(scope="session")
def testing_catalog():
    """The session's named catalog ``testing`` (SQLite, local warehouse), visible to Spark workers and jobs."""
    from pyiceberg.catalog import load_catalog

    return load_catalog("testing")


@pytest.fixture
def sql_catalog(tmp_path: Path):
    """An empty pyiceberg SQL catalog on SQLite with a local warehouse, named ``test``."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    return SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{warehouse}")
