"""The type checker's configuration: what ``mypy`` with no arguments checks, and the type hints both packages ship."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spark_jobs", "airflow_iceberg_provider")


def _pyproject() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def test_mypy_with_no_arguments_checks_both_packages_with_untyped_definitions_disallowed() -> None:
    mypy = _pyproject()["tool"]["mypy"]
    assert sorted(mypy["files"]) == sorted(PACKAGES)
    assert mypy["disallow_untyped_defs"] is True
    assert "pydantic.mypy" in mypy["plugins"]
    ignored = {module for override in mypy.get("overrides", []) for module in override["module"]}
    assert not any(module.startswith(PACKAGES) for module in ignored), "our own modules are never exempted"


def test_both_packages_ship_py_typed() -> None:
    package_data = _pyproject()["tool"]["setuptools"]["package-data"]
    for package in PACKAGES:
        assert (REPO_ROOT / package / "py.typed").is_file()
        assert "py.typed" in package_data[package]


def test_the_test_command_runs_ruff_then_mypy_then_pytest() -> None:
    commands = [
        " ".join(line.split()[:3])
        for line in (REPO_ROOT / "scripts" / "test.sh").read_text().splitlines()
        if line.startswith(("ruff", "mypy", "python -m pytest"))
    ]
    assert commands == ["ruff check .", "ruff format --check", "mypy", "python -m pytest"]
    assert "mypy" in " ".join(_pyproject()["project"]["optional-dependencies"]["test"])
