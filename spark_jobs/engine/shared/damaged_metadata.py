"""A table whose metadata is missing or damaged, named: which file, which table. Used by the jobs and the sensors.

pyiceberg reads a table's metadata file (``FromInputFile.table_metadata``, for the SQL, Glue, Hive... catalogs), its
manifest lists (``manifest.read_manifest_list``, behind ``Snapshot.manifests``) and its manifests
(``ManifestFile.fetch_manifest_entry``) and, when one is truncated or does not decode, raises pydantic's "Invalid
JSON" or Avro's ``EOFError``/``UnicodeDecodeError`` without saying which file it read. So:

1. ``name_metadata_files`` wraps those three readers (once per process): a failure keeps its type and gains a note
   (``BaseException.add_note``) naming the kind of file and its location.
2. ``damaged_file_reason``: a failure with such a note, as one line naming the table and the file with the decoder's
   complaint (never the file's content, which pydantic quotes), when the file is missing or does not decode; None
   for anything else (a storage timeout is retried, not reported as damage).
3. ``first_damaged_file_reason``: for a failure met while reading a loaded table's manifests by a reader of its
   own, the current snapshot's manifest list and manifests are read again, one by one, with pyiceberg's readers;
   the first that is missing or does not decode is named the same way.

pyiceberg alone (no engine, no Spark): the Airflow side imports this module too.
"""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyiceberg import manifest as manifest_module
from pyiceberg import serializers
from pyiceberg.io import FileIO, InputFile

_NOTE = "airflow-iceberg-provider read "
METADATA_FILE, MANIFEST_LIST, MANIFEST = "metadata file", "manifest list", "manifest"
# Failures that describe the bytes of a file being decoded (as ``shared.errors.file_error`` judges them too).
_DECODING_ERRORS = (
    EOFError,
    ValueError,
    struct.error,
    IndexError,
    KeyError,
    TypeError,
    UnicodeDecodeError,
    zlib.error,
    gzip.BadGzipFile,
)


def name_metadata_files() -> None:
    """Wrap pyiceberg's readers of metadata files, manifest lists and manifests so a failure names its file (step 1).

    Idempotent; every process that reads a table's metadata calls it before (the catalog loaders do).
    """
    if getattr(serializers.FromInputFile.table_metadata, "names_its_file", False):
        return
    read_metadata = serializers.FromInputFile.table_metadata
    read_list = manifest_module.read_manifest_list
    fetch_entries = manifest_module.ManifestFile.fetch_manifest_entry

    def table_metadata(input_file: InputFile, encoding: str = serializers.UTF8) -> serializers.TableMetadata:
        with _noting(METADATA_FILE, input_file.location):
            return read_metadata(input_file, encoding)

    def read_manifest_list(input_file: InputFile) -> Iterator[manifest_module.ManifestFile]:
        with _noting(MANIFEST_LIST, input_file.location):
            yield from read_list(input_file)

    def fetch_manifest_entry(
        manifest: manifest_module.ManifestFile, io: FileIO, discard_deleted: bool = True
    ) -> list[manifest_module.ManifestEntry]:
        with _noting(MANIFEST, manifest.manifest_path):
            return fetch_entries(manifest, io, discard_deleted)

    table_metadata.names_its_file = True  # type: ignore[attr-defined]
    serializers.FromInputFile.table_metadata = staticmethod(table_metadata)  # type: ignore[method-assign]
    manifest_module.read_manifest_list = read_manifest_list
    manifest_module.ManifestFile.fetch_manifest_entry = fetch_manifest_entry  # type: ignore[method-assign,assignment]


@contextmanager
def _noting(kind: str, location: str) -> Iterator[None]:
    """Add a note naming the file to any failure raised inside (the innermost file named wins)."""
    try:
        yield
    except Exception as error:
        if not any(str(note).startswith(_NOTE) for note in getattr(error, "__notes__", ())):
            error.add_note(f"{_NOTE}{kind}|{location}")
        raise


def noted_file_of(error: BaseException) -> tuple[str, str] | None:
    """(kind, location) of the file a failure was reading, as noted by ``name_metadata_files``, or None."""
    current: BaseException | None = error
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for note in getattr(current, "__notes__", ()):
            if str(note).startswith(_NOTE):
                kind, _, location = str(note)[len(_NOTE) :].partition("|")
                return kind, location
        current = current.__cause__ or current.__context__
    return None


def damaged_file_reason(table_name: str, error: BaseException) -> str | None:
    """The line naming ``table_name`` and the metadata file, manifest list or manifest a failure was reading when
    it says the file is missing or damaged; None otherwise (step 2)."""
    noted = noted_file_of(error)
    verdict = _damage(error) if noted is not None else None
    if noted is None or verdict is None:
        return None
    kind, location = noted
    return f"table {table_name}: {kind} {location} {verdict}"


def first_damaged_file_reason(table: Any) -> str | None:
    """The first missing or damaged manifest list or manifest of ``table``'s current snapshot, named (step 3)."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return None
    name = ".".join(table.name())
    try:
        manifests = list(snapshot.manifests(table.io))
    except Exception as error:
        verdict = _damage(error)
        return f"table {name}: manifest list {snapshot.manifest_list} {verdict}" if verdict else None
    for manifest in manifests:
        try:
            manifest.fetch_manifest_entry(table.io, discard_deleted=False)
        except Exception as error:
            verdict = _damage(error)
            if verdict:
                return f"table {name}: manifest {manifest.manifest_path} {verdict}"
    return None


def _damage(error: BaseException) -> str | None:
    """``is missing`` or ``cannot be read, it is damaged (...)`` when ``error`` says so, else None."""
    current: BaseException | None = error
    while current is not None:
        if isinstance(current, FileNotFoundError):  # its message would only repeat the location
            return "is missing"
        if _is_pydantic(current):
            first = (current.errors() or [{}])[0]  # type: ignore[attr-defined]
            return f"cannot be read, it is damaged ({first.get('msg', 'invalid')})"
        if isinstance(current, json.JSONDecodeError | gzip.BadGzipFile | zlib.error | EOFError):
            return f"cannot be read, it is damaged ({_short(current)})"
        current = current.__cause__ or current.__context__
    if isinstance(error, _DECODING_ERRORS) or type(error).__name__ == "ValidationError":
        return f"cannot be read, it is damaged ({_short(error)})"
    return None


def _is_pydantic(error: BaseException) -> bool:
    return type(error).__module__.startswith("pydantic") and callable(getattr(error, "errors", None))


def _short(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())}"[:120]
