"""Where the ``spark_jobs`` package is on this machine, and a zip of it for ``--py-files``.

The Airflow side never imports ``spark_jobs`` (the command line is the contract); it only locates the installed
package with ``importlib.util.find_spec``, which does not run it. The zip is named after a hash of the package's
sources and of the bytecode version, built once per content and reused, and its name starts with ``spark_jobs`` so
the jobs see that spark-submit already ships the engine and do not add it again. It lives in a directory of this
user's only (``<temp>/airflow-iceberg-provider-<uid>``, mode 0700, checked to be a real directory this user owns
before any reuse, else a new folder of this process: ``private_files``), and a zip is reused only when it is this
user's and writable by no one else (else it is built again, created exclusively), so no other local user can plant a
zip that the job would run with its credentials.

Each module is stored with its hash-checked bytecode beside it: a Python worker importing from a zip cannot cache
what it compiles, so without it every worker compiles the engine again. An interpreter of another version ignores
the bytecode and compiles the source, as Python's zip importer does for any bytecode it cannot use.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import marshal
import os
import zipfile
from pathlib import Path

from airflow_iceberg_provider import private_files
from airflow_iceberg_provider.private_files import exclusive_partial, why_not_private

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
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER)
    for path in sources:
        digest.update(str(path.relative_to(package_dir)).encode())
        digest.update(path.read_bytes())
    directory = private_directory()
    name = f"{ENGINE_PACKAGE}-{digest.hexdigest()[:16]}.zip"
    target = directory / name
    if target.exists() and why_not_private(target, "file") is None:
        return target
    partial, descriptor = exclusive_partial(directory, name)
    with os.fdopen(descriptor, "wb") as stream, zipfile.ZipFile(stream, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sources:
            name_in_zip = Path(ENGINE_PACKAGE) / path.relative_to(package_dir)
            archive.write(path, name_in_zip)
            bytecode = checked_bytecode(path.read_bytes(), name_in_zip.as_posix())
            if bytecode is not None:
                archive.writestr(name_in_zip.with_suffix(".pyc").as_posix(), bytecode)
    partial.replace(target)  # over a zip that was not private (mode or owner): this user's own, rebuilt
    return target


def checked_bytecode(source: bytes, name: str) -> bytes | None:
    """A ``.pyc`` of ``source`` that checks the source's hash when loaded (PEP 552); None if it cannot compile."""
    try:
        code = compile(source, name, "exec", dont_inherit=True)
    except SyntaxError:
        return None
    checked_hash_flags = (0b11).to_bytes(4, "little")
    return importlib.util.MAGIC_NUMBER + checked_hash_flags + importlib.util.source_hash(source) + marshal.dumps(code)


def private_directory() -> Path:
    """This user's folder for built zips, ``<temp>/airflow-iceberg-provider-<uid>`` (``private_files``: mode 0700,
    checked before every use; a new folder of this process when what is there is not private)."""
    return private_files.private_directory(private_files.PROVIDER_FOLDER)
