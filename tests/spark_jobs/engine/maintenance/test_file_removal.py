"""Removing files one by one: what was removed, what was already gone, what failed and why; nothing stops early."""

from __future__ import annotations

from pathlib import Path

from pyiceberg.io.pyarrow import PyArrowFileIO

from spark_jobs.engine.maintenance.file_removal import remove_files


class RefusingFileIO(PyArrowFileIO):
    """The local FileIO, except that deleting one path fails as a storage error would (injected fault)."""

    def __init__(self, refused: str) -> None:
        super().__init__()
        self.refused = refused

    def delete(self, location: str) -> None:  # type: ignore[override]
        if location == self.refused:
            raise PermissionError(f"access denied: {location}")
        super().delete(location)


def test_each_file_is_reported_and_one_failure_stops_nothing(tmp_path: Path) -> None:
    paths = []
    for name in ("a", "b", "c"):
        (tmp_path / name).write_text(name)
        paths.append(f"file://{tmp_path / name}")
    gone = f"file://{tmp_path / 'never-there'}"
    outcome = remove_files(RefusingFileIO(refused=paths[1]), [paths[2], paths[1], gone, paths[0], paths[0]])
    assert outcome.removed == [paths[0], paths[2]]
    assert outcome.already_gone == [gone]
    assert outcome.failed == {paths[1]: f"PermissionError: access denied: {paths[1]}"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_the_hadoop_checksum_of_a_removed_local_file_goes_with_it(tmp_path: Path) -> None:
    # Iceberg Java's local writes leave ``.NAME.crc`` beside each file; orphan removal never lists hidden files, so
    # a checksum the file's removal left behind would stay for good (Java's file system deletes it with the file).
    for name in ("a.parquet", "b.parquet", "kept.parquet"):
        (tmp_path / name).write_text(name)
        (tmp_path / f".{name}.crc").write_text("crc")
    (tmp_path / "c.parquet").write_text("no checksum")
    refused = f"file://{tmp_path / 'b.parquet'}"
    outcome = remove_files(
        RefusingFileIO(refused=refused),
        [f"file://{tmp_path / 'a.parquet'}", refused, str(tmp_path / "c.parquet")],
    )
    assert outcome.removed == [str(tmp_path / "c.parquet"), f"file://{tmp_path / 'a.parquet'}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".b.parquet.crc",
        ".kept.parquet.crc",
        "b.parquet",
        "kept.parquet",
    ]
