"""Folders and files of this user only, under the system's temp folder: nothing another local user can plant, swap
or read.

A fixed name under the temp folder (``/tmp``, sticky and writable by all) can be created first by anyone. So:

1. ``private_directory(prefix)``: ``<temp>/<prefix>-<uid>``, created with mode 0700 when missing. It is used only
   when it is a real directory (not a symbolic link) that this user owns and no one else may enter or write
   (``why_not_private``). Otherwise: with ``fallback`` (caches the provider rebuilds at will: the engine zip, the
   log4j2 file) a new folder of this process (``mkdtemp``: mode 0700, unpredictable name, removed when the process
   exits) is used instead and a warning names the refused path; without it (a folder whose path must stay the same
   from task to task) ``PermissionError`` says what to remove.
2. ``private_file(directory, name, content)``: a file holding exactly ``content`` in such a folder. An existing one
   is reused only when it is a regular file of this user that no one else may write and it holds that content;
   otherwise it is written anew: created exclusively under a random name (``O_CREAT | O_EXCL | O_NOFOLLOW``, mode
   0600), then renamed over the name (atomic: a reader sees the old file or the new one).
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import secrets
import shutil
import stat
import tempfile
from contextlib import suppress
from pathlib import Path

log = logging.getLogger(__name__)
# The provider's own folder: ``<temp>/airflow-iceberg-provider-<uid>`` (the engine zip, the driver's log4j2 file).
PROVIDER_FOLDER = "airflow-iceberg-provider"
_DIRECTORY_OPEN_TO_OTHERS = 0o077
_FILE_WRITABLE_BY_OTHERS = 0o022


def private_directory(prefix: str, *, fallback: bool = True) -> Path:
    """This user's folder ``<temp>/<prefix>-<uid>`` (module doc, step 1)."""
    directory = Path(tempfile.gettempdir()) / f"{prefix}-{os.getuid()}"
    with suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    problem = why_not_private(directory, "directory")
    if problem is None:
        return directory
    if not fallback:
        raise PermissionError(f"{problem}: remove it, or set the location yourself")
    log.warning("%s; using a private folder of this process instead", problem)
    return _process_directory(prefix)


@functools.cache
def _process_directory(prefix: str) -> Path:
    """A new folder of this process only (mode 0700, unpredictable name), removed when the process exits."""
    directory = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def why_not_private(path: Path, kind: str) -> str | None:
    """Why ``path`` may not be used as this user's private ``kind`` ("directory" or "file"), or None when it may.

    Refused: a symbolic link, another kind of file, another owner, a directory others may enter, read or write, a
    file others may write.
    """
    try:
        status = path.lstat()
    except FileNotFoundError:
        return f"{path} does not exist"
    is_kind = stat.S_ISDIR(status.st_mode) if kind == "directory" else stat.S_ISREG(status.st_mode)
    open_to_others = status.st_mode & (_DIRECTORY_OPEN_TO_OTHERS if kind == "directory" else _FILE_WRITABLE_BY_OTHERS)
    if is_kind and status.st_uid == os.getuid() and not open_to_others:
        return None
    what = "a symbolic link" if stat.S_ISLNK(status.st_mode) else stat.filemode(status.st_mode)
    return (
        f"{path} is not a private {kind} of this user (uid {os.getuid()}): it is {what}, owned by uid {status.st_uid}"
    )


def private_file(directory: Path, name: str, content: bytes) -> Path:
    """``directory/name`` holding exactly ``content``, reused or written anew (module doc, step 2)."""
    target = directory / name
    if why_not_private(target, "file") is None and target.read_bytes() == content:
        return target
    partial, descriptor = exclusive_partial(directory, name)
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(content)
        os.replace(partial, target)
    except BaseException:
        with suppress(FileNotFoundError):
            partial.unlink()
        raise
    return target


def exclusive_partial(directory: Path, name: str) -> tuple[Path, int]:
    """A new file ``directory/.name.<random>.partial`` created exclusively (mode 0600): its path and descriptor, for a
    writer that renames it over ``name`` when done (as ``private_file`` does)."""
    partial = directory / f".{name}.{secrets.token_hex(8)}.partial"
    return partial, os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
