"""Domain exceptions of the engine, in one place.

Each carries a message that names what was wrong (which table, file, argument) and what was expected. The job
entry points turn ``UserInputError`` into exit code 2 with a one-line reason.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class UserInputError(EngineError):
    """The caller asked for something that cannot be done (bad argument, unknown table or snapshot)."""


class TableNotFoundError(UserInputError):
    """The catalog has no such table."""


class SnapshotNotFoundError(UserInputError):
    """No snapshot matches the requested id, ref or timestamp."""


class InvalidFilterError(UserInputError):
    """A row filter does not parse or names a column the table does not have."""


class CorruptFileError(EngineError):
    """A data, delete or Puffin file is not what its metadata says (bad magic, CRC, length, footer)."""


class UnsupportedFeatureError(EngineError):
    """The table uses something this engine does not implement yet; the message says what."""
