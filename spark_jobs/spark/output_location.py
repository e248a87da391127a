"""Where a read job's ``--output`` is: a local path or not, and the hidden staging location beside it.

Standard library only, so the read job can ask before Spark starts without delaying it. Both export routes, Spark's
writer (``read._write_output``) and the driver's (``spark.driver_read``), stage beside the output under the same
name, so a reader of the output's directory skips either (Spark and Hive readers skip names starting with ``.``).
"""

from __future__ import annotations

import uuid
from pathlib import Path


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
