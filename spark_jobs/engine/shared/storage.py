"""Files outside a table (ingest sources, read outputs) through pyarrow, and object-store failures as one clear line.

1. ``file_system(uri, properties)``: the pyarrow file system and path for a URI, built by pyiceberg's
   ``PyArrowFileIO`` from the catalog's properties (``s3.endpoint``, keys, region, path-style access...), so one
   configuration reaches the table's files and the job's other files. ``s3``, ``s3a`` and ``s3n`` are the same S3.
2. ``list_files(uri, properties)``: the files a source URI names: the file itself, or every file under a directory
   (recursively, hidden ``_``/``.`` names skipped as Spark and Hadoop do), or those matching a glob pattern.
3. ``file_io_properties(properties)``: the properties a FileIO needs, to ship to executors: string values only, without
   the catalog's own credentials and auth objects (a REST catalog's ``auth.manager`` holds an HTTP session), and
   with ``PatientS3RetryStrategy`` unless the catalog names a retry strategy: AWS's standard retry rules (throttling
   such as HTTP 503 SlowDown, server errors, connection resets; exponential backoff with jitter) with more attempts.
4. ``storage_failure(message)``: the same judgement on a failure's text alone (an error raised on an executor reaches
   the driver as text inside Spark's exception): the object's ``s3://bucket/key`` taken from pyarrow's wording.
5. ``storage_error(error, uri, properties)``: a pyarrow/AWS error turned into ``StorageAccessError`` (bad input,
   exit code 2: access denied, wrong keys, missing bucket) or ``StorageUnavailableError`` (retryable: endpoint
   unreachable, throttled, server error), one line naming the URI, bucket and endpoint and what failed. Secrets are
   never part of it: the message is built from the URI, the endpoint and the error class, not from the properties.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from pyarrow import fs

from spark_jobs.engine.shared.errors import EngineError, UserInputError

OBJECT_STORE_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs", "oss"})
_GLOB = re.compile(r"[*?\[]")
# AWS SDK error names in pyarrow's messages, by what they mean for the caller.
_ACCESS_DENIED = ("ACCESS_DENIED", "INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH", "EXPIRED_TOKEN", "FORBIDDEN")
_NO_BUCKET = ("NO_SUCH_BUCKET",)
_UNAVAILABLE = (
    "NETWORK_CONNECTION",
    "curlCode",
    "SLOW_DOWN",
    "SERVICE_UNAVAILABLE",
    "INTERNAL_FAILURE",
    "THROTTLING",
    "REQUEST_TIMEOUT",
    "Connection reset",
)


class StorageAccessError(UserInputError):
    """A file or bucket cannot be used as given: access denied, wrong keys, missing bucket or path."""


class StorageUnavailableError(EngineError):
    """The object store could not be reached or asked to slow down; a retry later may succeed."""


@dataclass(frozen=True)
class SourceFile:
    """A file to read: its URI as the caller names it, its path in the file system, and its size."""

    uri: str
    path: str
    size: int


RETRY_STRATEGY_PROPERTY = "s3.retry-strategy-impl"
RETRY_ATTEMPTS = 6


class PatientS3RetryStrategy(fs.AwsStandardS3RetryStrategy):
    """AWS's standard retry strategy with ``RETRY_ATTEMPTS`` attempts (pyarrow's default is 3)."""

    def __init__(self) -> None:
        super().__init__(max_attempts=RETRY_ATTEMPTS)


RETRY_STRATEGY_IMPL = f"{__name__}.PatientS3RetryStrategy"
# Catalog properties no FileIO reads: the catalog's own OAuth2 credential and token, and its auth objects.
_CATALOG_ONLY_KEYS = frozenset({"credential", "token"})


def file_io_properties(properties: Mapping[str, object]) -> dict[str, str]:
    """The string-valued FileIO properties of a table's ``io.properties`` (catalog credentials and objects left out)."""
    kept = {
        key: value
        for key, value in properties.items()
        if isinstance(value, str) and key not in _CATALOG_ONLY_KEYS and not key.startswith("auth.")
    }
    kept.setdefault(RETRY_STRATEGY_PROPERTY, RETRY_STRATEGY_IMPL)
    return kept


def is_object_store(uri: str) -> bool:
    """Whether ``uri`` names an object store (s3://, s3a://, gs://, abfs://...) rather than a local or HDFS path."""
    return urlparse(uri).scheme.lower() in OBJECT_STORE_SCHEMES


