"""Decode row groups ahead of the consumer on a small process-wide thread pool.

Decoding (and evaluating filters and equality deletes, mostly numpy and Arrow kernels) releases the GIL for most of
its time, so a few row groups decoding at once keep both cores of a task busy:

1. Submit the decode of up to ``READ_AHEAD_THREADS + 1`` row groups, in file order, to the process's pool.
2. Hand results back strictly in order, submitting the next row group each time one is taken.
3. When the consumer stops early, cancel what has not started and wait for what has, so that nothing reads the
   file after its owner closes it.
4. The pool is created on first use per process id: a forked Python worker gets its own threads.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

from spark_jobs.engine.shared.thread_pools import process_thread_pool

READ_AHEAD_THREADS = 3  # row groups decoded concurrently (3 beat 2 and 4 on the read benchmark, 2 cores)
T = TypeVar("T")
Unit = TypeVar("Unit")


def map_ahead(decode: Callable[[Unit], T], row_groups: list[Unit]) -> Generator[T, None, None]:
    """``map(decode, row_groups)`` in order, with up to ``READ_AHEAD_THREADS`` row groups decoding ahead.

    A row group may be a unit of several row groups decoded by one call.
    """
    pool = _read_ahead_pool()
    pending: deque[Future[T]] = deque()
    try:
        for row_group in row_groups:
            pending.append(pool.submit(decode, row_group))
            if len(pending) > READ_AHEAD_THREADS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        wait(pending)  # nothing may still read the file once the caller closes it


def _read_ahead_pool() -> ThreadPoolExecutor:
    """The process's decoding threads, created on first use (and again in a forked child, which has none)."""
    return process_thread_pool("parquet-read-ahead", READ_AHEAD_THREADS)
