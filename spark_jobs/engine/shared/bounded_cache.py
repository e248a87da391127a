"""A process-wide, bounded, thread-safe cache of loaded immutable files (delete files, manifests).

Iceberg never rewrites a file in place, so what was loaded from a path stays valid for the life of the process.
The cache is:

1. keyed by a tuple that starts with the file's path (plus what was loaded from it);
2. bounded by the approximate bytes of what it holds: least recently used entries are evicted first, and an entry
   larger than the whole bound is returned without being kept;
3. single-flight: when several threads ask for the same missing key, one loads it and the others wait for it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from spark_jobs.engine.shared.integer_setting import parse_integer_setting

V = TypeVar("V")


@dataclass
class _Entry:
    """One cached value with the bytes it is counted as."""

    value: Any
    weight: int


class BoundedCache:
    """An LRU map from a key to a loaded value, bounded by the sum of the values' weights (bytes)."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._loading: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()
        self.total_bytes = 0
        self.hits = 0
        self.misses = 0

    def get_or_load(self, key: Hashable, load: Callable[[], tuple[V, int]]) -> V:
        """The value for ``key``; on a miss ``load()`` returns ``(value, weight_in_bytes)`` and the value is kept."""
        while True:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None:
                    self._entries.move_to_end(key)
                    self.hits += 1
                    return entry.value
                in_flight = self._loading.get(key)
                if in_flight is None:
                    self._loading[key] = threading.Event()
                    self.misses += 1
                    break
            # Another thread is loading this key: wait, then look again (it may have failed or been evicted).
            in_flight.wait()
        try:
            value, weight = load()
            with self._lock:
                self._keep(key, value, weight)
            return value
        finally:
            with self._lock:
                self._loading.pop(key).set()

    def get(self, key: Hashable) -> Any | None:
        """The value kept for ``key``, or None (counted as a hit or a miss); nothing is loaded."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry.value

    def put(self, key: Hashable, value: Any, weight: int) -> None:
        """Keep ``value`` for ``key`` (replacing what was there), evicting least recently used entries as needed."""
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self.total_bytes -= previous.weight
            self._keep(key, value, weight)

    def _keep(self, key: Hashable, value: Any, weight: int) -> None:
        """Store an entry and evict least recently used ones until the bound holds; call with the lock held."""
        if weight > self.max_bytes:
            return
        self._entries[key] = _Entry(value, weight)
        self.total_bytes += weight
        while self.total_bytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self.total_bytes -= evicted.weight

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def clear(self) -> None:
        """Drop every entry (tests, or a job that changes tables)."""
        with self._lock:
            self._entries.clear()
            self.total_bytes = 0


def max_bytes_from_environment(variable: str, default: int) -> int:
    """A cache bound from the environment variable ``variable`` when set, else ``default``."""
    return parse_integer_setting(
        os.environ.get(variable), default, name=variable, expected="an integer number of bytes", error=ValueError
    )
