"""Catalog access: load a catalog from pyiceberg's configuration and a table from it, with errors that help.

Catalog settings come only from pyiceberg's configuration (``PYICEBERG_CATALOG__<NAME>__<KEY>`` environment variables
or ``.pyiceberg.yaml``), never from a command line, so secrets stay out of process listings and job logs. The
configuration is read afresh on every call, so a variable set after import is seen.

A catalog that cannot be reached or refuses the credentials fails with one line naming the catalog, its URI (without
a password) and what failed, never a secret: refused credentials, an unknown database and a missing warehouse are
bad input (``CatalogAccessError``, exit code 2); an unreachable or failing server is retryable
(``CatalogUnavailableError``). A table whose metadata cannot be read from storage fails the same way
(``shared.storage``).
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Mapping
from typing import Any

import pyiceberg.catalog
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.table import Table
from pyiceberg.utils.config import Config

from spark_jobs.engine.shared.damaged_metadata import damaged_file_reason, name_metadata_files
from spark_jobs.engine.shared.errors import (
    CorruptFileError,
    EngineError,
    TableNotFoundError,
    UnsupportedFeatureError,
    UserInputError,
)
from spark_jobs.engine.shared.storage import storage_failure
from spark_jobs.engine.table.names import check_name_parts

log = logging.getLogger(__name__)
# How many names an error message lists before it says "and N more".
_NAMES_SHOWN = 20
# Words of a SQL database's refusal that mean the configuration is wrong, not that the server is down.
_SQL_BAD_INPUT = ("password authentication failed", "does not exist", "no password supplied", "role ")
_SECRET_KEY_WORDS = ("secret", "password", "credential", "token", "key-id")


class CatalogAccessError(UserInputError):
    """The catalog refused the configured credentials, or names a database or warehouse that does not exist."""


class CatalogUnavailableError(EngineError):
    """The catalog's server could not be reached or failed; a retry later may succeed."""


def load_catalog(name: str) -> Catalog:
    """Load the catalog ``name`` from pyiceberg's configuration (environment variables or .pyiceberg.yaml)."""
    name_metadata_files()  # a damaged metadata file, manifest list or manifest read later names itself
    config = Config()
    properties = config.get_catalog_config(name)
    if properties is None:
        known = config.get_known_catalogs()
        env_prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
        raise UserInputError(
            f"catalog {name!r} is not configured: set {env_prefix}URI (and its other keys) in the environment or "
            f"add catalog.{name.lower()} to .pyiceberg.yaml; configured catalogs: {_names(known)}",
            argument="catalog",
        )
    try:
        return pyiceberg.catalog.load_catalog(name, **properties)  # type: ignore[arg-type]
    except ValueError as error:
        raise UserInputError(
            f"catalog {name!r} cannot be loaded from its configuration: {error}", argument="catalog"
        ) from error
    except Exception as error:
        raise catalog_error(name, properties, error) from error


def catalog_error(name: str, properties: Mapping[str, object], error: Exception) -> EngineError:
    """``error`` from connecting to catalog ``name`` as one line: which catalog, where, what failed; no secret."""
    where = f"catalog {name!r} at {_public_uri(str(properties.get('uri', '')))}"
    kind = type(error).__name__
    text = _without_secrets(" ".join(str(error).split()), properties)
    if kind in {"OAuthError", "UnauthorizedError", "ForbiddenError", "AuthorizationExpiredError"}:
        return CatalogAccessError(f"{where}: the credentials were refused ({kind}: {text})")
    if kind in {"NoSuchNamespaceError", "NoSuchWarehouseError"}:
        return CatalogAccessError(f"{where}: {text}")
    if kind in {"ConnectionError", "ConnectTimeout", "ReadTimeout", "Timeout"}:
        return CatalogUnavailableError(f"{where} is unreachable ({kind})")
    if kind == "OperationalError":
        reason = text.split("(Background on this error")[0].removeprefix("(psycopg2.OperationalError) ").strip()
        if any(word in reason for word in _SQL_BAD_INPUT):
            return CatalogAccessError(f"{where}: the database refused the connection: {reason}")
        return CatalogUnavailableError(f"{where} is unreachable: {reason}")
    storage = storage_failure(str(error), properties)
    if storage is not None:
        return storage
    return CatalogUnavailableError(f"{where}: {kind}: {text[:300]}")


def _public_uri(uri: str) -> str:
    """``uri`` without a password in its user info."""
    parts = urllib.parse.urlsplit(uri)
    if parts.password is None:
        return uri
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _without_secrets(text: str, properties: Mapping[str, object]) -> str:
    """``text`` with the value of every secret-looking property (and URI password) masked."""
    for key, value in properties.items():
        if isinstance(value, str) and value and any(word in key for word in _SECRET_KEY_WORDS):
            text = text.replace(value, "***")
            if ":" in value and key == "credential":
                text = text.replace(value.split(":", 1)[1], "***")
        if isinstance(value, str) and "://" in value:
            password = urllib.parse.urlsplit(value).password
            if password:
                text = text.replace(password, "***")
    return text


