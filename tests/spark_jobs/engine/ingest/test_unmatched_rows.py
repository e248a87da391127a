"""The rows a filter does not match, read by the engine: every row the filter is false or unknown on, NULL and NaN
included, checked against SQL's three-valued logic row by row."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression
from pyiceberg.expressions.parser import parse
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.ingest.live_files import rows_to_keep
from spark_jobs.engine.ingest.unmatched_rows import unmatched_rows_filter
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.read.task_scan import read_tasks_to_table
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data

SCHEMA = Schema(
    NestedField(1, "x", LongType(), required=False),
    NestedField(2, "f", DoubleType(), required=False),
    NestedField(3, "s", StringType(), required=False),
)
ROWS = [
    (1, 0.5, "ab"),
    (None, math.nan, None),
    (10, 2.0, "b"),
    (5, None, "ax"),
    (None, 3.0, "a"),
    (7, math.nan, "ba"),
]

Value = Any


def _and(a: bool | None, b: bool | None) -> bool | None:
    return False if a is False or b is False else (None if a is None or b is None else True)


def _or(a: bool | None, b: bool | None) -> bool | None:
    return True if a is True or b is True else (None if a is None or b is None else False)


def _cmp(op: Callable[[Value, Value], bool]) -> Callable[[Value, Value], bool | None]:
    """A comparison false on NaN (None on NULL), as SQL and the engine evaluate it."""
    return lambda v, lit: None if v is None else (False if isinstance(v, float) and math.isnan(v) else op(v, lit))


# filter text -> its truth on a row (x, f, s): True, False or None (unknown)
CASES: dict[str, Callable[[tuple[Any, ...]], bool | None]] = {
    "x > 5": lambda r: _cmp(lambda v, lit: v > lit)(r[0], 5),
    "not (x > 5)": lambda r: None if r[0] is None else not r[0] > 5,
    "x != 1": lambda r: None if r[0] is None else r[0] != 1,
    "x in (1, 10)": lambda r: None if r[0] is None else r[0] in (1, 10),
    "x not in (1, 10)": lambda r: None if r[0] is None else r[0] not in (1, 10),
    "f < 1.0": lambda r: _cmp(lambda v, lit: v < lit)(r[1], 1.0),
    "f != 2.0": lambda r: None if r[1] is None else (True if math.isnan(r[1]) else r[1] != 2.0),
    "f is nan": lambda r: r[1] is not None and math.isnan(r[1]),
    "f is not null": lambda r: r[1] is not None,
    "s like 'a%'": lambda r: None if r[2] is None else r[2].startswith("a"),
    "x > 5 or f < 1.0": lambda r: _or(_cmp(lambda v, lit: v > lit)(r[0], 5), _cmp(lambda v, lit: v < lit)(r[1], 1.0)),
    "x >= 5 and not (s like 'b%')": lambda r: _and(
        _cmp(lambda v, lit: v >= lit)(r[0], 5), None if r[2] is None else not r[2].startswith("b")
    ),
}


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Table:
    """One data file holding ROWS."""
    from pyiceberg.catalog.sql import SqlCatalog

    root = tmp_path_factory.mktemp("unmatched")
    catalog = SqlCatalog("unmatched", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
    catalog.create_namespace("ns")
    created = catalog.create_table("ns.t", SCHEMA, properties={"format-version": "2"})
    data = pa.table(
        {
            "x": pa.array([r[0] for r in ROWS], pa.int64()),
            "f": pa.array([r[1] for r in ROWS], pa.float64()),
            "s": pa.array([r[2] for r in ROWS], pa.string()),
        }
    )
    files = [to_data_file(item) for item in write_data(data, WriteContext.for_table(created), "rows")]
    commit_change(created, SnapshotChange(Operation.APPEND, added_data_files=files))
    return catalog.load_table("ns.t")


def _comparable(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows sorted, NaN as a string (NaN equals nothing, not even itself)."""
    nan_free = (tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows)
    return sorted(nan_free, key=repr)


def _read(table: Table, row_filter: BooleanExpression) -> list[tuple[Any, ...]]:
    rows = open_read_session(table.catalog, table, row_filter=row_filter).to_arrow().to_pylist()
    return _comparable(tuple(row.values()) for row in rows)


@pytest.mark.parametrize("text", list(CASES))
def test_the_unmatched_rows_are_every_row_the_filter_is_not_true_on(table: Table, text: str) -> None:
    expected = _comparable(row for row in ROWS if CASES[text](row) is not True)
    matched = _comparable(row for row in ROWS if CASES[text](row) is True)
    assert _read(table, parse(text)) == matched  # the oracle agrees with the engine on the filter itself
    assert _read(table, unmatched_rows_filter(bind(SCHEMA, parse(text), True), SCHEMA)) == expected


def test_constants_swap() -> None:
    assert unmatched_rows_filter(AlwaysTrue(), SCHEMA) == AlwaysFalse()
    assert unmatched_rows_filter(AlwaysFalse(), SCHEMA) == AlwaysTrue()


def test_an_overwrite_by_filter_keeps_the_rows_the_filter_is_unknown_on(table: Table) -> None:
    keep = rows_to_keep(table, "x > 5 or f < 1.0")
    kept = read_tasks_to_table(keep.tasks, keep.context, ScanMetrics()).to_pylist()
    assert _comparable(tuple(row.values()) for row in kept) == _comparable(
        [(None, math.nan, None), (5, None, "ax"), (None, 3.0, "a")]
    )
