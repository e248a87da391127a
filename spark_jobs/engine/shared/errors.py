"""Domain exceptions of the engine, in one place.

Each carries a message that names what was wrong (which table, file, argument) and what was expected. The job
entry points turn ``UserInputError`` (``CorruptFileError`` included: retrying cannot repair a file) into exit code 2
with a one-line reason.
"""

from __future__ import annotations

import struct

# Failures that describe the bytes of a file, not the way to it: raised while decoding, they mean the file is bad.
_DECODING_ERRORS = (EOFError, ValueError, struct.error, IndexError, KeyError, TypeError, UnicodeDecodeError)
# An I/O error whose message says the storage could not be reached is worth a retry, not a corrupt-file verdict.
_TRANSIENT_MARKERS = ("AWS Error", "curl", "onnection", "imed out", "imeout", "emporar", "hrottl", "SlowDown", " 503")


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class UserInputError(EngineError):
    """The caller asked for something that cannot be done (bad argument, unknown table or snapshot).

    ``argument`` names the parameter the error is about (``"table"``, ``"catalog"``...) when the message alone may
    not say it; a job names the command-line option the user typed for it.
    """

    def __init__(self, *args: object, argument: str | None = None) -> None:
        super().__init__(*args)
        self.argument = argument


class TableNotFoundError(UserInputError):
    """The catalog has no such table."""


class SnapshotNotFoundError(UserInputError):
    """No snapshot matches the requested id, ref or timestamp."""


class RequiredColumnNullsError(UserInputError):
    """Rows to write hold nulls in columns the table requires (``null_counts``: rows per column name); with
    ``table`` (its name), the message says the source holds them and which table requires the columns."""

    def __init__(self, null_counts: dict[str, int], *, table: str | None = None) -> None:
        self.null_counts = dict(null_counts)
        self.table = table
        if table is None:
            super().__init__(f"nulls in required column(s): {self.detail}")
        else:
            super().__init__(f"source has nulls in column(s) table {table} requires: {self.detail}")

    @property
    def detail(self) -> str:
        """``'id' in 2 row(s), ...``."""
        return ", ".join(f"{name!r} in {count} row(s)" for name, count in self.null_counts.items())


class InvalidFilterError(UserInputError):
    """A row filter does not parse or names a column the table does not have."""


class CorruptFileError(UserInputError):
    """A metadata, data, delete or Puffin file is missing or not what its metadata says (magic, CRC, length)."""


class UnsupportedFeatureError(EngineError):
    """The table uses something this engine does not implement yet; the message says what."""


def file_error(what: str, location: str, error: BaseException) -> BaseException:
    """``error`` raised while reading ``what`` at ``location``, as a CorruptFileError naming the file when it says
    the file is missing or damaged; ``error`` itself otherwise (a storage failure worth a retry, or our own error)."""
    if isinstance(error, CorruptFileError) and what not in str(error):
        return CorruptFileError(f"{what} {error}")  # say which kind of file the message's path is
    if isinstance(error, EngineError):
        return error
    if isinstance(error, FileNotFoundError):  # its message would only repeat the location
        return CorruptFileError(f"{what} {location} is missing")
    reason = f"{type(error).__name__}: {' '.join(str(error).split())}"[:160]
    transient = isinstance(error, OSError) and any(marker in str(error) for marker in _TRANSIENT_MARKERS)
    if isinstance(error, (*_DECODING_ERRORS, OSError)) and not transient:
        return CorruptFileError(f"{what} {location} cannot be read, it is damaged ({reason})")
    return error
