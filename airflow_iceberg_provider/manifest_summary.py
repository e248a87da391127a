"""A snapshot's live files summed per partition, from its manifests alone and without a Python object per file.

The compaction sensor and trigger run in Airflow's triggerer, which has no Spark and must answer in seconds for
tables of 10^5-10^6 files:

1. The snapshot's manifest list is read by pyiceberg (one small file).
2. The manifests of each partition spec are read together by DuckDB's avro extension (loaded by path from its PyPI
   package, never downloaded) in one SQL query that sums their live entries (status not DELETED) per partition and
   content: files, rows, bytes, files under the small and the fragment size, and the data files' sizes as one list.
   DuckDB matches the files' fields by name (a field a manifest lacks reads as null: a v1 manifest has no content
   field and holds data files only); where the first file lacks a field the query names, each manifest of the
   spec is read alone. Local manifests are read in place; others are copied through the table's FileIO into a
   private temporary folder first. The sums are added up per partition. The connection is kept per thread and
   renewed after ``_CONNECTION_USES`` queries (DuckDB's allocator keeps what it once held).
3. Each distinct partition's values become pyiceberg's (days for a date, microseconds for a time or timestamp),
   once per partition, for its name.

Where DuckDB's extension cannot load, ``summarize`` returns None and the caller reads the entries with pyiceberg.
"""

from __future__ import annotations

import datetime
import importlib
import logging
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_CONNECT_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
_EXTENSION: dict[str, Any] = {}
_LOCK = threading.Lock()
_THREAD = threading.local()
_CONNECTION_USES = 256

_QUERY = """
SELECT data_file.partition AS partition,
       {content} AS content,
       count(*) AS files,
       sum(data_file.record_count) AS rows,
       sum(data_file.file_size_in_bytes) AS bytes,
       count(*) FILTER (WHERE data_file.file_size_in_bytes < $small) AS small_files,
       count(*) FILTER (WHERE data_file.file_size_in_bytes < $fragment) AS fragment_files,
       list(data_file.file_size_in_bytes) FILTER (WHERE {content} = 0) AS sizes
FROM read_avro($manifest)
WHERE status <> 2
GROUP BY ALL
"""


@dataclass(frozen=True)
class PartitionSums:
    """The live files of one content kind (0 data, 1 position deletes, 2 equality deletes) in one partition."""

    spec_id: int
    partition: tuple[Any, ...]
    content: int
    files: int
    rows: int
    bytes: int
    small_files: int
    fragment_files: int
    sizes: tuple[int, ...]


def summarize(table: Any, snapshot: Any, *, small: int, fragment: int) -> list[PartitionSums] | None:
    """The sums of ``snapshot``'s live files per partition and content (module doc); None without DuckDB."""
    connection = _connection()
    if connection is None:
        return None
    manifests = list(snapshot.manifests(table.io))
    by_spec: dict[int, list[str]] = {}
    for manifest in manifests:
        by_spec.setdefault(manifest.partition_spec_id, []).append(manifest.manifest_path)
    totals: dict[tuple[int, tuple[Any, ...], int], list[Any]] = {}
    with _local_copies(table.io, [manifest.manifest_path for manifest in manifests]) as local:
        for spec_id, paths in by_spec.items():
            for row in _spec_rows(connection, [local[path] for path in paths], small, fragment):
                partition, content, files, rows, size, small_files, fragment_files, sizes = row
                key = (spec_id, _pyiceberg_values(partition), int(content or 0))
                total = totals.setdefault(key, [0, 0, 0, 0, 0, []])
                for index, value in enumerate((files, rows, size, small_files, fragment_files)):
                    total[index] += int(value or 0)
                total[5].extend(sizes or ())
    sums = [
        PartitionSums(
            spec_id=spec_id,
            partition=partition,
            content=content,
            files=total[0],
            rows=total[1],
            bytes=total[2],
            small_files=total[3],
            fragment_files=total[4],
            sizes=tuple(total[5]),
        )
        for (spec_id, partition, content), total in totals.items()
    ]
    return sums


