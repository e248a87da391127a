"""A partition key (Iceberg's partition path text) back into a row filter that reads that partition.

A partitioned asset event's key is the partition as Iceberg names it on storage (``partition_events``):
``field=value`` pairs joined by ``/``, each value the transform's human string, URL-encoded. The filter, in
pyiceberg's row-filter syntax (the read job's ``--filter``):

1. split the key into its fields and values (URL-decoded) and find the table's partition spec with exactly those
   field names, in order (the current spec first: a table whose spec evolved has files of several);
2. per field, a predicate on its source column that holds exactly for the rows of that partition value:
   - identity: ``col = value`` (``null``: ``col IS NULL``, and for a string column also ``col = 'null'``, the value
     Iceberg's path text cannot tell from a null);
   - year, month, day, hour: ``col >= start AND col < end`` over the period (``2024``, ``2024-01``,
     ``2024-01-05``, ``2024-01-05-10``), as dates or timestamps of the column's type (``timestamptz`` in UTC);
   - truncate: numbers ``col >= v AND col < v + width``; strings ``col = 'v'`` when shorter than the width, else
     ``col LIKE 'v%'`` (``null`` of a string: also ``col IS NULL``);
   - bucket, void, and identity of binary columns: no predicate (pyiceberg's filter syntax has no bucket function
     and no binary literal), so the read covers more than the partition; ``PartitionFilter.uncovered`` names them;
3. the predicates joined with ``AND``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import unquote_plus

from pyiceberg.transforms import (
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestamptzType,
)

_NUMBERS = (IntegerType, LongType, FloatType, DoubleType, DecimalType)
_PERIOD_FORMATS = {YearTransform: "%Y", MonthTransform: "%Y-%m", DayTransform: "%Y-%m-%d", HourTransform: "%Y-%m-%d-%H"}


class PartitionKeyError(ValueError):
    """A partition key that names no partition of the table."""


@dataclass(frozen=True)
class PartitionFilter:
    """The row filter of one partition, and the partition fields it could not express (its read covers more)."""

    row_filter: str
    uncovered: tuple[str, ...] = ()


def parse_partition_key(key: str) -> list[tuple[str, str]]:
    """The (field name, value text) pairs of a partition key, URL-decoded (module doc, step 1)."""
    pairs = []
    for part in key.split("/"):
        name, separator, value = part.partition("=")
        if not separator or not name:
            raise PartitionKeyError(
                f"partition key {key!r} is not a partition path ('field=value' joined by '/', e.g. "
                "'ts_day=2024-01-05/category=a')"
            )
        pairs.append((unquote_plus(name), unquote_plus(value)))
    return pairs


def partition_row_filter(table: Any, key: str) -> PartitionFilter:
    """The row filter reading the partition ``key`` names in ``table`` (a pyiceberg Table) (module doc)."""
    pairs = parse_partition_key(key)
    names = [name for name, _ in pairs]
    specs = table.specs()
    current = table.spec()
    candidates = [current, *sorted((s for s in specs.values() if s.spec_id != current.spec_id), key=_newest)]
    spec = next((s for s in candidates if [f.name for f in s.fields] == names), None)
    table_name = ".".join(table.name())
    if spec is None:
        known = "; ".join("/".join(f.name for f in s.fields) or "(unpartitioned)" for s in candidates)
        raise PartitionKeyError(
            f"partition key {key!r} names fields {names} that no partition spec of {table_name} has (specs: {known})"
        )
    schema = table.schema()
    predicates: list[str] = []
    uncovered: list[str] = []
    for field, (_, value) in zip(spec.fields, pairs, strict=True):
        try:
            source = schema.find_field(field.source_id)
            column = _column(schema.find_column_name(field.source_id))
        except ValueError as error:
            raise PartitionKeyError(f"partition field {field.name} of {table_name}: {error}") from error
        predicate = _predicate(field.transform, column, source.field_type, value)
        if predicate is None:
            uncovered.append(field.name)
        else:
            predicates.append(predicate)
    return PartitionFilter(" AND ".join(predicates) if predicates else "true", tuple(uncovered))


def _newest(spec: Any) -> int:
    return -int(spec.spec_id)


def _predicate(transform: Any, column: str, source_type: Any, value: str) -> str | None:
    """The predicate of one partition field (module doc, step 2); ``None`` when it cannot be written."""
    if isinstance(transform, IdentityTransform):
        if value == "null":
            return (
                f"({column} IS NULL OR {column} = 'null')"
                if isinstance(source_type, StringType)
                else (f"{column} IS NULL")
            )
        if isinstance(source_type, (BinaryType, FixedType)):
            return None
        return f"{column} = {_literal(source_type, value)}"
    period = _PERIOD_FORMATS.get(type(transform))
    if period is not None:
        if value == "null":
            return f"{column} IS NULL"
        start = dt.datetime.strptime(value, period)
        end = _period_end(type(transform), start)
        return f"{column} >= {_time_literal(source_type, start)} AND {column} < {_time_literal(source_type, end)}"
    if isinstance(transform, TruncateTransform):
        if value == "null" and isinstance(source_type, StringType):
            return f"({column} IS NULL OR {_truncate_predicate(column, source_type, value, transform.width)})"
        if value == "null":
            return f"{column} IS NULL"
        return _truncate_predicate(column, source_type, value, transform.width)
    return None


def _period_end(transform: type, start: dt.datetime) -> dt.datetime:
    """The first instant after the period starting at ``start``."""
    if transform is YearTransform:
        return start.replace(year=start.year + 1)
    if transform is MonthTransform:
        return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    if transform is DayTransform:
        return start + dt.timedelta(days=1)
    return start + dt.timedelta(hours=1)


def _time_literal(source_type: Any, moment: dt.datetime) -> str:
    if isinstance(source_type, DateType):
        return f"'{moment.date().isoformat()}'"
    text = moment.isoformat(timespec="seconds")
    return f"'{text}+00:00'" if isinstance(source_type, TimestamptzType) else f"'{text}'"


def _truncate_predicate(column: str, source_type: Any, value: str, width: int) -> str | None:
    if isinstance(source_type, (IntegerType, LongType)):
        return f"{column} >= {int(value)} AND {column} < {int(value) + width}"
    if isinstance(source_type, DecimalType):
        low = Decimal(value)
        step = Decimal(width).scaleb(-source_type.scale)
        return f"{column} >= {low} AND {column} < {low + step}"
    if isinstance(source_type, StringType):
        if len(value) < width:
            return f"{column} = {_quoted(value)}"
        return f"{column} LIKE {_quoted(value.replace('%', chr(92) + '%') + '%')}"
    return None


def _literal(source_type: Any, value: str) -> str:
    """An identity partition's value as a literal of the filter syntax."""
    if isinstance(source_type, BooleanType):
        return "true" if value.lower() == "true" else "false"
    if isinstance(source_type, _NUMBERS):
        Decimal(value)  # a number, or an error naming it
        return value
    return _quoted(value)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _column(name: str) -> str:
    """A column name in the filter syntax: plain when it is an identifier, else double-quoted (per part)."""
    parts = name.split(".")
    return ".".join(part if part.isidentifier() and part.isascii() else _quoted_identifier(part) for part in parts)


def _quoted_identifier(part: str) -> str:
    return '"' + part.replace('"', '\\"') + '"'
