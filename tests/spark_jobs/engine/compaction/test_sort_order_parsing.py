"""The --sort-order text: Spark's sort term syntax, Java's defaults, and one-line errors for what cannot be sorted."""

from __future__ import annotations

import pytest
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from pyiceberg.types import (
    DoubleType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

from spark_jobs.engine.compaction.sort_order_parsing import (
    bind_sort_order,
    describe_sort_order,
    parse_sort_order_text,
    table_sort_order_id,
)
from spark_jobs.engine.shared.errors import UserInputError

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "ts", TimestamptzType(), required=False),
    NestedField(4, "price", DoubleType(), required=False),
    NestedField(5, "point", StructType(NestedField(6, "x", LongType(), required=False)), required=False),
    NestedField(7, "tags", ListType(8, StringType(), element_required=False), required=False),
)


def _bind(text: str) -> SortOrder:
    return bind_sort_order("ns.t", SCHEMA, parse_sort_order_text(text).terms)


def test_terms_with_transforms_directions_and_null_orders():
    order = _bind("id DESC, bucket(16, name) asc nulls last, truncate(name, 4), days(ts) nulls last, point.x")
    assert list(order.fields) == [
        SortField(
            source_id=1, transform=IdentityTransform(), direction=SortDirection.DESC, null_order=NullOrder.NULLS_LAST
        ),
        SortField(
            source_id=2, transform=BucketTransform(16), direction=SortDirection.ASC, null_order=NullOrder.NULLS_LAST
        ),
        SortField(
            source_id=2, transform=TruncateTransform(4), direction=SortDirection.ASC, null_order=NullOrder.NULLS_FIRST
        ),
        SortField(source_id=3, transform=DayTransform(), direction=SortDirection.ASC, null_order=NullOrder.NULLS_LAST),
        SortField(
            source_id=6, transform=IdentityTransform(), direction=SortDirection.ASC, null_order=NullOrder.NULLS_FIRST
        ),
    ]
    assert describe_sort_order(order, SCHEMA).startswith("id DESC NULLS LAST, bucket[16](name) ASC NULLS LAST")


def test_truncate_takes_its_arguments_in_either_order_and_zorder_gathers_columns():
    assert _bind("truncate(4, name)").fields == _bind("truncate(name, 4)").fields
    parsed = parse_sort_order_text("zorder(id, `name`), ZORDER(price)")
    assert parsed.is_zorder and parsed.zorder_columns == ("id", "name", "price")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope", "unknown column 'nope'"),
        ("years(id)", "cannot be sorted: transform year does not apply to column 'id' of type long"),
        ("bucket(4, price)", "cannot be sorted: transform bucket\\[4\\] does not apply"),
        ("void(id)", "unknown transform 'void'"),
        ("point", "only primitive columns can be sorted"),
        ("tags.element", "inside a list or map"),
        ("zorder(id), name", "cannot mix plain sort columns and a zorder"),
        ("id nulls", "NULLS must be followed by FIRST or LAST"),
        ("id desc asc", "expected ',' or the end of the text, found 'asc'"),
        ("bucket(0, id)", "needs a positive integer"),
        ("  ", "--sort-order is empty"),
        ("id; drop", "unexpected character ';'"),
    ],
)
def test_what_cannot_be_sorted_is_one_line_naming_it(text, message):
    with pytest.raises(UserInputError, match=message) as error:
        _bind(text)
    assert "\n" not in str(error.value)


def test_the_table_order_with_the_same_fields_gives_its_id():
    table_orders = [SortOrder(order_id=0), _bind("name"), SortOrder(*_bind("id desc").fields, order_id=3)]
    assert table_sort_order_id(table_orders, _bind("id desc")) == 3
    assert table_sort_order_id(table_orders, _bind("id desc nulls first")) == 0  # another null order: no match
    assert table_sort_order_id(table_orders, None) == 0
