"""docker-compose.yml for the tests: parsed as Compose reads it, and its services started as local processes.

Parsing: YAML anchors and merge keys are resolved by the parser; ``${VAR:-default}`` is interpolated as Compose does
with no variables set, ``$$`` becomes ``$``; a ``sh -c`` command is split into its words.

Local processes (``start_object_store``, ``start_spark``, ``airflow_environment``): each service runs with the
command and environment the file gives it, with only what differs between containers and one host replaced:
service host names become 127.0.0.1, container ports become free ports, container paths become temp dirs.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.support import object_store, services

REPO_ROOT = Path(__file__).resolve().parents[2]
_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<default>[^}]*))?\}")


def interpolate(value: Any) -> Any:
    """Compose's variable substitution with no variables set: ``${VAR:-default}`` -> default, ``$$`` -> ``$``."""
    if isinstance(value, str):
        return "$".join(_VARIABLE.sub(lambda m: m.group("default") or "", part) for part in value.split("$$"))
    if isinstance(value, list):
        return [interpolate(item) for item in value]
    if isinstance(value, dict):
        return {key: interpolate(item) for key, item in value.items()}
    return value


def load_compose(path: Path = REPO_ROOT / "docker-compose.yml") -> dict:
    """The compose file, interpolated."""
    return interpolate(yaml.safe_load(path.read_text()))


def service_env(compose: dict, service: str) -> dict[str, str]:
    """A service's environment, values as strings."""
    return {key: str(value) for key, value in (compose["services"][service].get("environment") or {}).items()}


def service_argv(compose: dict, service: str) -> list[str]:
    """A service's command as an argument list (a ``sh -c`` string is split into its words)."""
    command = compose["services"][service].get("command", [])
    words = command if isinstance(command, list) else shlex.split(command)
    if words[:2] == ["/bin/sh", "-c"]:
        return shlex.split(words[2])
    return list(words)


def flag(words: list[str], name: str) -> str:
    """The value of ``-name=value`` or ``--name value`` in an argument list."""
    for index, word in enumerate(words):
        if word.startswith(f"{name}="):
            return word.split("=", 1)[1]
        if word == name:
            return words[index + 1]
    raise AssertionError(f"{name} missing from {words}")


def _replace_flag(words: list[str], name: str, value: str) -> list[str]:
    """``words`` with the value of ``-name=...`` or ``--name ...`` replaced (added when absent)."""
    out, index, found = [], 0, False
    while index < len(words):
        word = words[index]
        if word.startswith(f"{name}="):
            out.append(f"{name}={value}")
            found = True
        elif word == name:
            out += [name, value]
            index += 1
            found = True
        else:
            out.append(word)
        index += 1
    return out if found else [*out, f"{name}={value}"]


def start_object_store(compose: dict) -> tuple[object_store.SeaweedFS, dict[str, int]]:
    """``object-store``'s ``weed`` command on 127.0.0.1 with free ports; returns it and container -> local ports."""
    words = service_argv(compose, "object-store")
    keys = service_env(compose, "object-store")
    base_dir = Path(tempfile.mkdtemp(prefix="aip-compose-store-"))
    (base_dir / "data").mkdir()
    ports = {name: services.free_port() for name in object_store.PORT_FLAGS}
    container_ports = {name: int(flag(words, f"-{name}")) for name in ("s3.port", "s3.port.iceberg")}
    words = _replace_flag(words, "-dir", str(base_dir / "data"))
    words = _replace_flag(words, "-ip", services.LOOPBACK)
    words = _replace_flag(words, "-ip.bind", services.LOOPBACK)
    for name, port in ports.items():  # one host: every component port must be free, not only the published ones
        words = _replace_flag(words, f"-{name}", str(port))
    server = object_store.launch_weed(
        words,
        base_dir,
        ports,
        (keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"]),
        buckets=tuple(flag(words, "-bucket").split(",")),
        table_buckets=tuple(flag(words, "-tableBucket").split(",")),
    )
    return server, {f"object-store:{container_ports[name]}": ports[name] for name in container_ports}


def start_spark(compose: dict) -> tuple[services.SparkStandalone, dict[str, int]]:
    """``spark-master`` and ``spark-worker-1``'s commands on 127.0.0.1; returns them and container -> local ports."""
    home = services.spark_home()
    env = services.spark_process_env()
    base_dir = Path(tempfile.mkdtemp(prefix="aip-compose-spark-"))
    master_words = service_argv(compose, "spark-master")
    master_port = int(flag(master_words, "--port"))
    local_master, local_ui = services.free_port(), services.free_port()
    master_words = _replace_flag(master_words, "--host", services.LOOPBACK)
    master_words = _replace_flag(master_words, "--port", str(local_master))
    master_words = _replace_flag(master_words, "--webui-port", str(local_ui))
    master_words[0] = str(home / "bin" / "spark-class")
    cluster = services.SparkStandalone(f"spark://{services.LOOPBACK}:{local_master}", local_ui, base_dir)
    master = services._start("compose-spark-master", master_words, base_dir / "master.log", env=env)
    cluster.processes.append(master)
    try:
        services._wait_until(
            "Spark master",
            lambda: services._port_open(local_master) and services._port_open(local_ui),
            master,
            180,
        )
        worker_words = service_argv(compose, "spark-worker-1")
        worker_words = [cluster.master_url if w == f"spark://spark-master:{master_port}" else w for w in worker_words]
        worker_words = _replace_flag(worker_words, "--webui-port", str(services.free_port()))
        worker_words = _replace_flag(worker_words, "--work-dir", str(base_dir / "work"))
        worker_words = [*worker_words, "--host", services.LOOPBACK]
        worker_words[0] = str(home / "bin" / "spark-class")
        worker = services._start("compose-spark-worker", worker_words, base_dir / "worker.log", env=env)
        cluster.processes.append(worker)
        services._wait_until("Spark worker registration", lambda: _alive_workers(cluster) >= 1, worker, 180)
    except services.ServiceStartError:
        cluster.stop()
        raise
    return cluster, {f"spark-master:{master_port}": local_master}


def _alive_workers(cluster: services.SparkStandalone) -> int:
    """Workers the master reports; 0 while its status page still answers with something that is not JSON."""
    try:
        return cluster.alive_workers()
    except ValueError:
        return 0


def airflow_environment(compose: dict, local_ports: dict[str, int], data_dir: Path) -> dict[str, str]:
    """The scheduler's environment with service addresses and the shared volume mapped to this host.

    The metadata database stays the tests' own; everything else is the compose file's.
    """
    environment = service_env(compose, "airflow-scheduler")
    shared = next(
        target
        for volume in compose["services"]["airflow-scheduler"]["volumes"]
        if volume.startswith("shared-data:")
        for target in [volume.split(":")[1]]
    )
    mapped = {}
    for key, original in environment.items():
        if key.startswith(("AIRFLOW__DATABASE__", "AIRFLOW__CORE__EXECUTION_API")):
            continue
        value = original
        for address, port in local_ports.items():
            value = value.replace(address, f"{services.LOOPBACK}:{port}")
        mapped[key] = value.replace(shared, str(data_dir))
    spark = json.loads(mapped["AIRFLOW_CONN_SPARK_DEFAULT"])
    master = next(port for address, port in local_ports.items() if address.startswith("spark-master:"))
    spark.update(host=f"spark://{services.LOOPBACK}", port=master)
    mapped["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps(spark)
    mapped.pop("AIRFLOW__LOGGING__BASE_LOG_FOLDER", None)
    mapped.pop("AIRFLOW__CORE__DAGS_FOLDER", None)
    mapped.pop("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE", None)
    return mapped
