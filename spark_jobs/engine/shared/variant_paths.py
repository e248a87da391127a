"""A path into a variant value and the typed comparisons row filters make on it (``variant_get(col, path, type)``).

1. ``parse_path`` reads Spark's JSON path syntax: ``$`` then ``.key``, ``['key']`` / ``["key"]`` or ``[N]``
   (an array index); ``normalized_path`` writes it as the Iceberg spec's variant bound keys (``$['a']['b']``),
   None when it holds an index (bounds are kept for object fields only).
2. ``ExtractionType`` is the type named in ``variant_get``: it parses the literals and says which variant values
   compare with them. Numbers (int8..int64, float, double, decimals) compare by their value whatever their width
   (``int`` does not round 2.5); strings with strings, booleans with booleans, dates with dates, timestamps with
   timestamps of the same zone kind (in nanoseconds). A value of another kind, a missing path, or a variant null
   is NULL: it matches no comparison (``IS NULL`` matches it).
3. ``value_at`` walks the encoded value along a path; ``comparable`` gives the value in the type's comparable
   domain, None for NULL; ``compare`` applies one operation row by row.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from spark_jobs.engine.shared import variant_encoding as ve

PathSegment = str | int
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_SEGMENT = re.compile(
    r"\.([A-Za-z_][A-Za-z0-9_]*)"  # .key
    r"|\[\s*(\d+)\s*\]"  # [N]
    r"|\[\s*'((?:[^'\\]|\\.)*)'\s*\]"  # ['key']
    r'|\[\s*"((?:[^"\\]|\\.)*)"\s*\]'  # ["key"]
)


def parse_path(text: str) -> tuple[PathSegment, ...]:
    """The segments of a JSON path (module doc, step 1); ValueError names what does not parse."""
    stripped = text.strip()
    if not stripped.startswith("$"):
        raise ValueError(f"variant path {text!r} must start with '$' (e.g. '$.a.b' or \"$['a']\")")
    segments: list[PathSegment] = []
    position = 1
    while position < len(stripped):
        match = _SEGMENT.match(stripped, position)
        if match is None:
            raise ValueError(f"variant path {text!r} does not parse at {stripped[position:]!r}")
        name, index, single, double = match.groups()
        if index is not None:
            segments.append(int(index))
        else:
            quoted = single if single is not None else double
            segments.append(name if name is not None else re.sub(r"\\(.)", r"\1", quoted))
        position = match.end()
    return tuple(segments)


def normalized_path(path: tuple[PathSegment, ...]) -> str | None:
    """The spec's normalized JSON path of object fields (``$['a']['b']``); None when the path holds an index."""
    if any(isinstance(segment, int) for segment in path):
        return None
    return "$" + "".join("['" + str(segment).replace("\\", "\\\\").replace("'", "\\'") + "']" for segment in path)


@dataclass(frozen=True)
class ExtractionType:
    """A type ``variant_get`` names: its name, the kind of values it compares, and how it parses a literal."""

    name: str
    kind: str  # number, string, boolean, date, timestamp, timestamp_ntz
    parse_literal: Callable[[Any], Any]

    def comparable(self, value: Any) -> Any:
        """A decoded variant value in this type's comparable domain; None when it is not of this kind (NULL)."""
        if value is None:
            return None
        kind = self.kind
        if kind == "number":
            if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
                return None
            return None if isinstance(value, float) and math.isnan(value) else value
        if kind == "string":
            return value if isinstance(value, str) else None
        if kind == "boolean":
            return value if isinstance(value, bool) else None
        if kind == "date":
            return value if type(value) is dt.date else None
        if isinstance(value, ve.VariantTimestampNanos):
            return value.nanos if value.adjusted_to_utc == (kind == "timestamp") else None
        if isinstance(value, dt.datetime) and (value.tzinfo is not None) == (kind == "timestamp"):
            return _nanos(value)
        return None


def _nanos(moment: dt.datetime) -> int:
    since = moment - (_EPOCH_UTC if moment.tzinfo is not None else _EPOCH)
    return (since.days * 86_400 + since.seconds) * 1_000_000_000 + since.microseconds * 1000


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, str):
        try:
            return Decimal(value) if any(c in value for c in ".eE") else int(value)
        except (InvalidOperation, ValueError):
            raise ValueError(f"{value!r} is not a number") from None
    return value


def _integer(value: Any) -> int:
    number = _number(value)
    if isinstance(number, int):
        return number
    if number != int(number):
        raise ValueError(f"{value!r} is not an integer")
    return int(number)


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a string literal")
    return value


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"{value!r} is not a boolean")


def _date(value: Any) -> dt.date:
    try:
        return dt.date.fromisoformat(_string(value))
    except ValueError:
        raise ValueError(f"{value!r} is not a date 'YYYY-MM-DD'") from None


