"""The Spark provider at another release than the virtualenv's: installed into a folder, and a pytest plugin.

The provider's compatibility seam (``airflow_iceberg_provider/hooks/spark_submit_compat.py``) is tested against the
oldest and the newest release that pyproject.toml's pin allows, without touching the shared virtualenv:

1. ``pinned_releases()`` reads the pin from pyproject.toml and asks pip's index for the releases it allows (one
   look-up of this one package); the oldest and the newest are checked.
2. ``install(version)`` installs that release alone (``--no-deps``: its dependencies are the virtualenv's) into a
   folder under ``$AIP_CACHE_DIR`` (default ``~/.cache/airflow-iceberg-provider``), once per machine.
3. ``python -m tests.support.spark_provider_release FOLDER PYTEST_ARGS...`` runs pytest with a finder, installed
   before anything imports Airflow, that takes ``airflow.providers.apache.spark`` from FOLDER (Airflow imports its
   providers while it starts, and ``airflow``'s package path lists the virtualenv first); FOLDER first on
   ``PYTHONPATH`` makes the distribution's metadata that release's too.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import re
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from packaging.requirements import Requirement
from packaging.version import Version

from tests.support.java_env import cache_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTION = "apache-airflow-providers-apache-spark"


def pinned_requirement() -> Requirement:
    """pyproject.toml's requirement on the Spark provider."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for line in project["dependencies"]:
        requirement = Requirement(line)
        if requirement.name == DISTRIBUTION:
            return requirement
    raise LookupError(f"pyproject.toml does not require {DISTRIBUTION}")


def pinned_releases() -> list[Version]:
    """Every final release the pin allows, oldest first (from pip's index)."""
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", DISTRIBUTION],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    found = re.search(r"Available versions: (.+)", listing.stdout)
    if listing.returncode != 0 or found is None:
        raise RuntimeError(f"pip index versions {DISTRIBUTION} failed:\n{listing.stdout}\n{listing.stderr}")
    specifier = pinned_requirement().specifier
    versions = sorted(Version(text.strip()) for text in found.group(1).split(","))
    return [v for v in versions if not v.is_prerelease and v in specifier]


def install(version: Version) -> Path:
    """A folder holding that release alone (installed once; a finished install has its marker file)."""
    folder = cache_dir() / f"spark-provider-{version}"
    marker = folder / ".installed"
    if not marker.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--upgrade",
                "--target",
                str(folder),
                f"{DISTRIBUTION}=={version}",
            ],
            check=True,
            timeout=300,
        )
        marker.write_text(str(version), encoding="utf-8")
    return folder


class _ReleaseFinder(importlib.abc.MetaPathFinder):
    """Finds ``airflow.providers.apache.spark`` in the release's folder (its submodules follow its ``__path__``)."""

    def __init__(self, folder: Path) -> None:
        self.parent = str(folder / "airflow" / "providers" / "apache")

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "airflow.providers.apache.spark":
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.parent])


def run_pytest(folder: Path, arguments: list[str]) -> int:
    """pytest with the release in ``folder`` imported instead of the virtualenv's (before anything imports it)."""
    if "airflow.providers.apache.spark" in sys.modules:
        raise RuntimeError("the Spark provider was imported before its release could be chosen")
    sys.meta_path.insert(0, _ReleaseFinder(folder))
    import pytest

    return int(pytest.main(arguments))


if __name__ == "__main__":
    sys.exit(run_pytest(Path(sys.argv[1]), sys.argv[2:]))
