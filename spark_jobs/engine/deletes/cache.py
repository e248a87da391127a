"""The process-wide cache of loaded delete files, so a delete file shared by many data files is read once.

A position or equality delete file usually applies to many data files, and one executor reads many of them, so
what a delete file holds is loaded once and then filtered per data file. Keys start with the delete file's path
(plus what was loaded from it: a row group, the projected equality columns and their types).
"""

from __future__ import annotations

from spark_jobs.engine.shared.bounded_cache import BoundedCache, max_bytes_from_environment

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
MAX_BYTES_ENV_VAR = "ICEBERG_DELETE_CACHE_MAX_BYTES"

DeleteFileCache = BoundedCache  # the type delete loaders take (tests pass their own instance)

_PROCESS_CACHE = BoundedCache(max_bytes_from_environment(MAX_BYTES_ENV_VAR, DEFAULT_MAX_BYTES))


def delete_file_cache() -> BoundedCache:
    """The delete file cache shared by every scan in this process."""
    return _PROCESS_CACHE
