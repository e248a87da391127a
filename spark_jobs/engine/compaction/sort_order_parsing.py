"""The ``--sort-order`` text of a sort or z-order rewrite, parsed and checked against the table's schema.

The syntax is Iceberg Java's ``rewrite_data_files(sort_order => ...)`` (Spark SQL sort terms), case-insensitive:

    term [ASC|DESC] [NULLS FIRST|NULLS LAST], ...       e.g. ``k desc nulls last, bucket(16, id), days(ts)``
    zorder(c1, c2, ...)

1. ``parse_sort_order_text`` splits the text into terms. A term is a column (dotted for struct fields, back-quoted
   when the name needs it) or a transform of one: ``bucket(N, c)``, ``truncate(c, W)`` (either argument order),
   ``years|year(c)``, ``months|month(c)``, ``days|day|date(c)``, ``hours|hour|date_hour(c)``, ``identity(c)``.
   The direction defaults to ascending; nulls come first when ascending, last when descending (Spark's and Java's
   defaults). ``zorder(...)`` terms give the z-order columns and cannot be mixed with plain terms.
2. ``bind_sort_order`` turns the terms into a pyiceberg ``SortOrder`` of field ids. A column must exist, be of a
   primitive type and not sit inside a list or map; the transform must apply to the column's type. Anything else is a
   ``UserInputError`` naming the table, the term and what was expected (exit code 2).
3. ``table_sort_order_id``: the id of the table's sort order that equals the given one (fields, directions, null
   orders), else 0, the unsorted order; data files a rewrite writes are marked with it, as Java's
   ``SortOrderUtil.findTableSortOrder`` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pyiceberg.schema import Schema
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER_ID, NullOrder, SortDirection, SortField, SortOrder
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
from pyiceberg.types import ListType, MapType, NestedField, PrimitiveType

from spark_jobs.engine.shared.errors import UserInputError

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)+`)|([A-Za-z_][A-Za-z0-9_$]*)|(-?\d+)|([(),.]))")
_TIME_TRANSFORMS: dict[str, type[Transform[Any, Any]]] = {
    "years": YearTransform,
    "year": YearTransform,
    "months": MonthTransform,
    "month": MonthTransform,
    "days": DayTransform,
    "day": DayTransform,
    "date": DayTransform,
    "hours": HourTransform,
    "hour": HourTransform,
    "date_hour": HourTransform,
}
ZORDER = "zorder"


@dataclass(frozen=True)
class SortTerm:
    """One parsed term: a column name (its dotted path), the transform applied to it, direction and null order."""

    column: str
    transform: Transform[Any, Any]
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder = NullOrder.NULLS_FIRST

    def describe(self) -> str:
        """The term as Iceberg prints a sort field: ``bucket[16](id) DESC NULLS LAST``."""
        source = self.column if isinstance(self.transform, IdentityTransform) else f"{self.transform}({self.column})"
        return f"{source} {self.direction.name} {self.null_order.name.replace('_', ' ')}"


@dataclass(frozen=True)
class ParsedSortOrder:
    """What a ``--sort-order`` text asks for: plain sort terms, or the columns of a z-order (never both)."""

    terms: tuple[SortTerm, ...] = ()
    zorder_columns: tuple[str, ...] = ()

    @property
    def is_zorder(self) -> bool:
        """Whether the text was ``zorder(...)``."""
        return bool(self.zorder_columns)


class _Tokens:
    """The tokens of a sort order text, read left to right."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.items: list[tuple[str, str]] = []  # (kind, value): kind is "name", "int" or the punctuation itself
        position = 0
        while position < len(text):
            if text[position:].strip() == "":
                break
            match = _TOKEN.match(text, position)
            if match is None:
                raise UserInputError(
                    f"--sort-order {text!r}: unexpected character {text[position:].strip()[0]!r} at position "
                    f"{position + len(text[position:]) - len(text[position:].lstrip())}"
                )
            quoted, name, number, punctuation = match.groups()
            if quoted is not None:
                self.items.append(("name", quoted[1:-1].replace("``", "`")))
            elif name is not None:
                self.items.append(("name", name))
            elif number is not None:
                self.items.append(("int", number))
            else:
                self.items.append((punctuation, punctuation))
            position = match.end()
        self.index = 0

    def peek(self) -> tuple[str, str] | None:
        return self.items[self.index] if self.index < len(self.items) else None

    def next(self, expected: str) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise UserInputError(f"--sort-order {self.text!r}: expected {expected}, found the end of the text")
        self.index += 1
        return token

    def expect(self, kind: str, expected: str) -> str:
        token_kind, value = self.next(expected)
        if token_kind != kind:
            raise UserInputError(f"--sort-order {self.text!r}: expected {expected}, found {value!r}")
        return value

    def punctuation(self, mark: str) -> bool:
        """Consume the next token when it is ``mark``."""
        token = self.peek()
        if token is not None and token[0] == mark:
            self.index += 1
            return True
        return False

    def keyword(self, *words: str) -> str | None:
        """Consume the next token when it is one of ``words`` (case-insensitive); return it lower-cased."""
        token = self.peek()
        if token is not None and token[0] == "name" and token[1].lower() in words:
            self.index += 1
            return token[1].lower()
        return None


