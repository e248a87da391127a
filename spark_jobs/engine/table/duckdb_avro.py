"""Decode an Avro file into Arrow columns with DuckDB's avro extension, when it is installed.

pyiceberg's Avro decoder builds a Python object per record and per map entry (about 14 µs a manifest entry);
DuckDB's ``read_avro`` decodes the same file into Arrow columns in C++ (about 4 µs an entry, no Python object per
entry). The extension ships as the PyPI package ``duckdb-extension-avro`` of DuckDB's own version and is loaded by
path: DuckDB never downloads or autoloads anything here.

1. ``duckdb_avro_available`` imports duckdb and the extension package once per process and loads the extension
   into a probe connection; any failure (not installed, versions apart, a platform without the binary) is logged
   once and the caller decodes with pyiceberg instead.
2. Each thread gets a connection of its own (DuckDB connections are not thread-safe; decoding releases the GIL, so
   several manifests decode in parallel). A connection keeps memory after each read (about the file's size, in its
   allocator), so it is closed and a new one opened once it has read ``RECYCLE_AFTER_BYTES``: the tables it
   returned stay valid, and a plan of 10^6 files holds no more than that per thread.
3. ``read_avro_file`` reads a local path in place; the bytes of a file on another file system (S3, ...) are
   written to a private temporary file (a folder of mode 0700 of this process, the file created exclusively) and
   removed after the read.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:  # duckdb is imported when first needed (``duckdb_avro_available``)
    from duckdb import DuckDBPyConnection

log = logging.getLogger(__name__)

_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
RECYCLE_AFTER_BYTES = 64 * 1024 * 1024
_STATE: dict[str, Any] = {}
_STATE_LOCK = threading.Lock()
_LOCAL = threading.local()


def duckdb_avro_available() -> bool:
    """True when DuckDB and its avro extension load in this process (checked once, logged once when not)."""
    with _STATE_LOCK:
        if "available" not in _STATE:
            _STATE["available"] = _probe()
        return bool(_STATE["available"])


def _probe() -> bool:
    try:
        duckdb = importlib.import_module("duckdb")
        package = importlib.import_module("duckdb_extension_avro")
        folder = Path(package.__file__ or "").parent / "extensions" / f"v{duckdb.__version__}"
        found = sorted(folder.glob("*/*.duckdb_extension")) or sorted(folder.glob("*.duckdb_extension"))
        if not found:
            raise FileNotFoundError(f"no avro extension for DuckDB {duckdb.__version__} under {folder}")
        _STATE["extension"] = str(found[0])
        _STATE["duckdb"] = duckdb
        _connection()
    except Exception as error:  # any failure means "decode with pyiceberg", said once
        log.info("manifests decode with pyiceberg: DuckDB's avro extension is not usable here (%s)", error)
        return False
    return True


def _connection() -> DuckDBPyConnection:
    """This thread's DuckDB connection with the avro extension loaded (a new one after ``RECYCLE_AFTER_BYTES``)."""
    connection = getattr(_LOCAL, "connection", None)
    if connection is not None and getattr(_LOCAL, "bytes_read", 0) >= RECYCLE_AFTER_BYTES:
        connection.close()
        connection = None
    if connection is None:
        connection = _STATE["duckdb"].connect(config=_CONFIG)
        connection.execute(f"LOAD '{_STATE['extension']}'")
        connection.execute("SET threads = 1")  # one file per connection; parallelism comes from several threads
        _LOCAL.connection = connection
        _LOCAL.bytes_read = 0
    return connection


def read_avro_file(local_path: str) -> pa.Table:
    """Every record of the local Avro file as an Arrow table (DuckDB's types; logical types applied)."""
    connection = _connection()
    with contextlib.suppress(OSError):  # DuckDB names a missing file itself
        _LOCAL.bytes_read += os.path.getsize(local_path)
    return connection.execute("SELECT * FROM read_avro(?)", [local_path]).to_arrow_table()


def read_avro_bytes(data: bytes) -> pa.Table:
    """Every record of an Avro file held in memory (written to a private temporary file for DuckDB to read)."""
    descriptor, path = tempfile.mkstemp(suffix=".avro", dir=_private_folder())
    try:
        with os.fdopen(descriptor, "wb") as temporary:
            temporary.write(data)
        return read_avro_file(path)
    finally:
        Path(path).unlink(missing_ok=True)


def _private_folder() -> str:
    """A folder of mode 0700 that only this process writes to, removed when the process exits."""
    with _STATE_LOCK:
        folder = _STATE.get("folder")
        if folder is None or not Path(folder).is_dir():
            folder = tempfile.mkdtemp(prefix="iceberg-manifests-")  # mkdtemp creates it 0700, owned by us
            _STATE["folder"] = folder
            atexit.register(shutil.rmtree, folder, True)
        return str(folder)