def file_system(uri: str, properties: Mapping[str, str]) -> tuple[fs.FileSystem, str]:
    """The pyarrow file system for ``uri`` (configured from the catalog ``properties``) and the path in it."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    io = PyArrowFileIO(file_io_properties(properties))
    scheme, netloc, path = PyArrowFileIO.parse_location(uri, dict(properties))
    return io.fs_by_scheme(scheme, netloc), path


def list_files(uri: str, properties: Mapping[str, str]) -> list[SourceFile]:
    """The files ``uri`` names (a file, a directory's visible files, or a glob's matches), sorted by URI."""
    filesystem, path = file_system(uri, properties)
    prefix = uri[: len(uri) - len(uri.split("://", 1)[-1])] if "://" in uri else ""
    try:
        if _GLOB.search(path):
            return _glob(filesystem, path, uri, prefix)
        info = filesystem.get_file_info(path)
        if info.type == fs.FileType.File:
            return [SourceFile(uri, path, info.size or 0)]
        if info.type == fs.FileType.NotFound:
            bucket = path.split("/", 1)[0]
            if is_object_store(uri) and filesystem.get_file_info(bucket).type == fs.FileType.NotFound:
                raise storage_error(OSError("AWS Error NO_SUCH_BUCKET"), uri, properties)
            raise StorageAccessError(f"{uri} does not exist")
        return _visible_files(filesystem, path, prefix)
    except OSError as error:
        raise storage_error(error, uri, properties) from error


def _visible_files(filesystem: fs.FileSystem, root: str, prefix: str) -> list[SourceFile]:
    """Files under directory ``root`` whose path below it has no hidden component (``_x``, ``.x``)."""
    root = root.rstrip("/")
    found = []
    for info in filesystem.get_file_info(fs.FileSelector(root, recursive=True)):
        if info.type != fs.FileType.File:
            continue
        relative = info.path[len(root) :].lstrip("/")
        if any(part.startswith(("_", ".")) for part in relative.split("/")):
            continue
        found.append(SourceFile(prefix + info.path, info.path, info.size or 0))
    return sorted(found, key=lambda f: f.path)


def _glob(filesystem: fs.FileSystem, pattern: str, uri: str, prefix: str) -> list[SourceFile]:
    """Files matching a glob ``pattern`` (``*`` and ``?`` stay within one path component, as in Hadoop)."""
    parts = pattern.split("/")
    fixed = next(index for index, part in enumerate(parts) if _GLOB.search(part))
    base = "/".join(parts[:fixed])
    matcher = re.compile(fnmatch.translate(pattern).replace(".*", "[^/]*"))
    found = []
    for info in filesystem.get_file_info(fs.FileSelector(base, recursive=True, allow_not_found=True)):
        if info.type == fs.FileType.File and matcher.match(info.path):
            found.append(SourceFile(prefix + info.path, info.path, info.size or 0))
    if not found:
        raise StorageAccessError(f"no files match {uri}")
    return sorted(found, key=lambda f: f.path)


def storage_error(error: BaseException, uri: str, properties: Mapping[str, str]) -> EngineError:
    """``error`` from reading or writing ``uri`` as one line: what failed, where (URI, bucket, endpoint), not how."""
    message = str(error)
    parsed = urlparse(uri)
    where = uri
    if parsed.scheme.lower() in OBJECT_STORE_SCHEMES:
        endpoint = properties.get("s3.endpoint") or "the default endpoint"
        where = f"{uri} (bucket {parsed.netloc!r} at {endpoint})"
    if isinstance(error, StorageAccessError | StorageUnavailableError):
        return error
    if any(name in message for name in _NO_BUCKET):
        return StorageAccessError(f"{where}: the bucket does not exist")
    if any(name in message for name in _ACCESS_DENIED):
        return StorageAccessError(
            f"{where}: access denied ({_aws_error_name(message)}): check the access key and secret key, and the "
            "bucket's permissions"
        )
    if isinstance(error, FileNotFoundError):
        return StorageAccessError(f"{where}: no such file or directory")
    if any(name in message for name in _UNAVAILABLE):
        return StorageUnavailableError(f"{where}: the object store is unavailable ({_aws_error_name(message)})")
    return StorageUnavailableError(f"{where}: {type(error).__name__}: {_aws_error_name(message)}")


_KEY_IN_BUCKET = re.compile(r"key '(?P<key>[^']*)' in bucket '(?P<bucket>[^']*)'")


def storage_failure(message: str, properties: Mapping[str, object] | None = None) -> EngineError | None:
    """A storage error described by ``message`` (e.g. a Spark task's failure), or None when it is not one."""
    match = _KEY_IN_BUCKET.search(message)
    if match is None or "AWS Error" not in message:
        return None
    uri = f"s3://{match.group('bucket')}/{match.group('key')}"
    endpoint = (properties or {}).get("s3.endpoint") or "the configured endpoint"
    return storage_error(OSError(message), uri, {"s3.endpoint": str(endpoint)})


def _aws_error_name(message: str) -> str:
    """The AWS error name and operation in a pyarrow message (``ACCESS_DENIED during HeadObject``), else its start."""
    match = re.search(r"AWS Error (\w+) during (\w+) operation", message)
    if match:
        return f"{match.group(1)} during {match.group(2)}"
    return " ".join(message.split())[:200]
