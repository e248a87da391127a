"""Both kinds of row predicate the reader evaluates keep the protocol, and say which kind they are."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.expressions import GreaterThan
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from spark_jobs.engine.deletes.equality_deletes import EqualityDeleteSet
from spark_jobs.engine.parquet.predicates import translate_filter
from spark_jobs.engine.parquet.row_filter import filter_conjuncts
from spark_jobs.engine.shared.row_predicate import PredicateKind, RowPredicate

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def test_filter_conjuncts_and_equality_delete_sets_are_row_predicates_of_their_kind() -> None:
    (conjunct,) = filter_conjuncts(translate_filter(bind(SCHEMA, GreaterThan("id", 1), case_sensitive=True)))
    delete_set = EqualityDeleteSet([1], [pa.array([2], pa.int64())], source_paths=["eq.parquet"])
    assert isinstance(conjunct, RowPredicate) and isinstance(delete_set, RowPredicate)
    assert (conjunct.kind, delete_set.kind) == (PredicateKind.FILTER, PredicateKind.EQUALITY_DELETE)
    column = {1: pa.array([1, 2, 3], pa.int64())}
    assert conjunct.keep_mask(column, 3).tolist() == [False, True, True]
    assert delete_set.keep_mask(column, 3).tolist() == [True, False, True]
    assert conjunct.cache_identity is None and delete_set.cache_identity is not None


def test_an_object_without_the_protocol_is_not_a_row_predicate() -> None:
    assert not isinstance(object(), RowPredicate)
