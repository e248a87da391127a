"""This user's folders and files under the temp folder: made private, checked before each use, and bypassed (or
refused) when another user owns them, others may write them, or a link stands in their place.

Another local user is played by uid 65534 (``nobody``): the tests run as root here and ``chown`` to it. The system
temp folder is a fresh folder of the test (``tempfile.tempdir``), mode 1777 like /tmp.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from airflow_iceberg_provider.private_files import private_directory, private_file, why_not_private

OTHER_USER = 65534


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A sticky, world-writable temp folder of this test, as the system's."""
    root = tmp_path / "tmp"
    root.mkdir()
    root.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_new_folder_is_made_private_and_reused(temp_root: Path) -> None:
    first = private_directory("aip-demo")
    assert first == temp_root / f"aip-demo-{os.getuid()}"
    assert _mode(first) == 0o700 and first.lstat().st_uid == os.getuid()
    assert private_directory("aip-demo") == first


@pytest.mark.parametrize("plant", ["other-owner", "world-writable", "readable-by-others", "symlink", "a-file"])
def test_a_planted_folder_is_bypassed_or_refused(temp_root: Path, plant: str) -> None:
    planted = temp_root / f"aip-{plant}-{os.getuid()}"
    if plant == "symlink":
        elsewhere = temp_root / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        planted.symlink_to(elsewhere)
    elif plant == "a-file":
        planted.write_text("")
    else:
        planted.mkdir()
        planted.chmod({"other-owner": 0o700, "world-writable": 0o777, "readable-by-others": 0o755}[plant])
        if plant == "other-owner":
            os.chown(planted, OTHER_USER, OTHER_USER)
    assert why_not_private(planted, "directory") is not None
    used = private_directory(f"aip-{plant}")
    assert used != planted and not str(used).startswith(str(planted))
    assert _mode(used) == 0o700 and used.lstat().st_uid == os.getuid()
    with pytest.raises(PermissionError, match="is not a private directory of this user"):
        private_directory(f"aip-{plant}", fallback=False)


def test_a_file_is_written_exclusively_and_reused_only_while_private(temp_root: Path) -> None:
    folder = private_directory("aip-files")
    path = private_file(folder, "settings.properties", b"level = warn\n")
    assert path.read_bytes() == b"level = warn\n" and _mode(path) == 0o600
    inode = path.stat().st_ino
    assert private_file(folder, "settings.properties", b"level = warn\n").stat().st_ino == inode  # reused
    path.chmod(0o666)  # writable by others: written anew
    rewritten = private_file(folder, "settings.properties", b"level = warn\n")
    assert _mode(rewritten) == 0o600 and rewritten.stat().st_ino != inode
    os.chown(rewritten, OTHER_USER, OTHER_USER)  # another owner, right content: written anew as this user's
    assert private_file(folder, "settings.properties", b"level = warn\n").lstat().st_uid == os.getuid()
    assert sorted(p.name for p in folder.iterdir()) == ["settings.properties"]  # no partial file left


def test_a_link_in_place_of_the_file_is_replaced_not_followed(temp_root: Path, tmp_path: Path) -> None:
    folder = private_directory("aip-links")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (folder / "settings.properties").symlink_to(victim)
    path = private_file(folder, "settings.properties", b"level = warn\n")
    assert not path.is_symlink() and path.read_bytes() == b"level = warn\n"
    assert victim.read_text() == "keep me"
