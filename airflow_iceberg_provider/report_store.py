"""Where compaction reports are stored, and how they are written and read back for the Airflow UI.

1. Reports live under one root, ``ICEBERG_PROVIDER_REPORT_ROOT`` (default ``<ICEBERG_PROVIDER_OUTPUT_ROOT>/reports``):
   a local path every Airflow component mounts, or a URI such as ``s3://bucket/prefix``.
2. A task's report is ``<root>/<dag_id>/<run>/<task_id>.html`` (``<task_id>.<map_index>.html`` for a mapped task):
   every part a safe name (``SAFE_NAME``: letters, digits, ``_ . -``, never starting with a dot), so a report's
   path below the root can be checked before anything is opened, and the DAG it belongs to is its first part.
3. Reports are written and read through pyiceberg's FileIO for the location (local files, S3, GCS, ADLS), configured
   with the storage properties of a catalog (``s3.endpoint``, keys, region, ...); without keys there, the FileIO
   uses the machine's default credentials (instance role, environment). A local root is read as plain files, after
   checking that the resolved path stays inside the resolved root (no link leads out of it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
REPORT_SUFFIX = ".html"
# A report is a few kilobytes; anything far larger under the root is not one of ours.
MAX_REPORT_BYTES = 16 * 1024 * 1024


class ReportNotFoundError(LookupError):
    """No report file at that path under the root."""


def safe_name(text: str) -> str:
    """``text`` with every character outside ``SAFE_NAME`` replaced by ``_`` (a leading dot too)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", text)
    return "_" + name[1:] if not name or not SAFE_NAME.fullmatch(name) else name


def task_report_path(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """The report's path below the root for one task instance: ``<dag>/<run>/<task>[.<map index>].html``."""
    name = task_id if map_index < 0 else f"{task_id}.{map_index}"
    return "/".join(safe_name(part) for part in (dag_id, run_id, name)) + REPORT_SUFFIX


def report_parts(relative: str) -> list[str]:
    """The parts of a report's path below the root, checked; ``ValueError`` for anything that is not a report path.

    A report path has three or more parts (DAG, run, file), each a ``SAFE_NAME`` (so no ``..``, no empty part, no
    hidden file, no separator or scheme), and ends in ``.html``.
    """
    parts = relative.split("/")
    if len(parts) < 3 or not all(SAFE_NAME.fullmatch(part) for part in parts):
        raise ValueError(f"not a report path: {relative!r} (expected <dag_id>/<run>/<task>.html of safe names)")
    if not parts[-1].endswith(REPORT_SUFFIX) or parts[-1] == REPORT_SUFFIX:
        raise ValueError(f"not a report path: {relative!r} (a report is an .html file)")
    return parts


def is_local(location: str) -> bool:
    """Whether ``location`` is a local path (no scheme, or ``file://``)."""
    return "://" not in location or location.startswith("file://")


def _local_path(location: str) -> Path:
    return Path(urlsplit(location).path if location.startswith("file://") else location)


def report_location(root: str, relative: str) -> str:
    """The full location of the report ``relative`` (checked by ``report_parts``) under ``root``."""
    report_parts(relative)
    return f"{root.rstrip('/')}/{relative}"


def relative_report_path(root: str, location: str) -> str | None:
    """``location``'s path below ``root`` when it is a report path there, else ``None``."""
    if is_local(root) != is_local(location):
        return None
    if is_local(root):
        base, full = _local_path(root).absolute(), _local_path(location).absolute()
        if not full.is_relative_to(base):
            return None
        relative = full.relative_to(base).as_posix()
    else:
        prefix = root.rstrip("/") + "/"
        if not location.startswith(prefix):
            return None
        relative = location[len(prefix) :]
    try:
        report_parts(relative)
    except ValueError:
        return None
    return relative


def write_report(location: str, text: str, storage_properties: Mapping[str, str]) -> None:
    """Write ``text`` to ``location`` (a local path or a URI) through the FileIO the storage properties configure."""
    from pyiceberg.io import load_file_io

    with load_file_io(dict(storage_properties), location).new_output(location).create(overwrite=True) as stream:
        stream.write(text.encode("utf-8"))


def read_report(root: str, relative: str, storage_properties: Mapping[str, str]) -> bytes:
    """The bytes of the report ``relative`` under ``root``; ``ReportNotFoundError`` when there is none.

    ``relative`` must be a report path (``report_parts``); a local root is read only inside its resolved folder.
    """
    location = report_location(root, relative)
    if is_local(root):
        base = _local_path(root).resolve()
        path = _local_path(location).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            raise ReportNotFoundError(relative)
        if path.stat().st_size > MAX_REPORT_BYTES:
            raise ValueError(f"{relative} is larger than a report ({MAX_REPORT_BYTES} bytes)")
        return path.read_bytes()
    from pyiceberg.io import load_file_io

    report = load_file_io(dict(storage_properties), location).new_input(location)
    try:
        size = len(report)
    except FileNotFoundError as missing:
        raise ReportNotFoundError(relative) from missing
    if size > MAX_REPORT_BYTES:
        raise ValueError(f"{relative} is larger than a report ({MAX_REPORT_BYTES} bytes)")
    with report.open() as stream:
        return stream.read()
