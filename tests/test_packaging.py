"""The install route the guide documents: one command builds the wheel, without a warning of ours, and the wheel
holds what an Airflow deployment needs (both packages, the plugin and provider entry points, licence files, type
hints) with metadata that points at the repository and its documentation, not at a package index page."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel as docs/guide.md builds it (``python -m pip wheel --no-deps -w dist .``), and pip's output."""
    dist = tmp_path_factory.mktemp("dist")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-w", str(dist), "."],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (built,) = dist.glob("airflow_iceberg_provider-*-py3-none-any.whl")
    return built, build.stdout + build.stderr


def test_the_build_prints_no_warning(wheel) -> None:
    _, output = wheel
    for word in ("Deprecat", "deprecat", "Warning", "!!"):
        assert word not in output, output[-3000:]


def test_the_wheel_holds_both_packages_the_plugin_licences_and_type_hints(wheel) -> None:
    built, _ = wheel
    names = set(zipfile.ZipFile(built).namelist())
    assert {name.split("/")[0] for name in names} == {
        "airflow_iceberg_provider",
        "spark_jobs",
        built.name.split("-py3")[0] + ".dist-info",
    }
    for required in (
        "airflow_iceberg_provider/plugins/iceberg_plugin.py",
        "airflow_iceberg_provider/plugins/reports.py",
        "airflow_iceberg_provider/py.typed",
        "spark_jobs/py.typed",
    ):
        assert required in names, required
    assert {Path(name).name for name in names if "/licenses/" in name} == {"LICENSE", "NOTICE"}


def test_the_metadata_names_the_licence_and_links_the_repository_and_docs(wheel) -> None:
    built, _ = wheel
    archive = zipfile.ZipFile(built)
    dist_info = next(name.split("/")[0] for name in archive.namelist() if ".dist-info/" in name)
    metadata = Parser().parsestr(archive.read(f"{dist_info}/METADATA").decode())
    assert metadata["License-Expression"] == "Apache-2.0"
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL") or [])
    assert set(urls) >= {"Repository", "Documentation", "Changelog"}
    for url in urls.values():
        assert url.startswith("https://") and "pypi.org" not in url, url
    assert urls["Documentation"] == urls["Repository"] + "/tree/main/docs"  # the documentation site's source
    entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    assert "[airflow.plugins]" in entry_points and "IcebergProviderPlugin" in entry_points
    assert "[apache_airflow_provider]" in entry_points
    # The demo installs these and nothing of the test extra.
    requires = metadata.get_all("Requires-Dist") or []
    runtime = [line for line in requires if "extra ==" not in line]
    assert not any(name in " ".join(runtime) for name in ("pytest", "hypothesis", "seaweedfs", "mypy", "mkdocs"))
