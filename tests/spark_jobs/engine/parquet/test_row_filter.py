"""Row-level predicate semantics (NULL, NaN, signed zeros, uuid, float precision) and cost ordering."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest
from pyiceberg.expressions import (
    EqualTo,
    GreaterThan,
    In,
    IsNaN,
    IsNull,
    LessThan,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
)
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, FloatType, LongType, NestedField, StringType, UUIDType

from spark_jobs.engine.parquet.predicates import ColumnPredicate, translate_filter
from spark_jobs.engine.parquet.row_filter import evaluate_rows, filter_conjuncts, leaf_keep_mask, order_by_cost
from spark_jobs.engine.shared.row_predicate import PredicateKind, RowPredicate

SCHEMA = Schema(
    NestedField(1, "x", LongType(), required=False),
    NestedField(2, "d", DoubleType(), required=False),
    NestedField(3, "s", StringType(), required=False),
    NestedField(4, "u", UUIDType(), required=False),
    NestedField(5, "g", FloatType(), required=False),
)
UUIDS = [uuid.UUID(int=1), uuid.UUID(int=2)]
COLUMNS = {
    1: pa.array([1, None, 3, 4], pa.int64()),
    2: pa.array([float("nan"), None, -0.0, 2.0]),
    3: pa.chunked_array([pa.array(["ab", None]), pa.array(["b", "é"])]),
    4: pa.array([UUIDS[0].bytes, None, UUIDS[1].bytes, UUIDS[0].bytes], pa.binary(16)).cast(pa.uuid()),
    5: pa.array([0.1, 1.0, None, 2.5], pa.float32()),
}


def _rows(expression) -> list[int]:
    node = translate_filter(bind(SCHEMA, expression, case_sensitive=True))
    return np.flatnonzero(evaluate_rows(node, COLUMNS, 4)).tolist()


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (EqualTo("x", 3), [2]),
        (NotEqualTo("x", 3), [0, 3]),  # NULL is excluded
        (Not(EqualTo("x", 3)), [0, 3]),
        (NotIn("x", [1, 9]), [2, 3]),
        (In("x", [1, 4]), [0, 3]),
        (IsNull("x"), [1]),
        (NotNull("x"), [0, 2, 3]),
        (LessThan("d", 5.0), [2, 3]),  # NaN < 5 is false
        (Not(LessThan("d", 5.0)), []),  # NOT is pushed down first: d >= 5
        (NotEqualTo("d", 2.0), [0, 2]),  # NaN != 2 is true
        (EqualTo("d", 0.0), [2]),  # -0.0 = 0.0
        (In("d", [0.0, 7.0]), [2]),
        (NotIn("d", [0.0]), [0, 3]),
        (IsNaN("d"), [0]),
        (NotNaN("d"), [1, 2, 3]),  # NULL is not NaN
        (StartsWith("s", "a"), [0]),
        (NotStartsWith("s", "a"), [2, 3]),
        (GreaterThan("s", "b"), [3]),  # code point order: é > b
        (EqualTo("u", UUIDS[0]), [0, 3]),
        (In("u", UUIDS), [0, 2, 3]),
        (EqualTo("g", 0.1), [0]),  # float columns compare in 32-bit precision
        (Or(IsNull("x"), EqualTo("s", "b")), [1, 2]),
    ],
)
def test_leaf_and_tree_semantics(expression, expected: list[int]) -> None:
    assert _rows(expression) == expected


@dataclass(frozen=True)
class _Named:
    name: str
    field_ids: frozenset[int]
    kind: str = "filter"
    cache_identity: None = None

    def keep_mask(self, columns: Mapping[int, pa.Array], num_rows: int) -> np.ndarray:
        return np.ones(num_rows, dtype=bool)


def test_order_by_cost_puts_sort_column_first_then_cheapest() -> None:
    predicates: list[RowPredicate] = [
        _Named("wide", frozenset({1})),
        _Named("narrow", frozenset({2})),
        _Named("sorted", frozenset({3})),
    ]
    costs = {1: 1000, 2: 10, 3: 500}
    ordered = order_by_cost(predicates, lambda ids: sum(costs[i] for i in ids), frozenset({3}))
    assert [predicate.name for predicate in ordered] == ["sorted", "narrow", "wide"]


def test_filter_conjuncts_split_the_top_level_and() -> None:
    node = translate_filter(bind(SCHEMA, EqualTo("x", 1) & (IsNull("s") | EqualTo("d", 1.0)), True))
    conjuncts = filter_conjuncts(node)
    assert [conjunct.field_ids for conjunct in conjuncts] == [frozenset({1}), frozenset({2, 3})]
    assert all(isinstance(conjunct, RowPredicate) and conjunct.kind is PredicateKind.FILTER for conjunct in conjuncts)


@pytest.mark.parametrize(
    ("column", "operation", "literal", "expected"),
    [
        (pa.array([1, 5, 9], pa.int32()), "lt", 5, [True, False, False]),
        (pa.array([1, 5, 9], pa.int32()), "gt", 2**40, [False, False, False]),  # beyond int32: Arrow path
        (pa.chunked_array([pa.array([1, 5], pa.int64()), pa.array([9], pa.int64())]), "ne", 5, [True, False, True]),
        (pa.array([float("nan"), -0.0, 1.0]), "eq", 0.0, [False, True, False]),
        (pa.array([float("nan"), -0.0, 1.0]), "ne", 1.0, [True, True, False]),
        (pa.array([float("nan"), -0.0, 1.0]), "ge", -1.0, [False, True, True]),
        (pa.array([0.1, 0.2], pa.float32()), "eq", 0.1, [True, False]),
        (pa.chunked_array([], pa.int64()), "eq", 1, []),
    ],
)
def test_null_free_numeric_comparisons(column, operation: str, literal, expected: list[bool]) -> None:
    field_type = (
        FloatType() if column.type == pa.float32() else (DoubleType() if column.type == pa.float64() else LongType())
    )
    predicate = ColumnPredicate(operation, 1, field_type, (literal,))
    assert leaf_keep_mask(predicate, column).tolist() == expected
