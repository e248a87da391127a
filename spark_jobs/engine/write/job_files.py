"""Find and delete files a write job left behind: every file it names carries the job's write id.

Spark may run a task twice (a retried or speculative attempt); the losing attempt's files are in no result the
driver sees. After a commit (or a failure), listing the table's data directory for the write id finds them.
"""

from __future__ import annotations

import logging

from pyarrow import fs
from pyiceberg.io import FileIO

log = logging.getLogger(__name__)


def files_of_write(table_location: str, write_id: str) -> list[str]:
    """Paths (as the table names them) under ``<location>/data`` whose file name contains ``write_id``."""
    data_dir = table_location.rstrip("/") + "/data"
    try:
        filesystem, root = fs.FileSystem.from_uri(data_dir)
    except (ValueError, OSError) as error:
        log.warning("cannot list %s to find files of write %s: %s", data_dir, write_id, error)
        return []
    try:
        infos = filesystem.get_file_info(fs.FileSelector(root, recursive=True, allow_not_found=True))
    except OSError as error:
        log.warning("cannot list %s to find files of write %s: %s", data_dir, write_id, error)
        return []
    found = []
    for info in infos:
        if info.type == fs.FileType.File and write_id in info.base_name:
            found.append(data_dir + info.path[len(root.rstrip("/")) :])
    return found


def delete_leftovers(table_location: str, write_id: str, keep: set[str], io: FileIO) -> list[str]:
    """Delete the write's files that are not in ``keep`` (the committed ones); returns the paths deleted."""
    deleted = []
    for path in files_of_write(table_location, write_id):
        if path in keep:
            continue
        try:
            io.delete(path)
            deleted.append(path)
        except OSError as error:
            log.warning("could not delete %s left by write %s: %s", path, write_id, error)
    return deleted
