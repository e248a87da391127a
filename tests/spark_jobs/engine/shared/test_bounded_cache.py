"""The bounded cache: LRU by bytes, oversize values not kept, one load per key under concurrency."""

from __future__ import annotations

import threading
import time

import pytest

from spark_jobs.engine.shared.bounded_cache import BoundedCache, max_bytes_from_environment


def _loader(value: str, weight: int, calls: list[str]):
    def load() -> tuple[str, int]:
        calls.append(value)
        return value, weight

    return load


def test_hit_returns_the_loaded_value_without_loading_again() -> None:
    cache = BoundedCache(max_bytes=100)
    calls: list[str] = []

    assert cache.get_or_load(("a",), _loader("A", 10, calls)) == "A"
    assert cache.get_or_load(("a",), _loader("other", 10, calls)) == "A"

    assert calls == ["A"]
    assert (cache.hits, cache.misses) == (1, 1)


def test_least_recently_used_entries_are_evicted_to_stay_under_the_bound() -> None:
    cache = BoundedCache(max_bytes=100)
    calls: list[str] = []
    cache.get_or_load("a", _loader("A", 40, calls))
    cache.get_or_load("b", _loader("B", 40, calls))
    cache.get_or_load("a", _loader("A", 40, calls))  # a is now more recent than b

    cache.get_or_load("c", _loader("C", 40, calls))

    assert "a" in cache and "c" in cache and "b" not in cache
    assert cache.total_bytes == 80


def test_value_larger_than_the_bound_is_returned_but_not_kept() -> None:
    cache = BoundedCache(max_bytes=100)
    calls: list[str] = []

    assert cache.get_or_load("big", _loader("BIG", 101, calls)) == "BIG"
    assert cache.get_or_load("big", _loader("BIG", 101, calls)) == "BIG"

    assert calls == ["BIG", "BIG"]
    assert len(cache) == 0


def test_concurrent_requests_for_one_key_load_it_once() -> None:
    cache = BoundedCache(max_bytes=100)
    loads = []
    started = threading.Barrier(8)

    def slow_load() -> tuple[str, int]:
        loads.append(1)
        time.sleep(0.05)
        return "V", 1

    results = []

    def worker() -> None:
        started.wait()
        results.append(cache.get_or_load("k", slow_load))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert results == ["V"] * 8
    assert len(loads) == 1


def test_a_failed_load_raises_and_a_later_request_loads_again() -> None:
    cache = BoundedCache(max_bytes=100)

    def failing() -> tuple[str, int]:
        raise OSError("unreachable")

    with pytest.raises(OSError, match="unreachable"):
        cache.get_or_load("k", failing)
    assert cache.get_or_load("k", lambda: ("V", 1)) == "V"


def test_bound_from_the_environment_or_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOME_CACHE_MAX_BYTES", raising=False)
    assert max_bytes_from_environment("SOME_CACHE_MAX_BYTES", 7) == 7
    monkeypatch.setenv("SOME_CACHE_MAX_BYTES", "1024")
    assert max_bytes_from_environment("SOME_CACHE_MAX_BYTES", 7) == 1024
    monkeypatch.setenv("SOME_CACHE_MAX_BYTES", "1 GiB")
    with pytest.raises(ValueError, match="SOME_CACHE_MAX_BYTES must be an integer number of bytes, got '1 GiB'"):
        max_bytes_from_environment("SOME_CACHE_MAX_BYTES", 7)


def test_get_and_put_keep_the_bound_and_replace_entries() -> None:
    cache = BoundedCache(max_bytes=100)
    assert cache.get(("a",)) is None
    cache.put(("a",), "A", 60)
    cache.put(("a",), "A2", 50)  # replaces: counted once
    assert cache.get(("a",)) == "A2"
    assert cache.total_bytes == 50
    cache.put(("b",), "B", 50)
    cache.put(("c",), "C", 10)  # evicts the least recently used ("a")
    assert cache.get(("a",)) is None
    assert (cache.get(("b",)), cache.get(("c",))) == ("B", "C")
    cache.put(("huge",), "H", 101)  # larger than the bound: not kept
    assert cache.get(("huge",)) is None
    assert cache.total_bytes == 60
