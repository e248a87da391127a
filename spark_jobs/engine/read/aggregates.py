"""Aggregates of a merge-on-read read, computed where the rows are decoded: one small partial per scan task.

``count(*)``, ``count(col)``, ``sum``, ``min``, ``max`` and ``avg`` with Spark SQL's result types and rules:

1. ``parse_aggregates`` reads ``"count(*), sum(price)"`` (or a list of such items) into ``Aggregate`` values;
   ``bind_aggregates`` checks each against the read schema (the column exists; the function takes its type) and
   returns an ``AggregatePlan`` naming the columns to read.
2. On an executor, ``AggregatePlan.partial_of`` folds the Arrow batches of one scan task (deletes and the row
   filter already applied) into one partial per aggregate with pyarrow kernels: exact integer sums (a batch whose
   bounds could overflow 64 bits is summed as decimal), decimal sums at full precision, float sums in double,
   min/max with Spark's NaN order (NaN above every number).
3. On the driver, ``AggregatePlan.combine`` merges the partials and finishes them as Spark does: ``sum`` of
   int/long is a long (beyond its range: an ``AggregateOverflowError`` under ANSI mode, else the value wrapped to 64
   bits as Spark's non-ANSI addition does); ``sum`` of decimal(p,s) is decimal(min(38, p + 10), s) (beyond it: the
   error under ANSI, else NULL); ``sum``/``avg`` of floats and ``avg`` of integers are doubles; a sum, average, min
   or max of no non-null value is NULL; counts are 0.

Float sums add in another order than Spark's (per batch, then per task), so they can differ from Spark's in the
last bits, as Spark's own differ between partitionings. Under ANSI mode Spark checks every intermediate addition of
a long sum; here the exact total is checked, so a sum that only overflows on the way is returned, not refused.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

from spark_jobs.engine.shared.errors import EngineError, UserInputError

FUNCTIONS = ("count", "sum", "min", "max", "avg")
INTEGRAL = (IntegerType, LongType)
FLOATING = (FloatType, DoubleType)
ORDERED: tuple[type, ...] = (*INTEGRAL, *FLOATING, DecimalType, StringType, DateType, TimestampType)
ORDERED += (TimestamptzType, BooleanType, BinaryType)
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
MAX_DECIMAL_PRECISION = 38
# Decimal arithmetic on the driver: wide enough for any sum of decimal(38, s) values without rounding.
EXACT = decimal.Context(prec=120, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_ITEM = re.compile(r"\s*([A-Za-z_]+)\s*\(\s*(\*|`[^`]+`|[^(),`]+?)\s*\)\s*")


class AggregateOverflowError(EngineError, ArithmeticError):
    """A sum does not fit its result type and Spark's ANSI mode says to fail rather than wrap or return NULL."""


@dataclass(frozen=True)
class Aggregate:
    """One aggregate function over a column (``column`` None: ``count(*)``)."""

    function: str
    column: str | None

    @property
    def label(self) -> str:
        """The name of the result, e.g. ``sum(price)``."""
        return f"{self.function}({'*' if self.column is None else self.column})"


def parse_aggregates(spec: str | Sequence[str]) -> list[Aggregate]:
    """``"count(*),sum(price)"`` or ``["count(*)", "sum(price)"]`` as aggregates, in order (UserInputError if bad)."""
    text = spec if isinstance(spec, str) else ",".join(spec)
    aggregates: list[Aggregate] = []
    position = 0
    while position < len(text):
        match = _ITEM.match(text, position)
        end = match.end() if match else -1
        if match is None or (end < len(text) and text[end] != ","):
            raise UserInputError(
                f"aggregates {text!r}: cannot read {text[position:].strip()!r}; expected items like "
                "count(*), count(col), sum(col), min(col), max(col), avg(col), separated by commas"
            )
        function, column = match.group(1).lower(), match.group(2).strip("`")
        if function not in FUNCTIONS:
            raise UserInputError(
                f"aggregate {match.group(0).strip()!r}: unknown function {match.group(1)!r}; "
                f"supported: {', '.join(FUNCTIONS)}"
            )
        if column == "*" and function != "count":
            raise UserInputError(f"aggregate {match.group(0).strip()!r}: only count takes *")
        aggregates.append(Aggregate(function, None if column == "*" else column))
        position = end + 1
    if not aggregates:
        raise UserInputError("aggregates: none given; expected items like count(*), sum(col)")
    labels = [aggregate.label for aggregate in aggregates]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise UserInputError(f"aggregates name {', '.join(repeated)} twice")
    return aggregates


