"""Where a read job's output is (``spark/output_location.py``): local or not, and its staging sibling."""

from __future__ import annotations

import re
from pathlib import Path

from spark_jobs.spark.output_location import local_path, staging_location


def test_local_paths() -> None:
    assert local_path("/tmp/x") == Path("/tmp/x")
    assert local_path("file:///tmp/x") == Path("/tmp/x")
    assert local_path("file:/tmp/x") == Path("/tmp/x")
    assert local_path("relative/x") == Path("relative/x").absolute()
    assert local_path("s3://bucket/x") is None
    assert local_path("hdfs://nn/x") is None


def test_the_staging_location_is_a_hidden_sibling_of_the_output() -> None:
    assert re.fullmatch(r"/tmp/\.out\.staging-[0-9a-f]{12}", staging_location("/tmp/out/"))
    assert re.fullmatch(r"s3://b/exports/\.day\.staging-[0-9a-f]{12}", staging_location("s3://b/exports/day"))
    assert re.fullmatch(r"\.out\.staging-[0-9a-f]{12}", staging_location("out"))
    assert staging_location("/tmp/out") != staging_location("/tmp/out")  # one per run
