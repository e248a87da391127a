"""Decoding ahead: results in order, and nothing left running when the consumer stops."""

from __future__ import annotations

import threading
import time

from spark_jobs.engine.parquet.read_ahead import READ_AHEAD_THREADS, map_ahead


def test_results_come_back_in_order_even_when_later_ones_finish_first() -> None:
    def decode(row_group: int) -> int:
        time.sleep(0.01 * (5 - row_group))  # earlier row groups are slower
        return row_group * 10

    assert list(map_ahead(decode, list(range(6)))) == [0, 10, 20, 30, 40, 50]


def test_stopping_early_waits_for_started_decodes_and_cancels_the_rest() -> None:
    started: list[int] = []
    lock = threading.Lock()

    def decode(row_group: int) -> int:
        with lock:
            started.append(row_group)
        time.sleep(0.02)
        return row_group

    results = map_ahead(decode, list(range(50)))
    assert next(results) == 0
    results.close()
    finished = len(started)
    time.sleep(0.05)
    assert len(started) == finished  # nothing new starts after close
    assert finished <= READ_AHEAD_THREADS + 2
