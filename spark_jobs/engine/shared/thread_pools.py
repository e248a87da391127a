"""Thread pools shared by a whole process, one per purpose, created again in a forked child (which has none)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_POOLS: dict[tuple[int, str], ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def process_thread_pool(name: str, threads: int) -> ThreadPoolExecutor:
    """The process's pool named ``name`` (``threads`` threads), created on first use in each process."""
    key = (os.getpid(), name)
    with _LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            for stale in [k for k in _POOLS if k[0] != key[0]]:  # a forked child's copies of its parent's pools
                del _POOLS[stale]
            pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
            _POOLS[key] = pool
        return pool
