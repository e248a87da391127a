"""Where the ``spark_jobs`` package is on this machine, and a zip of it for ``--py-files``.

The Airflow side never imports ``spark_jobs`` (the command line is the contract); it only locates the installed
package with ``importlib.util.find_spec``, which does not run it. The zip is named after a hash of the package's
sources, built once per content in the temp directory and reused, and its name starts with ``spark_jobs`` so the
jobs see that spark-submit already ships the engine and do not add it again.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import tempfile
import zipfile
from pathlib import Path

ENGINE_PACKAGE = "spark_jobs"


class EnginePackageNotFoundError(RuntimeError):
    """The ``spark_jobs`` package is not installed where the Airflow worker runs."""


def engine_package_dir() -> Path:
    """The directory of the installed ``spark_jobs`` package."""
    spec = importlib.util.find_spec(ENGINE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EnginePackageNotFoundError(
            f"package {ENGINE_PACKAGE!r} is not importable on this Airflow worker; install airflow-iceberg-provider "
            "here, or pass application= and ship_engine=False with the package installed on the cluster"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def job_script(job: str) -> Path:
    """The spark-submit entry point of ``job`` (e.g. ``read`` -> ``.../spark_jobs/read.py``), which must exist."""
    script = engine_package_dir() / f"{job}.py"
    if not script.is_file():
        raise EnginePackageNotFoundError(
            f"job script {script} does not exist: this version of {ENGINE_PACKAGE} has no {job!r} job"
        )
    return script


@functools.cache
def engine_zip() -> Path:
    """A zip of the ``spark_jobs`` package (its ``.py`` files), built once per content."""
    package_dir = engine_package_dir()
    sources = sorted(path for path in package_dir.rglob("*.py") if "__pycache__" not in path.parts)
    digest = hashlib.sha256()
    for path in sources:
        digest.update(str(path.relative_to(package_dir)).encode())
        digest.update(path.read_bytes())
    target = (
        Path(tempfile.gettempdir()) / "airflow-iceberg-provider" / f"{ENGINE_PACKAGE}-{digest.hexdigest()[:16]}.zip"
    )
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sources:
            archive.write(path, Path(ENGINE_PACKAGE) / path.relative_to(package_dir))
    partial.replace(target)
    return target
