"""Process-wide thread pools: one per name, reused by every caller of the process."""

from __future__ import annotations

from spark_jobs.engine.shared.thread_pools import process_thread_pool


def test_a_name_gives_one_pool_and_another_name_another() -> None:
    first = process_thread_pool("test-pool-a", 2)
    assert process_thread_pool("test-pool-a", 2) is first
    other = process_thread_pool("test-pool-b", 1)
    assert other is not first
    assert first.submit(lambda: 21 * 2).result() == 42
    assert other.submit(lambda: "ran").result() == "ran"
