"""A write on a helper thread: every batch put reaches it in order, its result and its errors come back."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from spark_jobs.engine.write.background_write import BackgroundWrite


def _batch(start: int, count: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(range(start, start + count), pa.int64())], names=["id"])


def test_batches_reach_the_writer_thread_in_order_and_its_result_comes_back() -> None:
    seen: list[int] = []
    threads: set[str] = set()

    def write(batches, schema):
        threads.add(threading.current_thread().name)
        for batch in batches:
            seen.extend(batch.column(0).to_pylist())
        return [{"rows": len(seen), "schema": schema}]

    background = BackgroundWrite(write)
    for index in range(10):
        background.put(_batch(index * 5, 5))
    (result,) = background.finish()
    assert seen == list(range(50)) and result["rows"] == 50
    assert result["schema"] == _batch(0, 1).schema
    assert threads == {"background-write"}


def test_nothing_put_writes_nothing() -> None:
    def write(batches, schema):  # pragma: no cover - must not run
        raise AssertionError("no batch, no write")

    assert BackgroundWrite(write).finish() == []


def test_an_error_of_the_writer_is_raised_in_the_putting_thread() -> None:
    def write(batches, schema):
        for batch in batches:
            if batch.column(0)[0].as_py() >= 20:
                raise ValueError("disk full")
        return []

    background = BackgroundWrite(write)
    with pytest.raises(ValueError, match="disk full"):
        for index in range(1000):  # the writer stops at the third batch; a put or finish raises its error
            background.put(_batch(index * 10, 10))
        background.finish()


def test_a_write_that_returns_before_the_end_of_its_batches_is_an_error() -> None:
    from spark_jobs.engine.shared.errors import EngineError

    def write(batches, schema):
        next(iter(batches))
        return [{"rows": "only the first batch"}]

    background = BackgroundWrite(write)
    with pytest.raises(EngineError, match="before the end of its batches"):
        for index in range(1000):
            background.put(_batch(index * 10, 10))
        background.finish()
