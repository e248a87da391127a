"""Has an ingest source landed? One marker file checked on the storage the table's catalog is configured for.

The ingest job reads its source with the catalog's storage properties (``s3.endpoint``, keys, region ...), so the
wait does too: pyiceberg's FileIO for the path's scheme (local paths, ``file://``, ``s3://``, ``gs://``, ...) built
from the catalog's properties, or from the defaults (the environment's credentials) without a catalog. Metadata only:
one existence check per poll, nothing is read.
"""

from __future__ import annotations

from collections.abc import Mapping


def marker_location(path: str, marker: str) -> str:
    """The marker file inside the source folder ``path`` (``marker`` empty: ``path`` itself is the file)."""
    if not marker:
        return path
    return path.rstrip("/") + "/" + marker


def marker_exists(location: str, properties: Mapping[str, str]) -> bool:
    """Whether the file at ``location`` exists, seen through the FileIO the catalog's properties configure."""
    from pyiceberg.io import load_file_io

    return load_file_io(dict(properties), location).new_input(location).exists()