def parse_sort_order_text(text: str) -> ParsedSortOrder:
    """Parse a ``--sort-order`` text (module doc, step 1); a malformed text is a UserInputError."""
    if not text or not text.strip():
        raise UserInputError("--sort-order is empty; give columns, e.g. 'k desc nulls last, id', or 'zorder(a, b)'")
    tokens = _Tokens(text)
    terms: list[SortTerm] = []
    zorder_columns: list[str] = []
    while True:
        term = _parse_term(tokens)
        if isinstance(term, list):
            zorder_columns.extend(term)
        else:
            terms.append(term)
        token = tokens.peek()
        if token is None:
            break
        if not tokens.punctuation(","):
            raise UserInputError(f"--sort-order {text!r}: expected ',' or the end of the text, found {token[1]!r}")
    if zorder_columns and terms:
        raise UserInputError(f"--sort-order {text!r}: cannot mix plain sort columns and a zorder(...) expression")
    return ParsedSortOrder(tuple(terms), tuple(zorder_columns))


def _parse_term(tokens: _Tokens) -> SortTerm | list[str]:
    """One term: ``zorder(...)`` (its column names) or ``expression [direction] [nulls order]``."""
    name = _dotted_name(tokens, "a column or a transform")
    if tokens.punctuation("("):
        if name.lower() == ZORDER:
            columns = [_dotted_name(tokens, "a column")]
            while tokens.punctuation(","):
                columns.append(_dotted_name(tokens, "a column"))
            tokens.expect(")", "')'")
            if tokens.keyword("asc", "desc", "nulls"):
                raise UserInputError(f"--sort-order {tokens.text!r}: zorder(...) takes no direction or null order")
            return columns
        column, transform = _transform_call(tokens, name.lower())
    else:
        column, transform = name, IdentityTransform()
    direction = SortDirection.DESC if tokens.keyword("asc", "desc") == "desc" else SortDirection.ASC
    null_order = NullOrder.NULLS_FIRST if direction == SortDirection.ASC else NullOrder.NULLS_LAST
    if tokens.keyword("nulls"):
        placement = tokens.keyword("first", "last")
        if placement is None:
            raise UserInputError(f"--sort-order {tokens.text!r}: NULLS must be followed by FIRST or LAST")
        null_order = NullOrder.NULLS_FIRST if placement == "first" else NullOrder.NULLS_LAST
    return SortTerm(column, transform, direction, null_order)


def _dotted_name(tokens: _Tokens, expected: str) -> str:
    parts = [tokens.expect("name", expected)]
    while tokens.punctuation("."):
        parts.append(tokens.expect("name", "a field name after '.'"))
    return ".".join(parts)


