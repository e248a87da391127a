"""Parse a row filter: pyiceberg's syntax, plus variant-path comparisons and geo box tests in Spark SQL's spelling.

pyiceberg's parser knows columns, literals, comparisons, IN, IS NULL, STARTS WITH, AND, OR and NOT. On top of it,
without changing it:

1. Find, outside quoted text, each call of ``variant_get`` / ``try_variant_get`` (``(column, 'path', 'type')``
   followed by ``=``, ``!=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``[NOT] IN (...)`` or ``IS [NOT] NULL``) and of
   ``st_intersects`` / ``st_disjoint`` (``(column, st_makeenvelope(xmin, ymin, xmax, ymax))``); check its
   arguments (arity, path, type, literals) and build the predicate (``extended_predicates``).
2. Replace each such span with a placeholder predicate (``__extended_N IS NULL``) and parse the text with
   pyiceberg, so AND, OR, NOT and parentheses combine the new forms with every other predicate.
3. Put each predicate back in place of its placeholder in the parsed tree.

A malformed call is a ``ValueError`` that names the call and what was expected.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from pyiceberg.expressions import And, BooleanExpression, IsNull, Not, Or, Reference
from pyiceberg.expressions.parser import parse
from pyparsing import ParseException

from spark_jobs.engine.shared.extended_predicates import (
    SpatialCondition,
    SpatialPredicate,
    VariantPathCondition,
    VariantPathPredicate,
)
from spark_jobs.engine.shared.geo_boxes import Box
from spark_jobs.engine.shared.variant_paths import extraction_type, parse_path

_PLACEHOLDER = "__extended_{}"
_CALL = re.compile(r"\b(try_variant_get|variant_get|st_intersects|st_disjoint)\s*\(", re.IGNORECASE)
_COMPARISON = re.compile(r"\s*(==|=|!=|<>|<=|>=|<|>)")
_IN = re.compile(r"\s*(NOT\s+)?IN\s*\(", re.IGNORECASE)
_IS_NULL = re.compile(r"\s*IS\s+(NOT\s+)?NULL\b", re.IGNORECASE)
_OPERATIONS = {"=": "eq", "==": "eq", "!=": "ne", "<>": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def parse_row_filter(text: str) -> BooleanExpression:
    """The unbound expression of a row filter (module doc); ParseException (its position in ``text``) or
    ValueError when it does not parse."""
    predicates: list[BooleanExpression] = []
    pieces: list[tuple[str, int]] = []  # (text given to pyiceberg, where it starts in ``text``)
    position = 0
    for start in _call_starts(text):
        if start < position:
            continue
        predicate, end = _extended_predicate(text, start)
        pieces += [(text[position:start], position), (" " + _PLACEHOLDER.format(len(predicates)) + " IS NULL ", start)]
        predicates.append(predicate)
        position = end
    if not predicates:
        return parse(text)
    pieces.append((text[position:], position))
    substituted = "".join(piece for piece, _ in pieces)
    try:
        return _substituted(parse(substituted), predicates)
    except ParseException as error:
        raise ParseException(text, _original_position(pieces, error.loc), error.msg) from None


def _original_position(pieces: list[tuple[str, int]], location: int) -> int:
    """Where ``location`` in the joined pieces lies in the original text (a placeholder: its call's start)."""
    offset = 0
    for index, (piece, original) in enumerate(pieces):
        if location < offset + len(piece):
            return original if index % 2 else original + location - offset
        offset += len(piece)
    return pieces[-1][1] + len(pieces[-1][0])


def _call_starts(text: str) -> list[int]:
    """Where each recognised call starts, outside quoted text."""
    starts = []
    quoted = _quoted_spans(text)
    for match in _CALL.finditer(text):
        if not any(low <= match.start() < high for low, high in quoted):
            starts.append(match.start())
    return starts


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    index = 0
    while index < len(text):
        if text[index] in "'\"":
            end = _end_of_quoted(text, index)
            spans.append((index, end))
            index = end
        else:
            index += 1
    return spans


def _end_of_quoted(text: str, start: int) -> int:
    """The index after the quoted text starting at ``start`` (a doubled quote or a backslash escapes)."""
    quote = text[start]
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == quote:
            if index + 1 < len(text) and text[index + 1] == quote:
                index += 2
                continue
            return index + 1
        index += 1
    raise ValueError(f"unterminated quoted text starting at {text[start : start + 30]!r}")


def _arguments(text: str, open_paren: int, call: str) -> tuple[list[str], int]:
    """The comma-separated arguments of the call whose '(' is at ``open_paren``, and the index after its ')'."""
    arguments: list[str] = []
    depth, index, begin = 0, open_paren + 1, open_paren + 1
    while index < len(text):
        character = text[index]
        if character in "'\"":
            index = _end_of_quoted(text, index)
            continue
        if character == "(":
            depth += 1
        elif character == ")":
            if depth == 0:
                arguments.append(text[begin:index].strip())
                return ([] if arguments == [""] else arguments), index + 1
            depth -= 1
        elif character == "," and depth == 0:
            arguments.append(text[begin:index].strip())
            begin = index + 1
        index += 1
    raise ValueError(f"{call}(...) has no closing parenthesis")


def _extended_predicate(text: str, start: int) -> tuple[BooleanExpression, int]:
    match = _CALL.match(text, start)
    assert match is not None
    call = match.group(1).lower()
    arguments, end = _arguments(text, match.end() - 1, call)
    if call in ("st_intersects", "st_disjoint"):
        return _spatial(call, arguments), end
    return _variant_comparison(text, call, arguments, end)


def _arity(call: str, arguments: list[str], expected: int, spelled: str) -> None:
    if len(arguments) != expected:
        raise ValueError(f"{call} takes {expected} arguments ({spelled}), got {len(arguments)}: {arguments}")


def _column(call: str, argument: str) -> str:
    name = argument.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in '`"':
        name = name[1:-1]
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
        raise ValueError(f"{call}'s first argument must be a column name, got {argument!r}")
    return name


def _string_literal(call: str, what: str, argument: str) -> str:
    if len(argument) < 2 or argument[0] not in "'\"" or argument[-1] != argument[0]:
        raise ValueError(f"{call}'s {what} must be a quoted string, got {argument!r}")
    quote = argument[0]
    return argument[1:-1].replace(quote * 2, quote)


def _spatial(call: str, arguments: list[str]) -> BooleanExpression:
    _arity(call, arguments, 2, "column, st_makeenvelope(xmin, ymin, xmax, ymax)")
    envelope = re.fullmatch(r"(?is)st_makeenvelope\s*\((.*)\)", arguments[1])
    if envelope is None:
        raise ValueError(
            f"{call}'s second argument must be st_makeenvelope(xmin, ymin, xmax, ymax), got {arguments[1]!r}"
        )
    corners, _ = _arguments(arguments[1], arguments[1].index("("), "st_makeenvelope")
    _arity("st_makeenvelope", corners, 4, "xmin, ymin, xmax, ymax")
    values = []
    for corner in corners:
        if not _NUMBER.fullmatch(corner):
            raise ValueError(f"st_makeenvelope takes numbers, got {corner!r}")
        values.append(float(corner))
    xmin, ymin, xmax, ymax = values
    if ymin > ymax or not all(math.isfinite(value) for value in values):
        raise ValueError(f"st_makeenvelope({', '.join(corners)}) is not a box: ymin must not exceed ymax")
    condition = SpatialCondition(Box(xmin, ymin, xmax, ymax), intersects=call == "st_intersects")
    return SpatialPredicate(term=Reference(_column(call, arguments[0])), condition=condition)


def _variant_comparison(text: str, call: str, arguments: list[str], end: int) -> tuple[BooleanExpression, int]:
    _arity(call, arguments, 3, "column, 'path', 'type'")
    column = _column(call, arguments[0])
    path_text = _string_literal(call, "path", arguments[1])
    path = parse_path(path_text)
    value_type = extraction_type(_string_literal(call, "type", arguments[2]))
    literals: list[Any]
    if (found := _IS_NULL.match(text, end)) is not None:
        operation, literals, end = ("not_null" if found.group(1) else "is_null"), [], found.end()
    elif (found := _IN.match(text, end)) is not None:
        items, end = _arguments(text, found.end() - 1, "IN")
        if not items:
            raise ValueError(f"{call}(...) IN () lists no values")
        operation, literals = ("not_in" if found.group(1) else "in"), [_literal(item) for item in items]
    elif (found := _COMPARISON.match(text, end)) is not None:
        literal, end = _next_literal(text, found.end())
        operation, literals = _OPERATIONS[found.group(1)], [literal]
    else:
        raise ValueError(
            f"{call}({', '.join(arguments)}) must be followed by a comparison (=, !=, <, <=, >, >=), "
            f"[NOT] IN (...) or IS [NOT] NULL; found {text[end : end + 20]!r}"
        )
    try:
        parsed = tuple(value_type.parse_literal(value) for value in literals)
    except ValueError as error:
        raise ValueError(f"{call}(..., '{value_type.name}'): {error}") from None
    condition = VariantPathCondition(path_text, path, value_type, operation, parsed)
    return VariantPathPredicate(term=Reference(column), condition=condition), end


def _next_literal(text: str, start: int) -> tuple[Any, int]:
    """The literal after a comparison: a quoted string, a number or true/false."""
    index = len(text) - len(text[start:].lstrip())
    if index < len(text) and text[index] in "'\"":
        end = _end_of_quoted(text, index)
        return _literal(text[index:end]), end
    match = re.compile(r"[^\s()]+").match(text, index)
    if match is None:
        raise ValueError(f"a comparison needs a literal at {text[index : index + 20]!r}")
    return _literal(match.group(0)), match.end()


def _literal(token: str) -> Any:
    """A literal's Python value: quoted text as str, integers as int, other numbers as exact ``Decimal``s."""
    token = token.strip()
    if token[:1] in "'\"":
        return _string_literal("a comparison", "literal", token)
    if token.lower() in ("true", "false"):
        return token.lower() == "true"
    if _NUMBER.fullmatch(token):
        return int(token) if re.fullmatch(r"[+-]?\d+", token) else Decimal(token)
    raise ValueError(f"{token!r} is not a literal (a quoted string, a number, true or false)")


def _substituted(expression: BooleanExpression, predicates: list[BooleanExpression]) -> BooleanExpression:
    """``expression`` with each placeholder replaced by its predicate (module doc, step 3)."""
    if isinstance(expression, And):
        return And(_substituted(expression.left, predicates), _substituted(expression.right, predicates))
    if isinstance(expression, Or):
        return Or(_substituted(expression.left, predicates), _substituted(expression.right, predicates))
    if isinstance(expression, Not):
        return Not(_substituted(expression.child, predicates))
    if isinstance(expression, IsNull) and isinstance(expression.term, Reference):
        match = re.fullmatch(_PLACEHOLDER.format(r"(\d+)"), expression.term.name)
        if match is not None:
            return predicates[int(match.group(1))]
    return expression
