"""Where a read job's ``--output`` is, the hidden staging location beside it, and whether it is free.

``local_path`` and ``staging_location`` use the standard library only, so the read job can ask before Spark starts
without delaying it. Both export routes, Spark's writer (``spark/export.py``) and the driver's
(``spark/driver_read.py``), stage beside the output under the same name, so a reader of the output's directory skips
either (Spark and Hive readers skip names starting with ``.``).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from spark_jobs.engine.shared.errors import UserInputError

if TYPE_CHECKING:
    from pyarrow import fs


def local_path(output: str) -> Path | None:
    """``output`` as an absolute local path (a plain path or a ``file:`` URI), or None for any other scheme."""
    if output.startswith("file://"):
        return Path(output.removeprefix("file://")).absolute()
    if output.startswith("file:"):
        return Path(output.removeprefix("file:")).absolute()
    if "://" in output:
        return None
    return Path(output).absolute()


def staging_location(output: str) -> str:
    """A hidden sibling of ``output`` to write into first: ``.<name>.staging-<id>``."""
    trimmed = output.rstrip("/")
    parent, _, name = trimmed.rpartition("/")
    staging_name = f".{name}.staging-{uuid.uuid4().hex[:12]}"
    return f"{parent}/{staging_name}" if parent or trimmed.startswith("/") else staging_name


def existing_files(filesystem: fs.FileSystem, root: str) -> list[str]:
    """Paths of the files at or under ``root`` (empty when nothing is there)."""
    from pyarrow import fs

    info = filesystem.get_file_info(root)
    if info.type == fs.FileType.File:
        return [root]
    if info.type == fs.FileType.NotFound:
        return []
    selector = fs.FileSelector(root, recursive=True, allow_not_found=True)
    return [i.path for i in filesystem.get_file_info(selector) if i.type == fs.FileType.File]


def check_output_free(output: str, mode: str, storage_properties: dict[str, str]) -> None:
    """Refuse, before any work, a local output under a regular file, or one that exists with mode error.

    An object-store output is looked at with the catalog's storage properties; when that fails (the cluster may
    reach it with other credentials), the writer's own check decides. Other remote outputs are checked by the writer.
    """
    path = local_path(output)
    if path is None:
        if mode == "error":
            _check_object_store_output_free(output, storage_properties)
        return
    for ancestor in path.parents:
        if ancestor.is_file():
            raise UserInputError(f"--output {output} is under {ancestor}, which is a regular file, not a directory")
    if mode == "error" and path.exists():
        raise UserInputError(f"--output {output} already exists; pass --mode overwrite to replace it")


def _check_object_store_output_free(output: str, storage_properties: dict[str, str]) -> None:
    """Refuse an existing object-store output, listed with the catalog's storage properties."""
    from spark_jobs.engine.shared.storage import file_system, is_object_store

    if not is_object_store(output):
        return
    try:
        filesystem, path = file_system(output, storage_properties)
        found = existing_files(filesystem, path.rstrip("/"))
    except OSError:
        return
    if found:
        raise UserInputError(f"--output {output} already exists; pass --mode overwrite to replace it")
