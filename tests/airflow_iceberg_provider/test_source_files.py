"""Source markers: where a folder's marker file is, and whether it exists as seen through the FileIO the catalog's
properties configure (local paths and ``file://`` URIs here; S3 in the sensor's tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_iceberg_provider.source_files import marker_exists, marker_location


@pytest.mark.parametrize(
    ("path", "marker", "expected"),
    [
        ("/landing/2026-01-01/16", "_SUCCESS", "/landing/2026-01-01/16/_SUCCESS"),
        ("/landing/2026-01-01/16/", "_SUCCESS", "/landing/2026-01-01/16/_SUCCESS"),
        ("s3://landing/events//", "_READY", "s3://landing/events/_READY"),
        ("s3://landing/events/part-0.parquet", "", "s3://landing/events/part-0.parquet"),
    ],
)
def test_the_marker_is_inside_the_folder_or_the_path_itself(path: str, marker: str, expected: str) -> None:
    assert marker_location(path, marker) == expected


def test_a_local_marker_exists_only_once_written(tmp_path: Path) -> None:
    marker = tmp_path / "16" / "_SUCCESS"
    assert not marker_exists(str(marker), {})
    marker.parent.mkdir()
    (marker.parent / "part-0.parquet").write_bytes(b"PAR1")
    assert not marker_exists(str(marker), {})
    marker.touch()
    assert marker_exists(str(marker), {})


def test_a_file_uri_is_checked_with_the_catalogs_properties(tmp_path: Path) -> None:
    """A catalog's properties (here a SQL catalog's) configure the FileIO; a local warehouse needs none of them."""
    properties = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}"}
    (tmp_path / "_SUCCESS").touch()
    assert marker_exists(f"file://{tmp_path}/_SUCCESS", properties)
    assert not marker_exists(f"file://{tmp_path}/_READY", properties)


def test_a_file_io_that_cannot_be_built_is_an_error_not_a_missing_marker(tmp_path: Path) -> None:
    (tmp_path / "_SUCCESS").touch()
    with pytest.raises(ValueError, match="Could not initialize FileIO"):
        marker_exists(str(tmp_path / "_SUCCESS"), {"py-io-impl": "no_such_module.NoSuchFileIO"})