def _instant(value: Any, *, with_zone: bool) -> int:
    try:
        moment = dt.datetime.fromisoformat(_string(value).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO-8601 timestamp") from None
    if with_zone and moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    if not with_zone and moment.tzinfo is not None:
        raise ValueError(f"{value!r} has a zone offset; timestamp_ntz takes none")
    return _nanos(moment)


def _timestamp(value: Any) -> int:
    return _instant(value, with_zone=True)


def _timestamp_ntz(value: Any) -> int:
    return _instant(value, with_zone=False)


_NUMBER_TYPES = ("tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long")
EXTRACTION_TYPES: dict[str, ExtractionType] = {
    **{name: ExtractionType(name, "number", _integer) for name in _NUMBER_TYPES},
    **{name: ExtractionType(name, "number", _number) for name in ("float", "double", "decimal")},
    "string": ExtractionType("string", "string", _string),
    "boolean": ExtractionType("boolean", "boolean", _boolean),
    "date": ExtractionType("date", "date", _date),
    "timestamp": ExtractionType("timestamp", "timestamp", _timestamp),
    "timestamp_ntz": ExtractionType("timestamp_ntz", "timestamp_ntz", _timestamp_ntz),
}


def extraction_type(name: str) -> ExtractionType:
    """The type ``name`` (``decimal(P, S)`` reads as ``decimal``); ValueError lists the known ones."""
    key = re.sub(r"\s+", "", name.lower())
    key = "decimal" if re.fullmatch(r"decimal\(\d+,\d+\)", key) else key
    found = EXTRACTION_TYPES.get(key)
    if found is None:
        raise ValueError(f"unknown variant_get type {name!r}; expected one of {', '.join(EXTRACTION_TYPES)}")
    return found


_MISSING = object()


def value_at(metadata: ve.VariantMetadata, value: bytes, path: tuple[PathSegment, ...]) -> Any:
    """The decoded value at ``path`` of an encoded variant; None when the path leads nowhere (or to a null)."""
    offset = 0
    for segment in path:
        basic = value[offset] & 0x03
        if isinstance(segment, int):
            if basic != ve.ARRAY:
                return None
            elements = ve.array_elements(value, offset)
            if segment >= len(elements):
                return None
            offset = elements[segment]
        else:
            if basic != ve.OBJECT:
                return None
            found = next((start for key, start in ve.object_fields(metadata, value, offset) if key == segment), None)
            if found is None:
                return None
            offset = found
    return ve.decode(metadata, value, offset)


def bound_value(serialized: bytes, key: str, dictionaries: dict[bytes, ve.VariantMetadata] | None = None) -> Any:
    """The bound of one normalized path in a variant column's manifest bound (metadata, then an object keyed by
    normalized path), None when it holds none; ``dictionaries`` keeps decoded metadata across calls (one writer's
    files share theirs). ValueError when the bytes are not such a variant."""
    try:
        length = ve.metadata_length(serialized)
        metadata_bytes = serialized[:length]
        metadata = dictionaries.get(metadata_bytes) if dictionaries is not None else None
        if metadata is None:
            metadata = ve.VariantMetadata(metadata_bytes)
            if dictionaries is not None:
                dictionaries[metadata_bytes] = metadata
        if serialized[length] & 0x03 != ve.OBJECT:
            raise ValueError("a variant bound is not an object")
        for name, start in ve.object_fields(metadata, serialized, length):
            if name == key:
                return ve.decode(metadata, serialized, start)
        return None
    except (IndexError, UnicodeDecodeError, ve.VariantError) as error:
        raise ValueError(f"a variant bound does not decode ({error})") from None


COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}
NEGATED = {
    "eq": "ne",
    "ne": "eq",
    "lt": "ge",
    "ge": "lt",
    "le": "gt",
    "gt": "le",
    "in": "not_in",
    "not_in": "in",
    "is_null": "not_null",
    "not_null": "is_null",
}


_RULES_OUT: dict[str, Callable[[Any, Any, Any], bool]] = {
    "lt": lambda lower, upper, literal: lower is not None and lower >= literal,
    "le": lambda lower, upper, literal: lower is not None and lower > literal,
    "gt": lambda lower, upper, literal: upper is not None and upper <= literal,
    "ge": lambda lower, upper, literal: upper is not None and upper < literal,
    "eq": lambda lower, upper, literal: (
        (lower is not None and literal < lower) or (upper is not None and literal > upper)
    ),
}


def bounds_rule_out(operation: str, lower: Any, upper: Any, literals: tuple[Any, ...]) -> bool:
    """True when no value within [lower, upper] (None: unknown) can satisfy the operation for any literal;
    ``!=``, NOT IN and the null tests are never ruled out by bounds, nor bounds that do not order with a literal."""
    rule = _RULES_OUT.get("eq" if operation == "in" else operation)
    if rule is None or (lower is None and upper is None):
        return False
    try:
        return all(rule(lower, upper, literal) for literal in literals)
    except TypeError:
        return False


def compare(operation: str, value: Any, literals: tuple[Any, ...]) -> bool:
    """One row: ``value`` (comparable domain, None for NULL) against the literals under ``operation``."""
    if operation == "is_null":
        return value is None
    if operation == "not_null":
        return value is not None
    if value is None:
        return False
    if operation == "in":
        return value in literals
    if operation == "not_in":
        return value not in literals
    return COMPARISONS[operation](value, literals[0])