def _transform_call(tokens: _Tokens, function: str) -> tuple[str, Transform[Any, Any]]:
    """The column and transform of ``function(args)``; the opening parenthesis is already consumed."""
    arguments: list[tuple[str, str]] = []
    while True:
        token = tokens.peek()
        if token is not None and token[0] == "int":
            tokens.index += 1
            arguments.append(("int", token[1]))
        else:
            arguments.append(("name", _dotted_name(tokens, "a column or an integer")))
        separator = tokens.next("',' or ')'")
        if separator[0] == ")":
            break
        if separator[0] != ",":
            raise UserInputError(f"--sort-order {tokens.text!r}: expected ',' or ')', found {separator[1]!r}")
    columns = [value for kind, value in arguments if kind == "name"]
    numbers = [int(value) for kind, value in arguments if kind == "int"]
    call = f"{function}({', '.join(value for _, value in arguments)})"
    if function in ("bucket", "truncate"):
        if len(columns) != 1 or len(numbers) != 1:
            raise UserInputError(f"--sort-order {tokens.text!r}: {call} takes one column and one integer")
        if numbers[0] <= 0:
            raise UserInputError(f"--sort-order {tokens.text!r}: {call} needs a positive integer, got {numbers[0]}")
        transform: Transform[Any, Any] = (
            BucketTransform(numbers[0]) if function == "bucket" else TruncateTransform(numbers[0])
        )
        return columns[0], transform
    if function in _TIME_TRANSFORMS or function == "identity":
        if len(columns) != 1 or numbers:
            raise UserInputError(f"--sort-order {tokens.text!r}: {call} takes exactly one column")
        return columns[0], IdentityTransform() if function == "identity" else _TIME_TRANSFORMS[function]()
    known = ", ".join(["bucket", "truncate", "identity", *_TIME_TRANSFORMS, ZORDER])
    raise UserInputError(f"--sort-order {tokens.text!r}: unknown transform {function!r}; known: {known}")


def bind_sort_order(table_name: str, schema: Schema, terms: tuple[SortTerm, ...]) -> SortOrder:
    """The pyiceberg ``SortOrder`` of ``terms`` on ``schema`` (module doc, step 2); order id 0, set by the table."""
    fields = []
    for term in terms:
        field = find_sortable_field(table_name, schema, term.column, term.describe())
        if not term.transform.can_transform(field.field_type):
            raise UserInputError(
                f"table {table_name}: sort term {term.describe()} cannot be sorted: transform {term.transform} does "
                f"not apply to column {term.column!r} of type {field.field_type}"
            )
        fields.append(
            SortField(
                source_id=field.field_id,
                transform=term.transform,
                direction=term.direction,
                null_order=term.null_order,
            )
        )
    return SortOrder(*fields, order_id=1)


def find_sortable_field(table_name: str, schema: Schema, column: str, what: str) -> NestedField:
    """The primitive field ``column`` names, reachable through structs only; otherwise a UserInputError."""
    try:
        field = schema.find_field(column, case_sensitive=True)
    except ValueError:
        names = ", ".join(schema.column_names)
        raise UserInputError(f"table {table_name}: {what}: unknown column {column!r}; columns: {names}") from None
    if not isinstance(field.field_type, PrimitiveType):
        raise UserInputError(
            f"table {table_name}: {what}: column {column!r} is of type {field.field_type}; only primitive columns "
            "can be sorted"
        )
    if _inside_list_or_map(schema, field.field_id):
        raise UserInputError(
            f"table {table_name}: {what}: column {column!r} is inside a list or map; only columns reachable "
            "through structs can be sorted"
        )
    return field


def _inside_list_or_map(schema: Schema, field_id: int) -> bool:
    parents = schema._lazy_id_to_parent
    parent = parents.get(field_id)
    while parent is not None:
        if isinstance(schema.find_field(parent).field_type, (ListType, MapType)):
            return True
        parent = parents.get(parent)
    return False


def table_sort_order_id(table_sort_orders: list[SortOrder], order: SortOrder | None) -> int:
    """The id of the table's sort order with the same fields as ``order``; 0 (unsorted) when none or no order."""
    if order is None or order.is_unsorted:
        return UNSORTED_SORT_ORDER_ID
    wanted = _order_fields(order)
    for candidate in table_sort_orders:
        if not candidate.is_unsorted and _order_fields(candidate) == wanted:
            return candidate.order_id
    return UNSORTED_SORT_ORDER_ID


def _order_fields(order: SortOrder) -> list[tuple[int, str, SortDirection, NullOrder]]:
    return [(f.source_id, str(f.transform), f.direction, f.null_order) for f in order.fields]


def describe_sort_order(order: SortOrder, schema: Schema) -> str:
    """A sort order in words: ``k DESC NULLS LAST, bucket[16](id) ASC NULLS FIRST``."""
    parts = []
    for sort_field in order.fields:
        column = schema.find_column_name(sort_field.source_id) or f"field {sort_field.source_id}"
        parts.append(SortTerm(column, sort_field.transform, sort_field.direction, sort_field.null_order).describe())
    return ", ".join(parts)
