"""Sort and z-order keys: rows ordered as Iceberg Java and Spark order them (null order, NaN, transforms, nested
fields, the output partition first), and key specs that travel to executors intact."""

from __future__ import annotations

import math
import pickle

import pyarrow as pa
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform, TruncateTransform
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType, StructType

from spark_jobs.engine.compaction.sort_keys import ZORDER_COLUMN, SortKeySpec, SortPart, source_values

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "score", DoubleType(), required=False),
    NestedField(3, "name", StringType(), required=False),
    NestedField(4, "point", StructType(NestedField(5, "x", IntegerType(), required=False)), required=False),
)


def _order(*fields: SortField) -> SortKeySpec:
    return SortKeySpec.for_sort_order(SCHEMA, SortOrder(*fields))


def _field(source_id: int, *, descending: bool = False, nulls_first: bool = True, transform=None) -> SortField:
    return SortField(
        source_id=source_id,
        transform=transform or IdentityTransform(),
        direction=SortDirection.DESC if descending else SortDirection.ASC,
        null_order=NullOrder.NULLS_FIRST if nulls_first else NullOrder.NULLS_LAST,
    )


def _scores(values: list) -> pa.Table:
    return pa.table({"score": pa.array(values, pa.float64())})


def _as_text(values: list) -> list[str]:
    """Values with NaN and None spelled out, so lists holding NaN compare equal."""
    return ["nan" if isinstance(v, float) and math.isnan(v) else repr(v) for v in values]


def test_a_sort_order_becomes_a_rank_and_a_key_column_per_field() -> None:
    spec = _order(_field(1), _field(3, descending=True, nulls_first=False))
    assert [(p.source_id, p.transform, p.descending, p.nulls_first) for p in spec.parts] == [
        (1, "identity", False, True),
        (3, "identity", True, False),
    ]
    assert spec.sort_keys == [
        ("_rank0", "ascending", "at_end"),
        ("_key0", "ascending", "at_end"),
        ("_rank1", "ascending", "at_end"),
        ("_key1", "descending", "at_end"),
    ]
    assert spec.key_column_names == ["_rank0", "_key0", "_rank1", "_key1"]
    assert spec.source_ids == (1, 3)


def test_nulls_are_placed_by_the_null_order_in_either_direction() -> None:
    rows = pa.table({"id": pa.array([3, None, 1, 2, None], pa.int64())})
    cases = {
        (False, True): [None, None, 1, 2, 3],
        (False, False): [1, 2, 3, None, None],
        (True, True): [None, None, 3, 2, 1],
        (True, False): [3, 2, 1, None, None],
    }
    for (descending, nulls_first), expected in cases.items():
        spec = _order(_field(1, descending=descending, nulls_first=nulls_first))
        assert spec.sort_rows(rows).column("id").to_pylist() == expected, (descending, nulls_first)


def test_nan_sorts_above_every_number_as_spark_orders_it() -> None:
    rows = _scores([1.5, float("nan"), None, -math.inf, math.inf, 0.0])
    ascending = _order(_field(2)).sort_rows(rows).column("score").to_pylist()
    assert _as_text(ascending) == _as_text([None, -math.inf, 0.0, 1.5, math.inf, float("nan")])
    descending = _order(_field(2, descending=True, nulls_first=False)).sort_rows(rows).column("score").to_pylist()
    assert _as_text(descending) == _as_text([float("nan"), math.inf, 1.5, 0.0, -math.inf, None])
    nulls_last = _order(_field(2, nulls_first=False)).sort_rows(rows).column("score").to_pylist()
    assert _as_text(nulls_last) == _as_text([-math.inf, 0.0, 1.5, math.inf, float("nan"), None])


def test_nan_and_null_keys_are_nulled_so_equal_keys_compare_equal() -> None:
    keys = _order(_field(2)).key_table(_scores([float("nan"), None, 2.0]))
    assert keys.column("_rank0").to_pylist() == [2, 0, 1]
    assert keys.column("_key0").to_pylist() == [None, None, 2.0]


