"""DuckDB as a reader of our tables: ``iceberg_scan`` over a metadata file, extensions loaded offline.

The iceberg and avro extensions come from their PyPI packages (``duckdb-extension-iceberg``,
``duckdb-extension-avro``, the same version as ``duckdb``), loaded by path, avro first; DuckDB never downloads or
autoloads an extension here.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pyarrow as pa

EXTENSIONS = ("avro", "iceberg")  # load order: iceberg needs avro


def extension_path(name: str) -> Path:
    """The ``.duckdb_extension`` file the PyPI package ``duckdb-extension-<name>`` ships for this DuckDB."""
    import duckdb

    package = importlib.import_module(f"duckdb_extension_{name}")
    folder = Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    found = sorted(folder.glob("*.duckdb_extension"))
    if not found:
        raise FileNotFoundError(f"duckdb-extension-{name} has no extension for DuckDB {duckdb.__version__} in {folder}")
    return found[0]


def connect():
    """An in-memory DuckDB connection with the avro and iceberg extensions loaded from their packages."""
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for name in EXTENSIONS:
        con.execute(f"LOAD '{extension_path(name)}'")
    return con


def scan(con, metadata_location: str, columns: list[str] | None = None, *, snapshot_id: int | None = None) -> pa.Table:
    """The rows DuckDB reads from the table whose metadata file is ``metadata_location`` (at ``snapshot_id``)."""
    projection = ", ".join('"' + c.replace('"', '""') + '"' for c in columns) if columns else "*"
    location = metadata_location.replace("'", "''")
    at = f", snapshot_from_id => {int(snapshot_id)}" if snapshot_id is not None else ""
    return con.execute(f"SELECT {projection} FROM iceberg_scan('{location}'{at})").to_arrow_table()
