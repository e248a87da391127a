"""Faults injected into a real SQL catalog and a real FileIO, at each phase of a commit.

``FaultyCatalog`` is pyiceberg's ``SqlCatalog`` (SQLite or PostgreSQL) whose ``commit_table`` and ``load_table``
fail as the process-wide plan says, and whose tables get a ``FaultyFileIO``: pyiceberg's ``PyArrowFileIO`` that
fails writes (after writing part of the file, as a broken connection does) and deletes of chosen paths; or that, just
before a commit, starts a real outage the commit then meets (``before_commit``). Jobs load it
through pyiceberg's configuration (``py-catalog-impl``), so the code under test runs unchanged; only the driver
process sees the plan (executors rebuild a plain FileIO from the table's properties).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO

CATALOG_IMPL = "tests.support.faults.FaultyCatalog"


class InjectedFaultError(ConnectionResetError):
    """A fault this module raised (a connection reset: the caller cannot tell what the other side did)."""


@dataclass
class FaultPlan:
    """Which calls fail and how many times (each counter is decremented as its fault fires)."""

    commits_failing_before_send: int = 0
    commits_failing_after_landing: int = 0
    reloads_failing_after_landing: int = 0  # armed by a landed commit (failing or not)
    reloads_failing: int = 0  # from the start
    writes_failing: int = 0
    write_path_contains: str = ""
    deletes_failing: bool = False
    delete_path_contains: str = ""
    # Called once, just before the next commit is sent: starts a real outage (a lock held by another process, a
    # stopped server) that the commit then meets; nothing is faked.
    before_commit: Callable[[], None] | None = None
    fired: list[str] = field(default_factory=list)
    failed_deletes: list[str] = field(default_factory=list)
    _armed_reload_failures: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, counter: str) -> bool:
        """Consume one firing of ``counter``; whether the fault fires."""
        with self._lock:
            left = getattr(self, counter)
            if left <= 0:
                return False
            setattr(self, counter, left - 1)
            self.fired.append(counter)
            return True

    def arm_reload_failures(self) -> None:
        """After a landed commit: the next ``reloads_failing_after_landing`` loads of a table fail."""
        with self._lock:
            self._armed_reload_failures = self.reloads_failing_after_landing
            if self.reloads_failing_after_landing:
                self.fired.append("reload failures armed")

    def take_reload_failure(self) -> bool:
        with self._lock:
            if self._armed_reload_failures <= 0:
                return False
            self._armed_reload_failures -= 1
            self.fired.append("reload")
            return True


_PLANS = [FaultPlan()]


def reset_plan(**faults: Any) -> FaultPlan:
    """A fresh process-wide plan with ``faults`` set (the previous one is kept by whoever holds it)."""
    _PLANS[0] = FaultPlan(**faults)
    return _PLANS[0]


def plan() -> FaultPlan:
    """The process-wide plan in force."""
    return _PLANS[0]


class FaultyCatalog(SqlCatalog):
    """A real SQL catalog whose commits and loads fail as the plan says (module doc)."""

    def commit_table(self, table, requirements, updates):
        """Fail before sending, or land and then fail, as planned."""
        if plan().take("commits_failing_before_send"):
            raise InjectedFaultError("injected: connection reset before the commit was sent")
        outage, plan().before_commit = plan().before_commit, None
        if outage is not None:
            plan().fired.append("before commit")
            outage()
        response = super().commit_table(table, requirements, updates)
        plan().arm_reload_failures()
        if plan().take("commits_failing_after_landing"):
            raise InjectedFaultError("injected: connection reset after the commit landed")
        return response

    def load_table(self, identifier):
        """Fail while reload failures are armed."""
        if plan().take_reload_failure() or plan().take("reloads_failing"):
            raise InjectedFaultError(f"injected: connection reset while loading {identifier}")
        return super().load_table(identifier)

    def _load_file_io(self, properties=None, location=None) -> FileIO:
        return FaultyFileIO({**self.properties, **(properties or {})})


class FaultyFileIO(PyArrowFileIO):
    """pyiceberg's PyArrowFileIO with planned write and delete failures."""

    def new_output(self, location: str) -> PyArrowFile:
        output = super().new_output(location)
        if plan().write_path_contains and plan().write_path_contains in location and plan().take("writes_failing"):
            return _BrokenOutput(output)
        return output

    def delete(self, location) -> None:
        path = location if isinstance(location, str) else location.location
        if plan().deletes_failing and plan().delete_path_contains in path:
            plan().failed_deletes.append(path)
            plan().fired.append("delete")
            raise PermissionError(f"injected: cannot delete {path}")
        super().delete(location)


class _BrokenOutput:
    """An output file whose stream writes a few bytes and then fails, leaving a partial file behind."""

    def __init__(self, output: PyArrowFile) -> None:
        self._output = output
        self.location = output.location

    def __getattr__(self, name: str) -> Any:
        return getattr(self._output, name)

    def create(self, overwrite: bool = False):
        return _BrokenStream(self._output.create(overwrite=overwrite))

    def to_input_file(self):
        return self._output.to_input_file()


class _BrokenStream:
    """Writes the first half of the first write, then fails (the file is left partial on storage)."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, data) -> int:
        self._stream.write(bytes(data[: max(1, len(data) // 2)]))
        self._stream.close()
        raise InjectedFaultError("injected: connection reset while writing")

    def close(self) -> None:
        self._stream.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
