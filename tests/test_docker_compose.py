"""docker-compose.yml agrees with the code: services, ports, connections and the environment variables the code reads.

There is no Docker engine on the test machines; the integration tests run the same processes natively. This test
parses the file and cross-checks it, so the distributed shape cannot drift from what the code expects.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from airflow_iceberg_provider.settings import ENVIRONMENT_VARIABLES

REPO_ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
SERVICES: dict = COMPOSE["services"]
AIRFLOW_SERVICES = ["airflow-api-server", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"]
SPARK_SERVICES = ["spark-master", "spark-worker-1", "spark-worker-2"]
ONE_SHOT_SERVICES = {"airflow-init", "object-store-init"}
PYICEBERG_VAR = re.compile(r"^PYICEBERG_CATALOG__(?P<catalog>[A-Z0-9_]+?)__(?P<key>[A-Z0-9_]+)$")


def _env(service: str) -> dict[str, str]:
    return {k: str(v) for k, v in (SERVICES[service].get("environment") or {}).items()}


def _command(service: str) -> str:
    command = SERVICES[service].get("command", [])
    return " ".join(command) if isinstance(command, list) else str(command)


def _flag(command: str, flag: str) -> str:
    match = re.search(rf"{re.escape(flag)}[ =](\S+)", command)
    assert match, f"{flag} missing from {command!r}"
    return match.group(1)


def test_the_distributed_shape_has_every_component() -> None:
    expected = {"airflow-db", "catalog-db", "object-store", *AIRFLOW_SERVICES, *SPARK_SERVICES}
    assert expected <= set(SERVICES)
    for service in ("airflow-db", "catalog-db"):
        assert SERVICES[service]["image"].startswith("postgres:15")


@pytest.mark.parametrize("service", sorted(set(SERVICES) - ONE_SHOT_SERVICES))
def test_every_long_running_service_has_a_healthcheck(service: str) -> None:
    assert "test" in SERVICES[service].get("healthcheck", {})


def test_named_volumes_are_declared_and_used() -> None:
    used = {
        volume.split(":", 1)[0]
        for service in SERVICES.values()
        for volume in service.get("volumes", [])
        if not volume.startswith((".", "/"))
    }
    assert used == set(COMPOSE["volumes"])


@pytest.mark.parametrize("service", [*AIRFLOW_SERVICES, "airflow-init"])
def test_airflow_services_set_every_provider_setting_and_nothing_unknown(service: str) -> None:
    env = _env(service)
    provider_vars = {name for name in env if name.startswith("ICEBERG_PROVIDER_")}
    assert provider_vars == set(ENVIRONMENT_VARIABLES), "compose and airflow_iceberg_provider.settings disagree"
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert urlparse(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]).hostname == "airflow-db"


@pytest.mark.parametrize("service", AIRFLOW_SERVICES + SPARK_SERVICES)
def test_the_iceberg_catalog_points_at_the_catalog_db_and_object_store(service: str) -> None:
    env = _env(service)
    catalogs = {m.group("catalog").lower() for name in env if (m := PYICEBERG_VAR.match(name))}
    assert catalogs == {"lakehouse"}, f"{service} configures catalogs {catalogs}"
    prefix = "PYICEBERG_CATALOG__LAKEHOUSE__"
    uri = urlparse(env[prefix + "URI"].replace("postgresql+psycopg2", "postgresql"))
    assert (uri.hostname, uri.port) == ("catalog-db", 5432)
    assert uri.path.lstrip("/") == SERVICES["catalog-db"]["environment"]["POSTGRES_DB"]
    endpoint = urlparse(env[prefix + "S3__ENDPOINT"])
    assert endpoint.hostname == "object-store"
    assert f":{endpoint.port}" == _flag(_command("object-store"), "--address")
    bucket = urlparse(env[prefix + "WAREHOUSE"]).netloc
    assert f"store/{bucket}" in " ".join(SERVICES["object-store-init"]["entrypoint"])


def test_airflow_catalog_setting_names_the_configured_catalog() -> None:
    env = _env("airflow-scheduler")
    assert env["ICEBERG_PROVIDER_CATALOG"].upper() == "LAKEHOUSE"
    iceberg_conn = json.loads(env["AIRFLOW_CONN_ICEBERG_DEFAULT"])
    assert iceberg_conn["conn_type"] == "iceberg"
    assert iceberg_conn["extra"]["catalog_name"] == env["ICEBERG_PROVIDER_CATALOG"]
    assert iceberg_conn["extra"]["uri"] == env["PYICEBERG_CATALOG__LAKEHOUSE__URI"]


def test_spark_connection_and_workers_reach_the_master() -> None:
    master_command = _command("spark-master")
    master_port = int(_flag(master_command, "--port"))
    assert _flag(master_command, "--host") == "spark-master"
    spark_conn = json.loads(_env("airflow-scheduler")["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert spark_conn["conn_type"] == "spark"
    assert (urlparse(spark_conn["host"]).hostname, spark_conn["port"]) == ("spark-master", master_port)
    for worker in ("spark-worker-1", "spark-worker-2"):
        assert f"spark://spark-master:{master_port}" in _command(worker)
        assert "org.apache.spark.deploy.worker.Worker" in _command(worker)
    assert f"{master_port}:{master_port}" in SERVICES["spark-master"]["ports"]


def test_api_server_port_matches_the_execution_api_url() -> None:
    port = _flag(_command("airflow-api-server"), "--port")
    assert f"{port}:{port}" in SERVICES["airflow-api-server"]["ports"]
    url = urlparse(_env("airflow-scheduler")["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
    assert (url.hostname, str(url.port)) == ("airflow-api-server", port)


def test_the_image_installs_the_packages_pyproject_declares() -> None:
    dockerfile = (REPO_ROOT / "docker" / "Dockerfile").read_text()
    for package in ("airflow_iceberg_provider", "spark_jobs", "dags"):
        assert f"COPY {package} " in dockerfile
    assert "openjdk-17" in dockerfile
    assert "pip install" in dockerfile
