"""The hooks' tests pass on the oldest and the newest Spark provider release that pyproject.toml's pin allows.

Each release is installed alone into a cached folder (tests/support/spark_provider_release.py) and the tests of the
compatibility seam and of the job hook run in a pytest of their own that imports the provider from there; the first
of those tests checks that the release imported is the one under test.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.spark_provider_release import REPO_ROOT, install, pinned_releases

HOOK_TESTS = (
    "tests/airflow_iceberg_provider/hooks/test_spark_submit_compat.py",
    "tests/airflow_iceberg_provider/hooks/test_spark_job.py",
)


@pytest.fixture(scope="module")
def releases() -> list[str]:
    allowed = pinned_releases()
    assert allowed, "no release of the Spark provider satisfies pyproject.toml's pin"
    return [str(allowed[0]), str(allowed[-1])]


@pytest.mark.parametrize("end", ["oldest", "newest"])
def test_hook_tests_pass_on_the_pins_oldest_and_newest_release(end: str, releases: list[str]) -> None:
    version = releases[0] if end == "oldest" else releases[-1]
    folder = install(version)
    env = {
        **os.environ,
        "AIP_EXPECTED_SPARK_PROVIDER": version,
        "PYTHONPATH": os.pathsep.join(p for p in (str(folder), str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.spark_provider_release",
            str(folder),
            "-q",
            "-p",
            "no:cacheprovider",
            *HOOK_TESTS,
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, f"the hook tests failed on {version}:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
