"""One parser for integer settings (table properties, environment variables), each caller naming what it parses."""

from __future__ import annotations

from typing import TypeVar

from spark_jobs.engine.shared.errors import UserInputError

Default = TypeVar("Default", int, int | None)


def parse_integer_setting(
    raw: str | None,
    default: Default,
    *,
    name: str,
    expected: str = "an integer",
    error: type[Exception] = UserInputError,
) -> int | Default:
    """``raw`` as an int, ``default`` when unset; otherwise ``error("<name> must be <expected>, got <raw>")``."""
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise error(f"{name} must be {expected}, got {raw!r}") from None