def test_rows_are_ordered_by_the_transformed_value_and_the_sort_is_stable() -> None:
    """truncate[10] makes 12, 15 and 19 equal keys: they keep their input order."""
    rows = pa.table({"id": pa.array([19, 5, 12, 31, 15], pa.int64())})
    spec = _order(_field(1, transform=TruncateTransform(10)))
    assert spec.parts[0].transform == "truncate[10]"
    assert spec.key_table(rows).column("_key0").to_pylist() == [10, 0, 10, 30, 10]
    assert spec.sort_rows(rows).column("id").to_pylist() == [5, 19, 12, 15, 31]


def test_a_nested_field_is_read_through_its_struct_and_a_null_parent_gives_null() -> None:
    point = pa.array([{"x": 3}, None, {"x": 1}, {"x": None}], pa.struct([("x", pa.int32())]))
    rows = pa.table({"id": pa.array([0, 1, 2, 3], pa.int64()), "point": point})
    assert source_values(rows, SCHEMA, 5).to_pylist() == [3, None, 1, None]
    spec = _order(_field(5, nulls_first=False))
    assert spec.sort_rows(rows).column("id").to_pylist() == [2, 0, 1, 3]


def test_the_output_partition_fields_come_first_ascending_nulls_first() -> None:
    spec = _order(_field(1, descending=True)).with_partition_prefix(
        PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="name"))
    )
    assert spec.parts[0] == SortPart(3, "identity", descending=False, nulls_first=True)
    assert spec.source_ids == (3, 1)
    rows = pa.table({"id": pa.array([1, 2, 3, 4, 5], pa.int64()), "name": ["b", "a", None, "b", "a"]})
    ordered = spec.sort_rows(rows)
    assert list(zip(ordered.column("name").to_pylist(), ordered.column("id").to_pylist(), strict=True)) == [
        (None, 3),
        ("a", 5),
        ("a", 2),
        ("b", 4),
        ("b", 1),
    ]


def test_a_zorder_interleaves_the_bits_of_its_columns_first_column_highest() -> None:
    grid = [(x, y) for x in range(4) for y in range(4)]
    shuffled = grid[7:] + grid[:7]
    rows = pa.table(
        {"id": pa.array([x for x, _ in shuffled], pa.int64()), "point": [{"x": y} for _, y in shuffled]},
        schema=pa.schema([("id", pa.int64()), ("point", pa.struct([("x", pa.int32())]))]),
    )
    spec = SortKeySpec.for_zorder(SCHEMA, (1, 5))
    assert spec.sort_keys == [(ZORDER_COLUMN, "ascending", "at_end")]
    # Java widens every integer column to 8 bytes: two columns interleave into 16.
    assert spec.key_table(rows).column(ZORDER_COLUMN).type == pa.binary(16)

    def interleaved(point: tuple[int, int]) -> int:
        x, y = point
        return sum(((x >> bit) & 1) << (2 * bit + 1) | ((y >> bit) & 1) << (2 * bit) for bit in range(2))

    ordered = spec.sort_rows(rows)
    got = list(zip(ordered.column("id").to_pylist(), source_values(ordered, SCHEMA, 5).to_pylist(), strict=True))
    assert got == sorted(grid, key=interleaved)
    assert got[:4] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_no_keys_keep_the_rows_in_place() -> None:
    spec = SortKeySpec(SCHEMA.model_dump_json())
    rows = pa.table({"id": pa.array([3, 1, 2], pa.int64())})
    assert spec.key_column_names == ["_none"]
    assert spec.sort_indices(spec.key_table(rows)).tolist() == [0, 1, 2]
    assert spec.sort_rows(rows).column("id").to_pylist() == [3, 1, 2]


def test_a_key_spec_survives_pickling_with_its_schema() -> None:
    spec = _order(_field(2, descending=True), _field(5)).with_partition_prefix(
        PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=TruncateTransform(100), name="id_trunc"))
    )
    copied = pickle.loads(pickle.dumps(spec))
    assert copied == spec
    assert copied.schema == SCHEMA
    rows = pa.table({"id": pa.array([150, 20, 130], pa.int64()), "score": pa.array([1.0, 9.0, 2.0])})
    rows = rows.append_column("point", pa.array([{"x": 1}] * 3, pa.struct([("x", pa.int32())])))
    assert copied.sort_rows(rows).column("id").to_pylist() == [20, 130, 150]