def _spec_rows(connection: Any, paths: list[str], small: int, fragment: int) -> list[tuple[Any, ...]]:
    """The sums of one spec's manifests' live entries (module doc, step 2): in one query, or one per manifest where
    the first manifest lacks the content field."""
    try:
        return _manifest_rows(connection, paths, small, fragment)
    except Exception as error:  # one manifest alone already read as data files (``_manifest_rows``)
        if "content" not in str(error):
            raise
        return [row for path in paths for row in _manifest_rows(connection, [path], small, fragment)]


def _manifest_rows(connection: Any, paths: list[str], small: int, fragment: int) -> list[tuple[Any, ...]]:
    """The sums of the live entries of ``paths``, manifests of one spec (module doc, step 2)."""
    parameters = {"manifest": paths, "small": small, "fragment": fragment}
    try:
        return list(connection.execute(_QUERY.format(content="coalesce(data_file.content, 0)"), parameters).fetchall())
    except Exception as error:  # one v1 manifest: no content field, data files only
        if "content" not in str(error) or len(paths) != 1:
            raise
        return list(connection.execute(_QUERY.format(content="0"), parameters).fetchall())


def _connection() -> Any:
    """This thread's DuckDB connection with the avro extension, or None when it cannot load here (logged once);
    renewed after ``_CONNECTION_USES`` uses (module doc, step 2)."""
    held = getattr(_THREAD, "connection", None)
    if held is not None and _THREAD.uses < _CONNECTION_USES:
        _THREAD.uses += 1
        return held
    connection = _new_connection()
    if held is not None:
        held.close()
    _THREAD.connection, _THREAD.uses = connection, 1
    return connection


def _new_connection() -> Any:
    """A new DuckDB connection with the avro extension, or None when it cannot load here (logged once)."""
    with _LOCK:
        if "available" not in _EXTENSION:
            try:
                duckdb = importlib.import_module("duckdb")
                package = importlib.import_module("duckdb_extension_avro")
                folder = Path(package.__file__ or "").parent / "extensions" / f"v{duckdb.__version__}"
                found = sorted(folder.rglob("*.duckdb_extension"))
                if not found:
                    raise FileNotFoundError(f"no avro extension for DuckDB {duckdb.__version__} under {folder}")
                _EXTENSION.update(available=True, duckdb=duckdb, path=str(found[0]))
            except Exception as error:  # any failure means "read the entries with pyiceberg"
                log.info("manifest sums read entry by entry: DuckDB's avro extension does not load (%s)", error)
                _EXTENSION["available"] = False
        if not _EXTENSION["available"]:
            return None
    connection = _EXTENSION["duckdb"].connect(config=_CONNECT_CONFIG)
    connection.execute(f"LOAD '{_EXTENSION['path']}'")
    return connection


@contextmanager
def _local_copies(io: Any, paths: list[str]) -> Iterator[dict[str, str]]:
    """Each manifest's local path: in place for a local file, else a copy in a private folder (removed after)."""
    local: dict[str, str] = {}
    folder: str | None = None
    try:
        for index, path in enumerate(paths):
            in_place = _local_path(path)
            if in_place is not None:
                local[path] = in_place
                continue
            if folder is None:
                folder = tempfile.mkdtemp(prefix="iceberg-manifest-sums-")  # mode 0700, ours
            copy = str(Path(folder) / f"{index}.avro")
            with io.new_input(path).open() as source, open(copy, "xb") as target:
                shutil.copyfileobj(source, target)
            local[path] = copy
        yield local
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _local_path(path: str) -> str | None:
    """The file system path of ``/x``, ``file:/x`` or ``file:///x``; None for another scheme."""
    if path.startswith("file:"):
        rest = path[len("file:") :]
        return "/" + rest.lstrip("/") if rest.startswith("/") else None
    return path if "://" not in path else None


def _pyiceberg_values(partition: Any) -> tuple[Any, ...]:
    """A partition as DuckDB returns it (a dict, or a scalar for an unpartitioned spec) in pyiceberg's values."""
    if not isinstance(partition, dict):
        return ()
    return tuple(_pyiceberg_value(value) for value in partition.values())


def _pyiceberg_value(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
        return (moment - _EPOCH) // datetime.timedelta(microseconds=1)
    if isinstance(value, datetime.date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, datetime.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    return value
