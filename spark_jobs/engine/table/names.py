"""Table and namespace names a catalog and its storage can hold, checked before anything is written.

1. ``check_name_parts``: no part of an identifier holds a control character (Unicode category ``Cc``, and the line
   and paragraph separators): such a name cannot be typed back, logged on one line, or used safely as a path.
2. ``check_new_table_name``: before a table (and its namespace) is created, the names fit the storage that will hold
   it. The table's location is the namespace's ``location`` property, else ``<warehouse>/<namespace>.db/<table>``
   (pyiceberg's and Java's default layout; the longer ``.db`` spelling is assumed); its namespace and table
   directories must each fit the storage's longest name, and the location plus the longest path a table writes
   under it (``TABLE_PATH_RESERVE``: a manifest list's name under ``metadata/``, a data file under a partition
   directory) the storage's longest path:

   - a local file system: what ``pathconf`` says of the nearest existing folder (``NAME_MAX``, ``PATH_MAX``);
   - an object store (S3, GCS, Azure): keys of at most 1024 bytes;
   - HDFS: names of 255 bytes (``dfs.namenode.fs-limits.max-component-length``), paths of 8000;
   - anything else, or a catalog that chooses locations itself (REST): names of 255 bytes, the common limit.

Lengths are counted in UTF-8 bytes, as file systems and object stores count them.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyiceberg.catalog import Catalog

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.storage import OBJECT_STORE_SCHEMES

OBJECT_KEY_MAX_BYTES = 1024
HDFS_NAME_MAX_BYTES, HDFS_PATH_MAX_BYTES = 255, 8000
COMMON_NAME_MAX_BYTES = 255
# Bytes a table writes under its location beyond it: ``/metadata/snap-<19 digits>-<attempt>-<uuid>.avro`` is 79, a
# data file ``/data/<partition>/<uuid>-...parquet`` about 100 plus its partition directories.
TABLE_PATH_RESERVE = 200
_CONTROL_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})
_SHOWN = 60


def check_name_parts(parts: tuple[str, ...]) -> None:
    """Refuse identifier parts (namespace and table names) holding a control character (module doc, step 1)."""
    for index, part in enumerate(parts):
        bad = next((c for c in part if unicodedata.category(c) in _CONTROL_CATEGORIES), None)
        if bad is not None:
            kind = "table" if index == len(parts) - 1 else "namespace"
            raise UserInputError(
                f"the {kind} name {_shown(part)} holds the control character U+{ord(bad):04X}; namespace and "
                "table names may not hold control characters",
                argument="table",
            )


def check_new_table_name(catalog: Catalog, identifier: str) -> None:
    """Refuse a table name its storage cannot hold, before the table or its namespace is created (step 2)."""
    parts = Catalog.identifier_to_tuple(identifier)
    check_name_parts(parts)
    namespace, table = parts[:-1], parts[-1]
    location = _new_table_location(catalog, namespace, table)
    name_max, path_max, storage = _limits(location)
    namespace_name = ".".join(namespace)
    folders = [(f"namespace {_shown(namespace_name)}", namespace_name + ".db"), (f"table {_shown(table)}", table)]
    for what, folder in folders:
        size = len(folder.encode())
        if size > name_max:
            raise UserInputError(
                f"the {what} name is {size} bytes as a folder, longer than the {name_max} bytes {storage} takes; "
                "choose a shorter name",
                argument="table",
            )
    if location is not None and path_max is not None:
        size = len(location.encode()) + TABLE_PATH_RESERVE
        if size > path_max:
            raise UserInputError(
                f"the location {_shown(location)} of a new table leaves too little room for its files ({size} bytes "
                f"with them; {storage} takes paths of at most {path_max} bytes); choose a shorter name",
                argument="table",
            )


def _new_table_location(catalog: Catalog, namespace: tuple[str, ...], table: str) -> str | None:
    """Where a new table will live (module doc, step 2), or None when the catalog decides that itself."""
    try:
        namespace_location = catalog.load_namespace_properties(namespace).get("location")
    except Exception:  # the namespace does not exist yet (it is created with the table) or the catalog cannot say
        namespace_location = None
    if namespace_location:
        return f"{namespace_location.rstrip('/')}/{table}"
    warehouse = str(catalog.properties.get("warehouse") or "")
    if "://" not in warehouse and not warehouse.startswith("/"):
        return None  # a warehouse name (REST catalogs): the server chooses the location
    return f"{warehouse.rstrip('/')}/{'.'.join(namespace)}.db/{table}"


def _limits(location: str | None) -> tuple[int, int | None, str]:
    """The longest name and path (bytes) the storage of ``location`` takes, and how to name that storage."""
    if location is None:
        return COMMON_NAME_MAX_BYTES, None, "a file system"
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file"):
        folder = _existing_folder(Path(unquote(parsed.path) if scheme else location))
        return os.pathconf(folder, "PC_NAME_MAX"), os.pathconf(folder, "PC_PATH_MAX"), "the local file system"
    if scheme in OBJECT_STORE_SCHEMES:
        return OBJECT_KEY_MAX_BYTES, OBJECT_KEY_MAX_BYTES + len(f"{scheme}://{parsed.netloc}"), "the object store"
    if scheme in ("hdfs", "viewfs"):
        return HDFS_NAME_MAX_BYTES, HDFS_PATH_MAX_BYTES, "HDFS"
    return COMMON_NAME_MAX_BYTES, None, f"{scheme} storage"


def _existing_folder(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    for candidate in (path, *path.parents):
        try:
            if candidate.is_dir():
                return candidate
        except OSError:  # a component too long to look up: its parent decides
            continue
    return Path("/")


def _shown(text: str) -> str:
    """``text`` quoted for a message, control characters escaped, cut in its middle when long."""
    quoted = repr(text)
    return quoted if len(quoted) <= _SHOWN else f"{quoted[: _SHOWN // 2 - 2]}...{quoted[-(_SHOWN // 2 - 1) :]}"