def load_table(catalog: Catalog, identifier: str) -> Table:
    """Load table ``identifier`` ("namespace.table"); when missing, say which tables or namespaces do exist."""
    parts = Catalog.identifier_to_tuple(identifier)
    if len(parts) < 2:
        raise UserInputError(
            f"table identifier {identifier!r} in catalog {catalog.name!r} needs a namespace: 'namespace.table'",
            argument="table",
        )
    if any(not part.strip() for part in parts):
        raise UserInputError(
            f"table identifier {identifier!r} in catalog {catalog.name!r} has an empty name part; expected "
            "'namespace.table'",
            argument="table",
        )
    check_name_parts(parts)
    reason = ""
    name_metadata_files()
    try:
        return catalog.load_table(parts)
    except (NoSuchTableError, NoSuchNamespaceError) as error:
        # A catalog's own explanation, when it is more than "does not exist" (e.g. its warehouse is missing).
        text = " ".join(str(error).split())
        if "does not exist" not in text:
            reason = f" (the catalog says: {_without_secrets(text, catalog.properties)[:300]})"
    except Exception as error:
        storage = storage_failure(str(error), catalog.properties) if isinstance(error, OSError) else None
        if storage is not None:
            raise type(storage)(f"table {identifier!r} of catalog {catalog.name!r}: {storage}") from error
        damaged = damaged_file_reason(identifier, error)  # a metadata file missing or not JSON: not retried
        if damaged is not None:
            raise CorruptFileError(damaged) from error
        raise
    namespace = parts[:-1]
    namespace_name = ".".join(namespace)
    try:
        existing_namespaces = [".".join(ns) for ns in catalog.list_namespaces()]
    except NoSuchNamespaceError as error:  # a REST catalog whose warehouse does not exist
        raise catalog_error(catalog.name, catalog.properties, error) from error
    try:
        existing_tables = [".".join(table) for table in catalog.list_tables(namespace)]
    except NoSuchNamespaceError:
        raise TableNotFoundError(
            f"table {identifier!r} not found in catalog {catalog.name!r}: namespace {namespace_name!r} does not "
            f"exist; namespaces: {_names(existing_namespaces)}",
            argument="table",
        ) from None
    raise TableNotFoundError(
        f"table {identifier!r} not found in catalog {catalog.name!r}{reason}; tables in namespace "
        f"{namespace_name!r}: {_names(existing_tables)}",
        argument="table",
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


def refuse_output_over_tables(catalog: Catalog, table: Table, output: str) -> None:
    """Refuse an export location that overlaps the data of a table (UserInputError, before anything is written).

    Overlapping: equal to, inside, or holding the location of the table read, of any table or the namespace in its
    namespace, or the catalog's warehouse root; writing there (``--mode overwrite`` deletes what is there first)
    could destroy a table.
    """
    target = _comparable_location(output)
    table_name = ".".join(table.name())
    for what, location in _protected_locations(catalog, table):
        protected = _comparable_location(location)
        if target == protected or target.startswith(protected + "/"):
            relation = "is" if target == protected else "is inside"
        elif protected.startswith(target + "/"):
            relation = "holds"
        else:
            continue
        raise UserInputError(
            f"--output {output} {relation} {what} ({location}); reading table {table_name} must not write into "
            "table or warehouse locations: choose another --output"
        )


def _protected_locations(catalog: Catalog, table: Table) -> list[tuple[str, str]]:
    """(what, location) pairs an export must not overlap: the table, its namespace's tables, the warehouse."""
    from pyiceberg.utils.concurrent import ExecutorFactory

    table_name = ".".join(table.name())
    protected = [(f"the location of table {table_name}", table.metadata.location)]
    warehouse = str(catalog.properties.get("warehouse") or "")
    is_location = "://" in warehouse or warehouse.startswith("/")
    last: list[tuple[str, str]] = [("the warehouse root", warehouse)] if is_location else []
    namespace = table.name()[:-1]
    try:
        namespace_location = catalog.load_namespace_properties(namespace).get("location")
        siblings = [t for t in catalog.list_tables(namespace) if tuple(t) != tuple(table.name())]
    except Exception as error:  # a catalog that cannot list: the table itself and the warehouse are still checked
        log.warning("cannot list namespace %s to check --output against its tables: %s", ".".join(namespace), error)
        return protected + last
    if namespace_location:
        last.insert(0, (f"the location of namespace {'.'.join(namespace)}", namespace_location))

    def location_of(identifier: tuple[str, ...]) -> tuple[str, str] | None:
        try:
            return f"the location of table {'.'.join(identifier)}", catalog.load_table(identifier).metadata.location
        except Exception as error:  # a sibling that does not load cannot be checked; say so
            log.warning("cannot load table %s to check --output against it: %s", ".".join(identifier), error)
            return None

    executor = ExecutorFactory.get_or_create()
    protected += [pair for pair in executor.map(location_of, siblings) if pair is not None]
    return protected + last


def _comparable_location(location: str) -> str:
    """One spelling of a location for prefix comparison: absolute real local paths, ``s3://`` for s3a/s3n."""
    import os
    from urllib.parse import urlparse

    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme else location
        return os.path.realpath(os.path.abspath(path)).rstrip("/") or "/"
    scheme = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}.get(parsed.scheme, parsed.scheme)
    return f"{scheme}://{parsed.netloc}{parsed.path}".rstrip("/")
