"""A catalog or object store that refuses us, or cannot be reached: one line naming it, exit code 2 or retryable.

Real services: SeaweedFS's REST catalog and S3 API, PostgreSQL for the SQL catalog. Every message is checked for
the catalog name and where it is, and for the absence of every secret.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from spark_jobs.engine.shared.storage import StorageAccessError
from spark_jobs.engine.table.catalog import (
    CatalogAccessError,
    CatalogUnavailableError,
    load_catalog,
    load_table,
)
from tests.support.object_store import SeaweedFS, catalog_env
from tests.support.services import PostgresServer, free_port

pytestmark = pytest.mark.s3


def _configure(monkeypatch, name: str, properties: dict[str, str]) -> None:
    for key, value in catalog_env(name, properties).items():
        monkeypatch.setenv(key, value)


def _one_line_without_secrets(error: Exception, *secrets: str) -> str:
    message = str(error)
    assert "\n" not in message
    for secret in secrets:
        assert secret not in message
    return message


def test_refused_rest_credentials_are_bad_input(monkeypatch, seaweedfs: SeaweedFS) -> None:
    _configure(monkeypatch, "badrest", {**seaweedfs.rest_catalog_properties(), "credential": "someone:wrong-secret"})
    with pytest.raises(CatalogAccessError) as raised:
        load_catalog("badrest")
    message = _one_line_without_secrets(raised.value, "wrong-secret", seaweedfs.secret_key)
    assert "'badrest'" in message and seaweedfs.rest_uri in message and "refused" in message


def test_an_unreachable_rest_catalog_is_retryable(monkeypatch, seaweedfs: SeaweedFS) -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    properties = {**seaweedfs.rest_catalog_properties(), "uri": uri, "oauth2-server-uri": f"{uri}/v1/oauth/tokens"}
    _configure(monkeypatch, "gonerest", properties)
    with pytest.raises(CatalogUnavailableError) as raised:
        load_catalog("gonerest")
    message = _one_line_without_secrets(raised.value, seaweedfs.secret_key)
    assert "'gonerest'" in message and uri in message and "unreachable" in message


def test_a_missing_warehouse_bucket_is_bad_input(monkeypatch, seaweedfs: SeaweedFS) -> None:
    properties = {**seaweedfs.rest_catalog_properties(), "warehouse": "s3://no-such-table-bucket/"}
    _configure(monkeypatch, "nowarehouse", properties)
    with pytest.raises(CatalogAccessError, match="no-such-table-bucket"):
        load_table(load_catalog("nowarehouse"), "ns.t")


@pytest.mark.postgres
def test_sql_catalog_unknown_database_is_bad_input_and_a_stopped_server_retryable(
    monkeypatch, seaweedfs: SeaweedFS, postgres: PostgresServer
) -> None:
    missing = postgres.uri("no_such_database").replace("postgres@", "postgres:pg-secret@")
    _configure(monkeypatch, "nodb", seaweedfs.sql_catalog_properties(missing, "s3://warehouse/nodb"))
    with pytest.raises(CatalogAccessError) as raised:
        load_catalog("nodb")
    message = _one_line_without_secrets(raised.value, "pg-secret", seaweedfs.secret_key)
    assert "no_such_database" in message and "'nodb'" in message
    gone = f"postgresql+psycopg2://postgres@127.0.0.1:{free_port()}/x"
    _configure(monkeypatch, "gonesql", seaweedfs.sql_catalog_properties(gone, "s3://warehouse/gone"))
    with pytest.raises(CatalogUnavailableError, match="unreachable"):
        load_catalog("gonesql")


@pytest.mark.postgres
def test_wrong_s3_keys_name_the_metadata_object_not_the_key(
    monkeypatch, seaweedfs: SeaweedFS, postgres: PostgresServer
) -> None:
    uri = postgres.create_database("wrong_keys_catalog")
    properties = seaweedfs.sql_catalog_properties(uri, "s3://warehouse/wrong_keys")
    _configure(monkeypatch, "wrongkeys", properties)
    catalog = load_catalog("wrongkeys")
    catalog.create_namespace_if_not_exists("ns")
    catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64())]))
    monkeypatch.setenv("PYICEBERG_CATALOG__WRONGKEYS__S3__SECRET_ACCESS_KEY", "not-the-s3-secret")
    with pytest.raises(StorageAccessError) as raised:
        load_table(load_catalog("wrongkeys"), "ns.t")
    message = _one_line_without_secrets(raised.value, "not-the-s3-secret", seaweedfs.secret_key)
    assert "'ns.t'" in message and "s3://warehouse/wrong_keys/" in message and "access denied" in message
    assert seaweedfs.s3_endpoint in message


def test_a_job_reports_a_refused_catalog_in_one_line_with_exit_code_2(monkeypatch, capsys, seaweedfs) -> None:
    from spark_jobs import read
    from spark_jobs.job_support import EXIT_USAGE, run_job

    _configure(monkeypatch, "jobrest", {**seaweedfs.rest_catalog_properties(), "credential": "x:job-secret"})
    code = run_job("read", lambda: read.main(["--catalog", "jobrest", "--table", "ns.t", "--output", "/tmp/never"]))
    assert code == EXIT_USAGE
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "'jobrest'" in errors[0] and "job-secret" not in errors[0]
