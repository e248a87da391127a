"""Write a task's batches on a helper thread while the task keeps receiving them (decode overlaps encode).

1. The first ``put`` starts the thread, which runs the given write over the batches as they arrive through a small
   bounded queue (at most ``_QUEUED`` batches wait: memory stays a few batches).
2. ``put`` hands a batch over; if the writer has stopped with an error, ``put`` raises it at once.
3. ``finish`` ends the stream, waits for the thread and returns what the write returned (or raises its error).
4. A write that returns before the end of the stream is an error (``EngineError``), not batches quietly dropped.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

import pyarrow as pa

from spark_jobs.engine.shared.errors import EngineError

_QUEUED = 2
_POLL_SECONDS = 0.05
_END = object()


Result = TypeVar("Result")  # what the write returns for the whole stream (its written files)


class BackgroundWrite(Generic[Result]):
    """One write running on its own thread over the batches ``put`` to it (module doc)."""

    def __init__(self, write: Callable[[Iterable[pa.RecordBatch], pa.Schema], list[Result]]) -> None:
        self._write = write
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=_QUEUED)
        self._thread: threading.Thread | None = None
        self._result: list[Result] = []
        self._error: BaseException | None = None
        self._stream_ended = False  # the write took the end of the stream

    def put(self, batch: pa.RecordBatch) -> None:
        """Hand ``batch`` to the writer (starting it on the first batch); raises the writer's error if it failed."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(batch.schema,), name="background-write")
            self._thread.daemon = True
            self._thread.start()
        self._hand_over(batch)

    def finish(self) -> list[Result]:
        """End the stream; what the write returned (nothing when no batch came), or its error raised here."""
        if self._thread is None:
            return []
        self._hand_over(_END)
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result

    def _hand_over(self, item: pa.RecordBatch | object) -> None:
        while True:
            if self._error is not None:
                raise self._error
            if self._thread is not None and not self._thread.is_alive():
                if self._error is not None:  # it failed between the check above and this one
                    raise self._error
                return  # the write took the end of the stream and returned
            try:
                self._queue.put(item, timeout=_POLL_SECONDS)
                return
            except queue.Full:
                continue

    def _batches(self) -> Iterator[pa.RecordBatch]:
        while (item := self._queue.get()) is not _END:
            yield item
        self._stream_ended = True

    def _run(self, schema: pa.Schema) -> None:
        try:
            self._result = self._write(self._batches(), schema)
            if not self._stream_ended:
                raise EngineError("the background write returned before the end of its batches: rows would be lost")
        except BaseException as error:  # handed to the task's thread, which raises it
            self._error = error
