"""Skip an equality delete file for a data file when their column statistics prove no row of one equals the other.

Iceberg Java does the same in ``DeleteFileIndex.canContainEqDeletesForFile``. For each equality field of the delete
file, in order (a field the schema no longer has, or a nested one, proves nothing and is passed over):

1. Both files hold nulls in the field: a null delete value deletes null rows, so nothing is proved by this field.
2. The data file holds only nulls there and the delete file none: no row can match; skip the delete file.
3. The delete file holds only nulls there and the data file none: no row can match; skip it.
4. Both files have lower and upper bounds for the field and the ranges do not overlap: skip it.

Any missing count or bound means "may match". Bounds decode with the field's current type (pyiceberg reads int
bounds as long and float bounds as double after a promotion); a bound that does not decode proves nothing.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Protocol

from pyiceberg.conversions import from_bytes
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, PrimitiveType


class ColumnStatistics(Protocol):
    """What the check reads of a file: its value and null counts and its bounds, per field id."""

    @property
    def value_counts(self) -> dict[int, int] | None: ...

    @property
    def null_value_counts(self) -> dict[int, int] | None: ...

    @property
    def lower_bounds(self) -> dict[int, bytes] | None: ...

    @property
    def upper_bounds(self) -> dict[int, bytes] | None: ...


def equality_fields(schema: Schema, equality_ids: Sequence[int]) -> list[NestedField]:
    """The primitive fields of ``schema`` among the equality ids (dropped and nested fields prove nothing)."""
    fields = []
    for field_id in equality_ids:
        try:
            field = schema.find_field(field_id)
        except ValueError:
            continue
        if isinstance(field.field_type, PrimitiveType):
            fields.append(field)
    return fields


def can_contain_equality_deletes(
    data_file: ColumnStatistics, delete_file: ColumnStatistics, fields: Sequence[NestedField]
) -> bool:
    """False when the statistics of ``fields`` prove no row of ``data_file`` equals a row of ``delete_file``."""
    for field in fields:
        if _contains_null(data_file, field) and _contains_null(delete_file, field):
            continue
        if _all_null(data_file, field) and _all_non_null(delete_file, field):
            return False
        if _all_null(delete_file, field) and _all_non_null(data_file, field):
            return False
        data_lower, data_upper = _bound(data_file.lower_bounds, field), _bound(data_file.upper_bounds, field)
        delete_lower, delete_upper = _bound(delete_file.lower_bounds, field), _bound(delete_file.upper_bounds, field)
        if data_lower is None or data_upper is None or delete_lower is None or delete_upper is None:
            continue
        if data_lower > delete_upper or delete_lower > data_upper:
            return False
    return True


def _bound(bounds: dict[int, bytes] | None, field: NestedField) -> Any:
    """The decoded bound of ``field``, or None when absent or not decodable."""
    raw = (bounds or {}).get(field.field_id)
    if raw is None or not isinstance(field.field_type, PrimitiveType):
        return None
    try:
        return from_bytes(field.field_type, raw)
    except (ValueError, TypeError, ArithmeticError, struct.error):
        return None


def _null_count(content_file: ColumnStatistics, field: NestedField) -> int | None:
    return (content_file.null_value_counts or {}).get(field.field_id)


def _contains_null(content_file: ColumnStatistics, field: NestedField) -> bool:
    """True unless the field is required or the file records zero nulls for it."""
    if field.required:
        return False
    null_count = _null_count(content_file, field)
    return null_count is None or null_count > 0


def _all_null(content_file: ColumnStatistics, field: NestedField) -> bool:
    """True when the file records as many nulls as values for an optional field."""
    if field.required:
        return False
    null_count = _null_count(content_file, field)
    value_count = (content_file.value_counts or {}).get(field.field_id)
    return null_count is not None and value_count is not None and null_count == value_count


def _all_non_null(content_file: ColumnStatistics, field: NestedField) -> bool:
    """True when the field is required or the file records zero nulls for it."""
    if field.required:
        return True
    null_count = _null_count(content_file, field)
    return null_count is not None and null_count <= 0
