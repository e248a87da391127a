"""Delete files through the table's FileIO, in parallel, counting what was removed and what could not be.

On a local file system a file Iceberg Java wrote has a hidden Hadoop checksum sibling (``.NAME.crc``). Java's
Hadoop file system deletes it with the file; here it is deleted after the file is, since orphan removal never lists
hidden files and would leave it behind for good. It is not counted: the counts are the table's files, as Java's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlparse

from pyiceberg.io import FileIO
from pyiceberg.utils.concurrent import ExecutorFactory

log = logging.getLogger("spark_jobs.maintenance")


@dataclass
class RemovalOutcome:
    """Locations removed, already gone, and failed (with the reason), for the job's JSON line."""

    removed: list[str] = field(default_factory=list)
    already_gone: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def remove_files(io: FileIO, locations: Iterable[str]) -> RemovalOutcome:
    """Delete each location; a missing file is not an error, any other failure is logged and reported."""
    outcome = RemovalOutcome()
    ordered = sorted(set(locations))
    executor = ExecutorFactory.get_or_create()
    for location, error in zip(ordered, executor.map(lambda path: _delete(io, path), ordered), strict=True):
        if error is None:
            outcome.removed.append(location)
        elif isinstance(error, FileNotFoundError):
            outcome.already_gone.append(location)
        else:
            log.warning("could not delete %s: %s", location, error)
            outcome.failed[location] = f"{type(error).__name__}: {error}"
    return outcome


def _delete(io: FileIO, location: str) -> Exception | None:
    """Delete one file; the exception instead of raising it, so one failure does not stop the others."""
    try:
        io.delete(location)
    except Exception as error:  # reported per file by the caller
        return error
    _delete_checksum_sibling(io, location)
    return None


def checksum_sibling(location: str) -> str | None:
    """The Hadoop checksum file (``DIR/.NAME.crc``) of a local ``location``; None for an object store."""
    if urlparse(location).scheme not in ("", "file"):
        return None
    directory, _, name = location.rpartition("/")
    return f"{directory}/.{name}.crc" if name else None


def _delete_checksum_sibling(io: FileIO, location: str) -> None:
    """Delete the checksum sibling of a deleted local file when there is one; a failure is only logged."""
    sibling = checksum_sibling(location)
    if sibling is None:
        return
    try:
        if io.new_input(sibling).exists():
            io.delete(sibling)
    except Exception as error:  # the table's file is gone already; a checksum left behind is harmless
        log.warning("could not delete checksum file %s: %s", sibling, error)
