"""Ranged reads of an S3 object whose size the table's metadata records: each read one GET, no HEAD before it.

pyarrow's S3 file system opens a file by path and first asks the object store for its size (one HEAD request per
file), although a manifest records every data and delete file's size and a deletion vector's offset and length.
obstore (Rust's ``object_store``) sends a ranged GET alone, so reads that know the size go through it:

1. ``object_store_for(io, path)``: an obstore ``S3Store`` for an ``s3``/``s3a``/``s3n`` path of a pyarrow FileIO,
   built from the same properties pyiceberg gives pyarrow (``s3.endpoint``, keys or ``client.*`` keys, session
   token, region, path or virtual-host addressing, proxy, timeouts, anonymous access), one per bucket and settings
   in the process. None when obstore could not honour the settings as pyarrow does (a role to assume, a named
   profile, a remote signer, neither keys nor anonymous access, or no region without an endpoint: pyarrow resolves
   those through the AWS SDK's chain), or when obstore is not installed (a cluster's executors with an environment
   of their own); the caller then opens the file by path as before.
2. Transient failures (HTTP 5xx such as 503 SlowDown, connection resets, timeouts) are retried with exponential
   backoff (``RETRY``), as the FileIO's AWS standard retry strategy does.
3. ``SizedObjectFile``: ``seek``/``tell``/``read``/``read_at`` over the object with its recorded size, one GET per
   read; stateless ``read_at`` calls may run on several threads. A read the object cannot satisfy (it is shorter
   than recorded) fails with ``CorruptFileError``; ``check_recorded_size`` asks the object's real size (one HEAD,
   only after a failure) so the error names both sizes.
4. ``read_object_range``: one range of an object (a deletion vector's blob), or None when (1) gives no store.
5. Errors: access denied or a missing object/bucket is ``StorageAccessError`` (bad input); anything else from the
   store is ``StorageUnavailableError`` (retryable); the message names the path and endpoint, never a secret.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pyiceberg.io import FileIO

from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.storage import StorageAccessError, StorageUnavailableError

if TYPE_CHECKING:  # obstore is optional: an executor without it reads with pyarrow
    from obstore.store import RetryConfig, S3Store

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
# Settings that make pyarrow authenticate or sign in ways obstore does not reproduce here.
_UNSUPPORTED = (
    "s3.role-arn",
    "client.role-arn",
    "s3.profile-name",
    "client.profile-name",
    "s3.signer",
    "s3.signer.uri",
    "s3.signer.endpoint",
    "s3.resolve-region",
)
# Stores by bucket and settings, least recently used first: few per process, but rotated session tokens make new ones.
_STORES: OrderedDict[tuple[Any, ...], S3Store] = OrderedDict()
_STORES_MAX = 32
_STORES_LOCK = threading.Lock()


def _retry_config() -> RetryConfig:
    return {
        "max_retries": 6,
        "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=15), "base": 2},
        "retry_timeout": timedelta(minutes=3),
    }


def _first(properties: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = properties.get(name)
        if value:
            return value
    return None


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() in {"true", "1", "yes", "on"}


def _credentials(properties: Mapping[str, str]) -> dict[str, Any] | None:
    """The keys pyarrow would sign with: the FileIO's, else the environment's (first in the AWS SDK's chain)."""
    key_id = _first(properties, "s3.access-key-id", "client.access-key-id")
    secret = _first(properties, "s3.secret-access-key", "client.secret-access-key")
    if key_id and secret:
        token = _first(properties, "s3.session-token", "client.session-token")
        return {"access_key_id": key_id, "secret_access_key": secret, "token": token}
    from_environment = os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY")
    if key_id is None and secret is None and from_environment:
        return {
            "access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
            "secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
            "token": os.environ.get("AWS_SESSION_TOKEN") or None,
        }
    return None  # the rest of the chain (profiles, instance roles): pyarrow's


def store_settings(properties: Mapping[str, str], bucket: str) -> dict[str, Any] | None:
    """The obstore settings equal to what pyiceberg gives pyarrow for this bucket, or None (see module doc, 1)."""
    if any(properties.get(name) for name in _UNSUPPORTED):
        return None
    endpoint = properties.get("s3.endpoint")
    region = _first(properties, "s3.region", "client.region") or os.environ.get("AWS_REGION")
    if region is None and not endpoint:
        return None  # pyarrow resolves the bucket's region through AWS
    config: dict[str, Any] = {"region": region or "us-east-1"}
    if endpoint:
        config["endpoint"] = endpoint
    # Set explicitly, so that obstore's own reading of the environment (AWS_SKIP_SIGNATURE, ...) changes nothing.
    config["skip_signature"] = _true(properties.get("s3.anonymous"))
    config["virtual_hosted_style_request"] = _true(properties.get("s3.force-virtual-addressing"))
    credentials = None if config["skip_signature"] else _credentials(properties)
    if credentials is None and not config["skip_signature"]:
        return None
    client: dict[str, Any] = {}
    if endpoint and endpoint.lower().startswith("http://"):
        client["allow_http"] = True
    if proxy := properties.get("s3.proxy-uri"):
        client["proxy_url"] = proxy
    if connect_timeout := properties.get("s3.connect-timeout"):
        client["connect_timeout"] = timedelta(seconds=float(connect_timeout))
    if request_timeout := properties.get("s3.request-timeout"):
        client["timeout"] = timedelta(seconds=float(request_timeout))
    return {"bucket": bucket, "config": config, "client_options": client, "credentials": credentials}


class _StaticCredentials:
    """The FileIO's keys as obstore's credential provider: they then replace obstore's own lookup in the
    environment, which would otherwise add, e.g., an ``AWS_SESSION_TOKEN`` of the process to keys that have none."""

    def __init__(self, credentials: dict[str, Any]) -> None:
        self._credentials = {**credentials, "expires_at": None}

    def __call__(self) -> Any:
        return dict(self._credentials)

    def __repr__(self) -> str:
        return "_StaticCredentials(<hidden>)"


def object_store_for(io: FileIO, path: str) -> tuple[S3Store, str] | None:
    """(obstore store, key) for ``path`` read through this FileIO's settings, or None (see module doc, 1)."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    parsed = urlparse(path)
    if not isinstance(io, PyArrowFileIO) or parsed.scheme.lower() not in S3_SCHEMES or not parsed.netloc:
        return None
    settings = store_settings(io.properties, parsed.netloc)
    if settings is None:
        return None
    credentials = settings["credentials"]
    cache_key = (
        parsed.netloc,
        tuple(sorted(settings["config"].items())),
        tuple(sorted((k, str(v)) for k, v in settings["client_options"].items())),
        tuple(sorted(credentials.items())) if credentials else None,
    )
    with _STORES_LOCK:
        store = _STORES.get(cache_key)
        if store is None:
            try:
                from obstore.store import S3Store
            except ImportError:  # an executor whose environment lacks it: pyarrow reads as before
                return None
            store = S3Store(
                settings["bucket"],
                config=settings["config"],
                client_options=settings["client_options"],
                retry_config=_retry_config(),
                credential_provider=_StaticCredentials(credentials) if credentials else None,
            )
            _STORES[cache_key] = store
            while len(_STORES) > _STORES_MAX:
                _STORES.popitem(last=False)
        else:
            _STORES.move_to_end(cache_key)
    return store, parsed.path.lstrip("/")


def clear_stores() -> None:
    """Forget every store (and its connections): tests, and a cold benchmark run."""
    with _STORES_LOCK:
        _STORES.clear()


def _storage_error(error: Exception, path: str, endpoint: str | None) -> Exception:
    from obstore.exceptions import NotFoundError, PermissionDeniedError, UnauthenticatedError

    where = f"{path} (endpoint {endpoint or 'AWS S3'})"
    if isinstance(error, NotFoundError):
        return StorageAccessError(f"{where}: no such object or bucket")
    if isinstance(error, (PermissionDeniedError, UnauthenticatedError)):
        return StorageAccessError(f"{where}: access denied ({type(error).__name__})")
    return StorageUnavailableError(f"{where}: read failed ({type(error).__name__}): {_first_line(error)}")


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0][:300] if str(error).strip() else ""


def read_object_range(io: FileIO, path: str, offset: int, length: int) -> bytes | None:
    """``length`` bytes of the object at ``offset`` in one GET, or None when this FileIO's S3 settings need pyarrow.

    Fails with ``CorruptFileError`` when the object ends before ``offset + length`` (its size asked only then).
    """
    found = object_store_for(io, path)
    if found is None:
        return None
    store, key = found
    if length == 0:
        return b""
    source = SizedObjectFile(store, key, offset + length, path, io.properties.get("s3.endpoint"))
    try:
        data = source.get(offset, length)
    except StorageUnavailableError:
        source.check_ends_after(offset + length)
        raise
    if len(data) != length:
        source.check_ends_after(offset + length)
        raise CorruptFileError(f"{path}: expected {length} bytes at offset {offset}, got {len(data)}")
    return data


class SizedObjectFile:
    """A read-only, seekable file over an S3 object of known size; every read is one ranged GET (no HEAD)."""

    def __init__(self, store: S3Store, key: str, size: int, path: str, endpoint: str | None) -> None:
        self.store = store
        self.key = key
        self._size = size
        self.path = path
        self.endpoint = endpoint
        self._position = 0
        self.closed = False

    @classmethod
    def open(cls, io: FileIO, path: str, size: int) -> SizedObjectFile | None:
        """The object ``path`` with its recorded ``size``, or None when this FileIO's settings need pyarrow."""
        found = object_store_for(io, path)
        if found is None or size <= 0:
            return None
        store, key = found
        return cls(store, key, size, path, io.properties.get("s3.endpoint"))

    def reopened(self) -> SizedObjectFile:
        """Another handle on the same object, with its own position (no request)."""
        return SizedObjectFile(self.store, self.key, self._size, self.path, self.endpoint)

    def size(self) -> int:
        """The recorded size."""
        return self._size

    def seek(self, offset: int, whence: int = 0) -> int:
        """Move to a position (``whence`` 0: from the start, 1: from here, 2: from the end)."""
        base = {0: 0, 1: self._position, 2: self._size}[whence]
        self._position = base + offset
        return self._position

    def tell(self) -> int:
        """The current position."""
        return self._position

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes from the current position (to the recorded end when ``size`` < 0), in one GET."""
        end = self._size if size is None or size < 0 else min(self._size, self._position + size)
        data = self.read_at(max(0, end - self._position), self._position)
        self._position += len(data)
        return data

    def read_at(self, nbytes: int, offset: int) -> bytes:
        """``nbytes`` bytes at ``offset`` (stopping at the recorded end), in one GET; thread-safe."""
        length = max(0, min(nbytes, self._size - offset))
        if length == 0:
            return b""
        try:
            data = self.get(offset, length)
        except StorageUnavailableError as error:
            # A range past the object's end is refused: the recorded size is larger than the object.
            self.check_recorded_size()
            raise error
        if len(data) != length:
            self.check_recorded_size()
            raise CorruptFileError(f"{self.path}: expected {length} bytes at offset {offset}, got {len(data)}")
        return data

    def get(self, offset: int, length: int) -> bytes:
        """One ranged GET of the object (what the store returns: fewer bytes when the object ends first)."""
        import obstore
        from obstore.exceptions import BaseError

        try:
            return bytes(obstore.get_range(self.store, self.key, start=offset, length=length))
        except BaseError as error:
            raise _storage_error(error, self.path, self.endpoint) from error

    def check_recorded_size(self) -> None:
        """Raise ``CorruptFileError`` naming both sizes when the object's size is not the recorded one (one HEAD)."""
        actual = self._object_size()
        if actual != self._size:
            raise CorruptFileError(
                f"{self.path}: the table's metadata records {self._size} bytes but the object has {actual} bytes"
            )

    def check_ends_after(self, end: int) -> None:
        """Raise ``CorruptFileError`` when the object ends before byte ``end`` (one HEAD)."""
        actual = self._object_size()
        if actual < end:
            raise CorruptFileError(f"{self.path}: the file ends at byte {actual}, before the {end} bytes recorded")

    def _object_size(self) -> int:
        import obstore
        from obstore.exceptions import BaseError

        try:
            return int(obstore.head(self.store, self.key)["size"])
        except BaseError as error:
            raise _storage_error(error, self.path, self.endpoint) from error

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        """Nothing to release: every read is its own request."""
        self.closed = True

    def __enter__(self) -> SizedObjectFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


__all__ = ["SizedObjectFile", "clear_stores", "object_store_for", "read_object_range", "store_settings"]
