"""The installed dependency set is coherent: pyspark agrees with itself, with pyspark-client and with its JVM."""

from __future__ import annotations

import base64
import hashlib
from importlib import metadata
from pathlib import Path

import pytest


def test_pyspark_client_is_the_same_release_as_pyspark() -> None:
    """pyspark-client installs into pyspark/ too: a different release silently overwrites pyspark's files."""
    assert metadata.version("pyspark-client") == metadata.version("pyspark")


def test_pyspark_python_files_are_the_ones_pyspark_installed() -> None:
    """Every pyspark/*.py file still has the hash pyspark's RECORD lists (nothing overwrote it)."""
    dist = metadata.distribution("pyspark")
    changed = []
    checked = 0
    for entry in dist.files or []:
        if entry.hash is None or entry.hash.mode != "sha256" or not str(entry).endswith(".py"):
            continue
        path = Path(str(dist.locate_file(entry)))
        digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()
        checked += 1
        if digest != entry.hash.value:
            changed.append(str(entry))
    assert checked > 100, "pyspark's RECORD lists too few Python files to check"
    assert not changed, f"{len(changed)} pyspark files were overwritten by another package, e.g. {changed[:5]}"


@pytest.mark.spark
def test_pyspark_version_matches_the_jvm(spark) -> None:
    """The Python side and the JVM side of Spark are the same release."""
    import pyspark

    assert pyspark.__version__ == spark.version == metadata.version("pyspark")


def test_pandas_is_below_3() -> None:
    """PySpark warns about pandas 3; the project pins pandas<3."""
    assert int(metadata.version("pandas").split(".")[0]) < 3
