"""Provider metadata: Airflow discovers the package, and every hook/operator/sensor/trigger module is listed."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import airflow_iceberg_provider
from airflow_iceberg_provider.get_provider_info import PACKAGE_NAME, get_provider_info

PACKAGE_DIR = Path(airflow_iceberg_provider.__file__).parent


def _modules_in(kind: str) -> set[str]:
    return {
        f"airflow_iceberg_provider.{kind}.{m.name}"
        for m in pkgutil.iter_modules([str(PACKAGE_DIR / kind)])
        if not m.name.startswith("_")
    }


@pytest.mark.parametrize("kind", ["hooks", "operators", "sensors", "triggers"])
def test_every_module_of_a_kind_is_listed(kind: str) -> None:
    info = get_provider_info()
    listed = {module for entry in info.get(kind, []) for module in entry["python-modules"]}
    assert listed == _modules_in(kind)


def test_listed_modules_import() -> None:
    import importlib

    info = get_provider_info()
    for kind in ("hooks", "operators", "sensors", "triggers"):
        for entry in info.get(kind, []):
            for module in entry["python-modules"]:
                importlib.import_module(module)


def test_airflow_discovers_the_provider() -> None:
    from airflow.providers_manager import ProvidersManager

    providers = ProvidersManager().providers
    assert PACKAGE_NAME in providers
    assert providers[PACKAGE_NAME].data["package-name"] == PACKAGE_NAME


def test_extra_links_import_and_every_operator_has_the_spark_links() -> None:
    import importlib

    from airflow_iceberg_provider.operators.compact import IcebergCompactOperator
    from airflow_iceberg_provider.operators.read import IcebergReadOperator

    for path in get_provider_info()["extra-links"]:
        module, _, name = path.rpartition(".")
        assert getattr(importlib.import_module(module), name)().name
    read_links = {link.name for link in IcebergReadOperator.operator_extra_links}
    assert read_links == {"Spark UI", "Spark driver log"}
    assert {link.name for link in IcebergCompactOperator.operator_extra_links} == read_links | {"Compaction report"}


def test_the_distribution_carries_license_notice_type_hints_and_a_documentation_url() -> None:
    from importlib.metadata import distribution

    dist = distribution(PACKAGE_NAME)
    names = {Path(str(file)).name for file in dist.files or []}
    assert {"LICENSE", "NOTICE"} <= names, sorted(names)
    assert (Path(airflow_iceberg_provider.__file__).parent / "py.typed").is_file()
    urls = dict(entry.split(", ", 1) for entry in dist.metadata.get_all("Project-URL") or [])
    assert urls["Documentation"].startswith("https://")

    from airflow.providers_manager import ProvidersManager

    # Airflow 3.1 keeps the space after the comma of "Documentation, https://..." (3.2 strips it).
    shown = ProvidersManager().providers[PACKAGE_NAME].data["documentation-url"]
    assert shown.strip() == urls["Documentation"]


def _airflow_cli_json(*args: str, home: Path) -> list[dict[str, Any]]:
    """``airflow ARGS -o json`` run as a user would, in a fresh ``AIRFLOW_HOME``; its parsed output."""
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("airflow")), *args, "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout[done.stdout.index("[") :])


def test_the_cli_lists_the_provider_and_its_plugin(tmp_path: Path) -> None:
    """``airflow providers list`` shows the package, and ``airflow plugins`` the plugin from its entry point with
    the table health page in the navigation and the FastAPI app behind it."""
    providers = _airflow_cli_json("providers", "list", home=tmp_path)
    assert PACKAGE_NAME in {provider["package_name"] for provider in providers}
    plugins = {plugin["name"]: plugin for plugin in _airflow_cli_json("plugins", home=tmp_path)}
    plugin = plugins["iceberg_provider"]
    assert PACKAGE_NAME in str(plugin["source"])
    assert [app["url_prefix"] for app in plugin["fastapi_apps"]] == ["/iceberg"]
    views = {view["name"]: view for view in plugin["external_views"]}
    assert views["Iceberg table health"]["href"] == "/iceberg/health/"
