"""Find and delete files a write job left behind: every file it names carries the job's write id.

Spark may run a task twice (a retried or speculative attempt); the losing attempt's files are in no result the
driver sees. After a commit (or a failure), listing the table's data directory for the write id finds them.
"""

from __future__ import annotations

import logging

from pyarrow import fs
from pyiceberg.io import FileIO

log = logging.getLogger(__name__)


def files_of_write(table_location: str, write_id: str, io: FileIO | None = None) -> list[str]:
    """Paths (as the table names them) under ``<location>/data`` whose file name contains ``write_id``.

    Listed through ``io``'s file system (with the catalog's credentials) when it is pyiceberg's PyArrowFileIO.
    """
    data_dir = table_location.rstrip("/") + "/data"
    try:
        filesystem, root = _file_system(data_dir, io)
        infos = filesystem.get_file_info(fs.FileSelector(root, recursive=True, allow_not_found=True))
    except (ValueError, OSError) as error:
        log.warning(
            "cannot list %s (%s): files of write %s left by retried Spark tasks, if any, stay behind",
            data_dir,
            error,
            write_id,
        )
        return []
    found = []
    for info in infos:
        if info.type == fs.FileType.File and write_id in info.base_name:
            found.append(data_dir + info.path[len(root.rstrip("/")) :])
    return found


def delete_leftovers(table_location: str, write_id: str, keep: set[str], io: FileIO) -> list[str]:
    """Delete the write's files that are not in ``keep`` (the committed ones); returns the paths deleted."""
    deleted = []
    for path in files_of_write(table_location, write_id, io):
        if path in keep:
            continue
        try:
            io.delete(path)
            deleted.append(path)
        except OSError as error:
            log.warning("could not delete %s left by write %s (left behind): %s", path, write_id, error)
    return deleted


def _file_system(location: str, io: FileIO | None) -> tuple[fs.FileSystem, str]:
    """The file system to list ``location`` with: the FileIO's own, else one from the URI."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    if isinstance(io, PyArrowFileIO):
        scheme, netloc, path = io.parse_location(location, io.properties)
        return io.fs_by_scheme(scheme, netloc), path
    return fs.FileSystem.from_uri(location)
