"""The spark_jobs zip for --py-files: built once per content, importable, named so the jobs do not ship it again."""

from __future__ import annotations

import zipfile

import pytest

from airflow_iceberg_provider.engine_package import (
    EnginePackageNotFoundError,
    engine_package_dir,
    engine_zip,
    job_script,
)


def test_the_zip_holds_the_package_and_is_reused() -> None:
    archive_path = engine_zip()
    assert archive_path.name.startswith("spark_jobs-") and archive_path.suffix == ".zip"
    assert engine_zip() == archive_path
    with zipfile.ZipFile(archive_path) as archive:
        names = set(archive.namelist())
    assert {"spark_jobs/__init__.py", "spark_jobs/read.py", "spark_jobs/job_support.py"} <= names
    expected = {
        f"spark_jobs/{path.relative_to(engine_package_dir())}"
        for path in engine_package_dir().rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert names == expected


def test_job_scripts_are_found_and_missing_ones_named() -> None:
    assert job_script("read").name == "read.py"
    with pytest.raises(EnginePackageNotFoundError, match="has no 'vacuum' job"):
        job_script("vacuum")
