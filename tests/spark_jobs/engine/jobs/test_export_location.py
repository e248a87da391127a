"""An export's output: local or not, a staging name beside it, and refused before any work when not free."""

from __future__ import annotations

import pytest

from spark_jobs.engine.jobs.export_location import check_output_free, existing_files, local_path, staging_location
from spark_jobs.engine.shared.errors import UserInputError


def test_local_paths_and_uris() -> None:
    assert local_path("file:///tmp/x") is not None
    assert local_path("s3://bucket/x") is None
    assert staging_location("/data/out/").startswith("/data/.out.staging-")


def test_an_existing_output_is_refused_with_mode_error_only(tmp_path) -> None:
    output = tmp_path / "out"
    output.mkdir()
    with pytest.raises(UserInputError, match="already exists; pass --mode overwrite"):
        check_output_free(str(output), "error", {})
    check_output_free(str(output), "overwrite", {})


def test_an_output_under_a_regular_file_is_refused(tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserInputError, match="which is a regular file"):
        check_output_free(str(tmp_path / "file" / "out"), "overwrite", {})


def test_existing_files_lists_a_tree(tmp_path) -> None:
    from pyarrow import fs

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b.parquet").write_bytes(b"1")
    local = fs.LocalFileSystem()
    assert existing_files(local, str(tmp_path / "a")) == [str(tmp_path / "a" / "b.parquet")]
    assert existing_files(local, str(tmp_path / "none")) == []