def _check_type(aggregate: Aggregate, field_type: IcebergType, table_name: str) -> None:
    """UserInputError unless ``aggregate``'s function takes a column of ``field_type``."""
    function = aggregate.function
    if function == "count":
        return
    allowed: tuple[type, ...] = {
        "sum": (*INTEGRAL, *FLOATING, DecimalType),
        "avg": (*INTEGRAL, *FLOATING),
        "min": ORDERED,
        "max": ORDERED,
    }[function]
    if not isinstance(field_type, allowed):
        decimal_avg = function == "avg" and isinstance(field_type, DecimalType)
        hint = " (avg of decimals: use sum and count)" if decimal_avg else ""
        raise UserInputError(
            f"aggregate {aggregate.label} of table {table_name}: column {aggregate.column!r} is {field_type}, "
            f"which {function} does not support here{hint}"
        )


def bind_aggregates(aggregates: Sequence[Aggregate], schema: Schema, table_name: str) -> AggregatePlan:
    """Check ``aggregates`` against ``schema`` (top-level columns, by exact name) and plan their partials."""
    by_name = {f.name: f for f in schema.fields}
    kinds: list[str] = []
    for aggregate in aggregates:
        if aggregate.column is None:
            kinds.append("rows")
            continue
        top = by_name.get(aggregate.column)
        if top is None:
            raise UserInputError(
                f"aggregate {aggregate.label}: table {table_name} has no column {aggregate.column!r}; "
                f"columns: {', '.join(by_name)}"
            )
        _check_type(aggregate, top.field_type, table_name)
        kinds.append(_kind_of(aggregate.function, top.field_type))
    columns = list(dict.fromkeys(a.column for a in aggregates if a.column is not None))
    return AggregatePlan(tuple(aggregates), tuple(kinds), tuple(columns))


def _kind_of(function: str, field_type: IcebergType) -> str:
    """How a partial of ``function`` over ``field_type`` is kept: e.g. ``sum:int``, ``sum:decimal:18:4``."""
    if function == "count":
        return "count"
    if isinstance(field_type, INTEGRAL):
        family = "int"
    elif isinstance(field_type, FLOATING):
        family = "float"
    elif isinstance(field_type, DecimalType):
        family = f"decimal:{field_type.precision}:{field_type.scale}"
    else:
        family = "other"
    return f"{function}:{family}"


@dataclass(frozen=True)
class AggregatePlan:
    """Aggregates bound to a schema: how each partial is kept (``kinds``) and the columns they read."""

    aggregates: tuple[Aggregate, ...]
    kinds: tuple[str, ...]
    columns: tuple[str, ...]
    labels: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", tuple(a.label for a in self.aggregates))

    @property
    def only_count_rows(self) -> bool:
        """True when every aggregate is ``count(*)`` (the manifests may answer it)."""
        return all(kind == "rows" for kind in self.kinds)

    def partial_of(self, batches: Iterable[pa.RecordBatch]) -> list[Any]:
        """One partial per aggregate over ``batches`` (one scan task's surviving rows)."""
        partials = [_empty(kind) for kind in self.kinds]
        for batch in batches:
            for index, (aggregate, kind) in enumerate(zip(self.aggregates, self.kinds, strict=True)):
                column = None if aggregate.column is None else batch.column(aggregate.column)
                partials[index] = _merge(kind, partials[index], _batch_partial(kind, column, batch.num_rows))
        return partials

    def combine(self, partials: Iterable[Sequence[Any]], *, ansi: bool) -> dict[str, Any]:
        """The final values, by label, from every task's partials (module doc, step 3)."""
        merged = [_empty(kind) for kind in self.kinds]
        for task_partials in partials:
            merged = [_merge(kind, a, b) for kind, a, b in zip(self.kinds, merged, task_partials, strict=True)]
        return {
            aggregate.label: _finish(aggregate, kind, partial, ansi=ansi)
            for aggregate, kind, partial in zip(self.aggregates, self.kinds, merged, strict=True)
        }


# Partials, by kind: rows/count -> int; sum/avg -> (total, non-null count); min/max -> (value, has_nan, all_nan).


def _empty(kind: str) -> Any:
    if kind in ("rows", "count"):
        return 0
    if kind.startswith(("sum:", "avg:")):
        return (_zero(kind), 0)
    return (None, False, True)


def _zero(kind: str) -> Any:
    family = kind.split(":")[1]
    return {"int": 0, "float": 0.0}.get(family, decimal.Decimal(0))


def _batch_partial(kind: str, column: pa.Array | None, rows: int) -> Any:
    """The partial of one batch's ``column`` (``rows``: the batch's row count, for ``count(*)``)."""
    if kind == "rows":
        return rows
    assert column is not None
    valid = len(column) - column.null_count
    if kind == "count":
        return valid
    function, family = kind.split(":")[:2]
    if function in ("sum", "avg"):
        if valid == 0:
            return (_zero(kind), 0)
        if family == "int":
            return (_exact_integer_sum(column), valid)
        if family == "float":
            return (pc.sum(column.cast(pa.float64())).as_py(), valid)
        return (_decimal_sum(column), valid)
    if valid == 0:
        return (None, False, True)
    if family == "float":
        nans = pc.sum(pc.is_nan(column).cast(pa.int64())).as_py() or 0
        bounds = pc.min_max(column)
        chosen = bounds["min" if function == "min" else "max"].as_py()
        return (None if nans == valid else chosen, nans > 0, nans == valid)
    bounds = pc.min_max(column)
    return (bounds["min" if function == "min" else "max"].as_py(), False, False)


