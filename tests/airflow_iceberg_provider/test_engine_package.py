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
    sources = {
        f"spark_jobs/{path.relative_to(engine_package_dir())}"
        for path in engine_package_dir().rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert names == sources | {name + "c" for name in sources}


def test_workers_import_the_zip_s_bytecode_and_fall_back_to_a_changed_source(tmp_path) -> None:
    """A module imports from its bytecode; bytecode whose source hash no longer matches is ignored for the source."""
    import subprocess
    import sys

    with zipfile.ZipFile(engine_zip()) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    changed = tmp_path / "changed.zip"
    with zipfile.ZipFile(changed, "w") as archive:
        for name, data in members.items():
            extra = b"\nCHANGED_AFTER_COMPILING = True\n" if name == "spark_jobs/job_contract.py" else b""
            archive.writestr(name, data + extra)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import spark_jobs.job_contract as m; "
        "print(m.__file__.rsplit('/', 1)[-1], getattr(m, 'CHANGED_AFTER_COMPILING', False))"
    )

    def imported(zip_path) -> str:
        return subprocess.run(
            [sys.executable, "-c", probe, str(zip_path)], capture_output=True, text=True, check=True
        ).stdout.strip()

    assert imported(engine_zip()) == "job_contract.pyc False"
    assert imported(changed) == "job_contract.py True"


def test_job_scripts_are_found_and_missing_ones_named() -> None:
    assert job_script("read").name == "read.py"
    with pytest.raises(EnginePackageNotFoundError, match="has no 'vacuum' job"):
        job_script("vacuum")


def test_the_zip_directory_is_private_to_this_user() -> None:
    import os
    import stat

    directory = engine_zip().parent
    status = directory.lstat()
    assert stat.S_ISDIR(status.st_mode) and not stat.S_ISLNK(status.st_mode)
    assert status.st_uid == os.getuid() and stat.S_IMODE(status.st_mode) == 0o700


def _planted_folder(tmp_path, plant: str):
    import os

    planted = tmp_path / f"airflow-iceberg-provider-{os.getuid()}"
    if plant == "symlink":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        planted.symlink_to(elsewhere)
        return planted
    planted.mkdir()
    planted.chmod(0o777 if plant == "world-writable" else 0o700)
    if plant == "other-owner":
        os.chown(planted, 65534, 65534)  # uid nobody: another local user
    return planted


@pytest.mark.parametrize("plant", ["world-writable", "other-owner", "symlink"])
def test_a_folder_another_user_could_change_is_not_used_for_the_zip(monkeypatch, tmp_path, plant) -> None:
    import os
    import stat
    import tempfile

    from airflow_iceberg_provider import engine_package

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = _planted_folder(tmp_path, plant)
    engine_package.engine_zip.cache_clear()
    try:
        built = engine_package.engine_zip()
    finally:
        engine_package.engine_zip.cache_clear()
    assert built.parent != planted and not list(planted.resolve().glob("*.zip"))
    status = built.parent.lstat()
    assert status.st_uid == os.getuid() and stat.S_IMODE(status.st_mode) == 0o700


def test_a_zip_another_user_could_have_replaced_is_built_again(monkeypatch, tmp_path) -> None:
    import os
    import tempfile

    from airflow_iceberg_provider import engine_package

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    engine_package.engine_zip.cache_clear()
    try:
        built = engine_package.engine_zip()
        built.write_bytes(b"planted")
        built.chmod(0o666)
        engine_package.engine_zip.cache_clear()
        again = engine_package.engine_zip()
    finally:
        engine_package.engine_zip.cache_clear()
    assert again == built and again.read_bytes()[:2] == b"PK" and not again.stat().st_mode & 0o022
    assert again.stat().st_uid == os.getuid()
