"""Catalog access: load a catalog from pyiceberg's configuration and a table from it, with errors that help.

Catalog settings come only from pyiceberg's configuration (``PYICEBERG_CATALOG__<NAME>__<KEY>`` environment variables
or ``.pyiceberg.yaml``), never from a command line, so secrets stay out of process listings and job logs. The
configuration is read afresh on every call, so a variable set after import is seen.
"""

from __future__ import annotations

from typing import Any

import pyiceberg.catalog
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.table import Table
from pyiceberg.utils.config import Config

from spark_jobs.engine.shared.errors import TableNotFoundError, UnsupportedFeatureError, UserInputError

# How many names an error message lists before it says "and N more".
_NAMES_SHOWN = 20


def load_catalog(name: str) -> Catalog:
    """Load the catalog ``name`` from pyiceberg's configuration (environment variables or .pyiceberg.yaml)."""
    config = Config()
    properties = config.get_catalog_config(name)
    if properties is None:
        known = config.get_known_catalogs()
        env_prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
        raise UserInputError(
            f"catalog {name!r} is not configured: set {env_prefix}URI (and its other keys) in the environment or "
            f"add catalog.{name.lower()} to .pyiceberg.yaml; configured catalogs: {_names(known)}"
        )
    try:
        return pyiceberg.catalog.load_catalog(name, **properties)  # type: ignore[arg-type]
    except ValueError as error:
        raise UserInputError(f"catalog {name!r} cannot be loaded from its configuration: {error}") from error


def load_table(catalog: Catalog, identifier: str) -> Table:
    """Load table ``identifier`` ("namespace.table"); when missing, say which tables or namespaces do exist."""
    parts = Catalog.identifier_to_tuple(identifier)
    if len(parts) < 2:
        raise UserInputError(
            f"table identifier {identifier!r} in catalog {catalog.name!r} needs a namespace: 'namespace.table'"
        )
    try:
        return catalog.load_table(parts)
    except (NoSuchTableError, NoSuchNamespaceError):
        pass
    namespace = parts[:-1]
    namespace_name = ".".join(namespace)
    try:
        existing_tables = [".".join(table) for table in catalog.list_tables(namespace)]
    except NoSuchNamespaceError:
        existing_namespaces = [".".join(ns) for ns in catalog.list_namespaces()]
        raise TableNotFoundError(
            f"table {identifier!r} not found in catalog {catalog.name!r}: namespace {namespace_name!r} does not "
            f"exist; namespaces: {_names(existing_namespaces)}"
        ) from None
    raise TableNotFoundError(
        f"table {identifier!r} not found in catalog {catalog.name!r}; tables in namespace {namespace_name!r}: "
        f"{_names(existing_tables)}"
    )


def _names(names: list[str]) -> str:
    """A short, sorted listing of names for an error message ("none" when empty)."""
    if not names:
        return "none"
    shown = sorted(names)[:_NAMES_SHOWN]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def table_file_system(table: Table, location: str | None = None) -> tuple[Any, str]:
    """The pyarrow file system of the table's FileIO (with its credentials) and ``location``'s path in it.

    ``location`` defaults to the table's location. Listing files needs pyiceberg's PyArrowFileIO.
    """
    from pyiceberg.io.pyarrow import PyArrowFileIO

    io = table.io
    if not isinstance(io, PyArrowFileIO):
        raise UnsupportedFeatureError(
            f"listing files of {'.'.join(table.name())} needs pyiceberg's PyArrowFileIO; the table uses "
            f"{type(io).__name__} (set py-io-impl=pyiceberg.io.pyarrow.PyArrowFileIO in the catalog properties)"
        )
    scheme, netloc, path = io.parse_location(location or table.metadata.location, io.properties)
    return io.fs_by_scheme(scheme, netloc), path

