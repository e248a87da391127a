"""Parse the layout options of a table created by a write: ``--partition-by`` and ``--sort-by``.

``--partition-by`` is a comma-separated list of ``column``, ``identity(column)``, ``year|month|day|hour(column)``,
``bucket(N, column)`` or ``truncate(W, column)``; ``--sort-by`` a comma-separated list of columns, each optionally
followed by ``asc``/``desc`` (``"ts desc,id"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)

from spark_jobs.engine.shared.errors import UserInputError

_CALL = re.compile(r"^\s*(\w+)\s*\(\s*([^()]*?)\s*\)\s*$")
_SIMPLE: dict[str, Callable[[], Transform[Any, Any]]] = {
    "identity": IdentityTransform,
    "year": YearTransform,
    "month": MonthTransform,
    "day": DayTransform,
    "hour": HourTransform,
}
_WITH_WIDTH: dict[str, Callable[[int], Transform[Any, Any]]] = {
    "bucket": BucketTransform,
    "truncate": TruncateTransform,
}


def parse_partition_by(text: str) -> list[tuple[str, Transform[Any, Any]]]:
    """(source column, transform) pairs of a ``--partition-by`` value (module doc)."""
    fields: list[tuple[str, Transform[Any, Any]]] = []
    for part in _split_top_level(text):
        call = _CALL.match(part)
        if call is None:
            if not re.fullmatch(r"\w+", part):
                raise UserInputError(f"--partition-by term {part!r} is neither a column nor a transform call")
            fields.append((part, IdentityTransform()))
            continue
        name, arguments = call.group(1).lower(), [a.strip() for a in call.group(2).split(",")]
        if name in _SIMPLE and len(arguments) == 1:
            fields.append((arguments[0], _SIMPLE[name]()))
        elif name in _WITH_WIDTH and len(arguments) == 2 and arguments[0].isdigit() and int(arguments[0]) > 0:
            fields.append((arguments[1], _WITH_WIDTH[name](int(arguments[0]))))
        else:
            raise UserInputError(
                f"--partition-by term {part!r} is not one of identity(c), year(c), month(c), day(c), hour(c), "
                "bucket(N, c), truncate(W, c)"
            )
    return fields


def parse_sort_by(text: str) -> list[tuple[str, bool]]:
    """(column, ascending) pairs of a ``--sort-by`` value."""
    order: list[tuple[str, bool]] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        words = part.split()
        if len(words) > 2 or (len(words) == 2 and words[1].lower() not in ("asc", "desc")):
            raise UserInputError(f"--sort-by term {part!r} must be 'column', 'column asc' or 'column desc'")
        order.append((words[0], len(words) == 1 or words[1].lower() == "asc"))
    return order


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current.append(char)
    parts.append("".join(current).strip())
    return [p for p in parts if p]
