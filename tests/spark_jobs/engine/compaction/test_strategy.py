"""Choosing bin-pack, sort or z-order as Java's rewrite_data_files does, and refusing what Java refuses."""

from __future__ import annotations

import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DecimalType, LongType, NestedField, StringType

from spark_jobs.engine.compaction.strategy import BINPACK_STRATEGY, resolve_strategy
from spark_jobs.engine.shared.errors import UserInputError

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "amount", DecimalType(10, 2), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))


@pytest.fixture
def table(sql_catalog):
    sql_catalog.create_namespace("ns")
    return sql_catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC)


@pytest.fixture
def sorted_table(sql_catalog):
    sql_catalog.create_namespace("ns")
    order = SortOrder(
        SortField(
            source_id=1, transform=IdentityTransform(), direction=SortDirection.DESC, null_order=NullOrder.NULLS_LAST
        )
    )
    return sql_catalog.create_table("ns.sorted", SCHEMA, partition_spec=SPEC, sort_order=order)


def test_binpack_by_default(table):
    assert resolve_strategy(table, None, None) is BINPACK_STRATEGY
    assert resolve_strategy(table, "binpack", None) is BINPACK_STRATEGY


def test_sort_uses_the_tables_order_or_the_given_one(sorted_table):
    own = resolve_strategy(sorted_table, "sort", None)
    assert own.description == "id DESC NULLS LAST" and own.output_sort_order_id == sorted_table.sort_order().order_id
    given = resolve_strategy(sorted_table, None, "id desc nulls last")  # a sort order alone means sort
    assert given.name == "sort" and given.output_sort_order_id == sorted_table.sort_order().order_id
    other = resolve_strategy(sorted_table, "sort", "id")
    assert other.output_sort_order_id == 0  # none of the table's orders: files are not marked sorted


def test_zorder_drops_identity_partition_columns(table, caplog):
    strategy = resolve_strategy(table, "sort", "zorder(category, id)", var_length_contribution=4)
    assert strategy.name == "zorder" and strategy.keys.zorder.source_ids == (1,)
    assert strategy.description == "zorder(id)" and "ignoring 'category'" in caplog.text


@pytest.mark.parametrize(
    ("strategy", "sort_order", "options", "message"),
    [
        ("sort", None, {}, "Cannot sort data without a valid sort order, table 'ns.t' is unsorted"),
        ("binpack", "id", {}, "needs --strategy sort"),
        ("binpack", None, {"shuffle_partitions_per_file": 2}, "Cannot use options \\['shuffle-partitions-per-file'\\]"),
        ("binpack", None, {"compression_factor": 2.0}, "rewriter BIN-PACK"),
        ("sort", "id", {"var_length_contribution": 4}, "rewriter SORT"),
        ("sort", "zorder(category)", {}, "all columns provided were identity partition columns"),
        ("sort", "zorder(nope)", {}, "Cannot find column 'nope'"),
        ("sort", "zorder(amount)", {}, "cannot use column amount of type decimal\\(10, 2\\) in ZOrdering"),
        ("sort", "zorder(id)", {"var_length_contribution": 0}, "Cannot use less than 1 byte for variable length"),
        ("sort", "zorder(id)", {"max_output_size": 0}, "'max-output-size' was set to 0"),
        ("sort", "id", {"shuffle_partitions_per_file": 0}, "'shuffle-partitions-per-file' is set to 0"),
        ("zorder", None, {}, "unsupported strategy: zorder"),
    ],
)
def test_refusals_are_one_line(table, strategy, sort_order, options, message):
    with pytest.raises(UserInputError, match=message) as error:
        resolve_strategy(table, strategy, sort_order, **options)
    assert "\n" not in str(error.value)
