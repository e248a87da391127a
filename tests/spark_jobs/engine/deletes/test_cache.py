"""The process-wide delete file cache."""

from __future__ import annotations

from spark_jobs.engine.deletes.cache import delete_file_cache


def test_the_process_cache_is_one_shared_instance() -> None:
    assert delete_file_cache() is delete_file_cache()