def _exact_integer_sum(column: pa.Array) -> int:
    """The exact sum of an int/long column: in 64 bits when its bounds prove no overflow, else as decimal."""
    bounds = pc.min_max(column)
    largest = max(abs(bounds["min"].as_py()), abs(bounds["max"].as_py()))
    if largest * (len(column) - column.null_count) <= LONG_MAX:
        return int(pc.sum(column.cast(pa.int64())).as_py())
    return int(pc.sum(column.cast(pa.decimal128(MAX_DECIMAL_PRECISION, 0))).as_py())


def _decimal_sum(column: pa.Array) -> decimal.Decimal:
    """The exact sum of a decimal column: decimal128 holds 38 digits, enough for 10^10 values of precision 28."""
    precision = column.type.precision
    if precision <= MAX_DECIMAL_PRECISION - 10 and len(column) < 10**10:
        return pc.sum(column.cast(pa.decimal128(MAX_DECIMAL_PRECISION, column.type.scale))).as_py()
    total = decimal.Decimal(0)
    for value in column.to_pylist():  # precision above 28: exact Python decimals (a rare, slower path)
        if value is not None:
            total = EXACT.add(total, value)
    return total


def _merge(kind: str, left: Any, right: Any) -> Any:
    """Two partials of ``kind`` as one."""
    if kind in ("rows", "count"):
        return left + right
    function = kind.split(":", maxsplit=1)[0]
    if function in ("sum", "avg"):
        total = EXACT.add(left[0], right[0]) if isinstance(left[0], decimal.Decimal) else left[0] + right[0]
        return (total, left[1] + right[1])
    values = [value for value in (left[0], right[0]) if value is not None]
    chosen = (min(values) if function == "min" else max(values)) if values else None
    return (chosen, left[1] or right[1], left[2] and right[2])


def _finish(aggregate: Aggregate, kind: str, partial: Any, *, ansi: bool) -> Any:
    """The final value of one aggregate from its merged partial, with Spark's result type and overflow rule."""
    if kind in ("rows", "count"):
        return partial
    function, family = kind.split(":")[:2]
    if function in ("sum", "avg"):
        total, valid = partial
        if valid == 0:
            return None
        if function == "avg":
            return total / valid if family == "int" else float(total) / valid
        if family == "int":
            return _long_sum(aggregate, total, ansi=ansi)
        if family == "float":
            return float(total)
        precision, scale = (int(part) for part in kind.split(":")[2:4])
        return _decimal_result(aggregate, total, min(MAX_DECIMAL_PRECISION, precision + 10), scale, ansi=ansi)
    value, has_nan, all_nan = partial
    if family == "float" and has_nan and (function == "max" or all_nan):
        return math.nan  # Spark orders NaN above every number
    return value


def _long_sum(aggregate: Aggregate, total: int, *, ansi: bool) -> int:
    if LONG_MIN <= total <= LONG_MAX:
        return total
    if ansi:
        raise AggregateOverflowError(
            f"{aggregate.label} = {total} overflows bigint (Spark's ANSI mode fails it; with "
            "spark.sql.ansi.enabled=false the sum wraps around as Spark's does)"
        )
    return (total - LONG_MIN) % 2**64 + LONG_MIN


def _decimal_result(aggregate: Aggregate, total: decimal.Decimal, precision: int, scale: int, *, ansi: bool) -> Any:
    exact = total.quantize(decimal.Decimal(1).scaleb(-scale), context=EXACT)
    if exact.copy_abs() < decimal.Decimal(10).scaleb(precision - scale - 1):  # no context: no rounding
        return exact
    if ansi:
        raise AggregateOverflowError(
            f"{aggregate.label} = {exact} overflows decimal({precision},{scale}) (Spark's ANSI mode fails it; with "
            "spark.sql.ansi.enabled=false the sum is NULL as Spark's is)"
        )
    return None


def json_safe(values: dict[str, Any]) -> dict[str, Any]:
    """Values for a JSON line: decimals, dates and timestamps as ISO strings, binary as base64, NaN/inf as text."""

    def safe(value: Any) -> Any:
        if isinstance(value, decimal.Decimal):
            return str(value)
        if isinstance(value, dt.date):  # datetimes too
            return value.isoformat()
        if isinstance(value, bytes | bytearray):
            return base64.b64encode(bytes(value)).decode("ascii")
        if isinstance(value, float) and not math.isfinite(value):
            return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return value

    return {label: safe(value) for label, value in values.items()}
