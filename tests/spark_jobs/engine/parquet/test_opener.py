"""``read_data_file`` end to end: exact filter results against an independent oracle, deletes, slices, constants."""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.expressions import (
    AlwaysTrue,
    And,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
)
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, DoubleType, LongType, NestedField, StringType

from spark_jobs.engine.parquet import opener
from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE
from spark_jobs.engine.parquet.opener import read_data_file, row_group_start_offset
from spark_jobs.engine.parquet.rejected_rows_cache import rejected_rows_cache
from spark_jobs.engine.planning.scan_context import ROW_POSITION
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.deleted_positions import DeletedPositionsKind
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.shared.row_predicate import PredicateKind
from tests.spark_jobs.engine.parquet.scan_contexts import FSSPEC_IO, deleted_positions, scan_context


def _field(name: str, arrow_type: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, arrow_type, metadata={b"PARQUET:field_id": str(field_id).encode()})


FILE_SCHEMA = pa.schema(
    [
        _field("pos", pa.int64(), 4),
        _field("i", pa.int32(), 1),
        _field("f", pa.float64(), 2),
        _field("s", pa.string(), 3),
    ]
)
READ_SCHEMA = Schema(
    NestedField(4, "pos", LongType(), required=False),
    NestedField(1, "i", LongType(), required=False),
    NestedField(2, "f", DoubleType(), required=False),
    NestedField(3, "s", StringType(), required=False),
)

# ---- an independent oracle: filters as tuples, NOT pushed down by hand, evaluated on Python values ----

_NEGATED = {
    "eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "in": "not_in", "not_in": "in",
    "is_null": "not_null", "not_null": "is_null", "is_nan": "not_nan", "not_nan": "is_nan",
    "starts_with": "not_starts_with", "not_starts_with": "starts_with",
}  # fmt: skip


def _push_not(node: tuple, negate: bool = False) -> tuple:
    kind = node[0]
    if kind == "not":
        return _push_not(node[1], not negate)
    if kind in ("and", "or"):
        flipped = {"and": "or", "or": "and"}[kind] if negate else kind
        return (flipped, _push_not(node[1], negate), _push_not(node[2], negate))
    operation, column, literal = node[1], node[2], node[3]
    return ("leaf", _NEGATED[operation] if negate else operation, column, literal)


def _leaf_holds(operation: str, value, literal) -> bool:
    is_nan = isinstance(value, float) and math.isnan(value)
    if operation == "is_null":
        return value is None
    if operation == "not_null":
        return value is not None
    if operation == "is_nan":
        return is_nan
    if operation == "not_nan":
        return not is_nan
    if value is None:
        return False
    if operation == "in":
        return value in literal and not is_nan
    if operation == "not_in":
        return is_nan or value not in literal
    if operation == "starts_with":
        return value.startswith(literal)
    if operation == "not_starts_with":
        return not value.startswith(literal)
    if operation == "ne":
        return is_nan or value != literal
    if is_nan:
        return False
    return {
        "eq": value == literal,
        "lt": value < literal,
        "le": value <= literal,
        "gt": value > literal,
        "ge": value >= literal,
    }[operation]


def _oracle(node: tuple, row: dict) -> bool:
    if node[0] == "and":
        return _oracle(node[1], row) and _oracle(node[2], row)
    if node[0] == "or":
        return _oracle(node[1], row) or _oracle(node[2], row)
    return _leaf_holds(node[1], row[node[2]], node[3])


_BUILDERS = {
    "eq": EqualTo, "ne": NotEqualTo, "lt": LessThan, "le": LessThanOrEqual, "gt": GreaterThan,
    "ge": GreaterThanOrEqual, "in": In, "not_in": NotIn, "starts_with": StartsWith,
    "not_starts_with": NotStartsWith,
}  # fmt: skip
_UNARY = {"is_null": IsNull, "not_null": NotNull, "is_nan": IsNaN, "not_nan": NotNaN}


def _expression(node: tuple):
    if node[0] == "not":
        return Not(_expression(node[1]))
    if node[0] == "and":
        return And(_expression(node[1]), _expression(node[2]))
    if node[0] == "or":
        return Or(_expression(node[1]), _expression(node[2]))
    _, operation, column, literal = node
    if operation in _UNARY:
        return _UNARY[operation](column)
    if operation in ("in", "not_in"):
        return _BUILDERS[operation](column, sorted(literal))
    return _BUILDERS[operation](column, literal)


# ---- strategies ----

INTS = st.integers(-4, 4)
FLOATS = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.5])
STRINGS = st.sampled_from(["", "a", "ab", "abc", "b", "ba", "é", "éa"])
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]


def _leaves(column: str, literals: st.SearchStrategy, extra: list[str]) -> st.SearchStrategy:
    literal_sets = st.frozensets(literals, min_size=1, max_size=3)
    return st.one_of(
        st.tuples(st.just("leaf"), st.sampled_from(COMPARISONS), st.just(column), literals),
        st.tuples(st.just("leaf"), st.sampled_from(["in", "not_in"]), st.just(column), literal_sets),
        st.tuples(st.just("leaf"), st.sampled_from(["is_null", "not_null", *extra]), st.just(column), st.none()),
    )


LEAVES = st.one_of(
    _leaves("i", INTS, []),
    _leaves("f", FLOATS, ["is_nan", "not_nan"]),
    _leaves("s", STRINGS, []),
    st.tuples(st.just("leaf"), st.sampled_from(["starts_with", "not_starts_with"]), st.just("s"), STRINGS.filter(bool)),
)
FILTERS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.tuples(st.just("and"), children, children),
        st.tuples(st.just("or"), children, children),
        st.tuples(st.just("not"), children),
    ),
    max_leaves=4,
)
ROWS = st.lists(
    st.tuples(
        st.one_of(st.none(), INTS),
        st.one_of(st.none(), FLOATS, st.just(float("nan")), st.just(-0.0)),
        st.one_of(st.none(), STRINGS),
    ),
    min_size=1,
    max_size=120,
)


@dataclass(frozen=True)
class DeleteIntValues:
    """An equality delete set on column ``i`` (the shape the deletes package hands the reader)."""

    deleted_values: frozenset[int]

    @property
    def field_ids(self) -> frozenset[int]:
        return frozenset((1,))

    @property
    def kind(self) -> PredicateKind:
        return PredicateKind.EQUALITY_DELETE

    @property
    def cache_identity(self) -> tuple[object, ...]:
        return ("ints", self.deleted_values)

    def keep_mask(self, columns: Mapping[int, pa.Array], num_rows: int) -> np.ndarray:
        deleted = pc.is_in(columns[1], value_set=pa.array(sorted(self.deleted_values), pa.int64()))
        return ~np.asarray(deleted.to_numpy(zero_copy_only=False), dtype=bool)


def _write(path: Path, rows: list[tuple], row_group_size: int, rows_per_page: int, dictionary: bool) -> DataFileSlice:
    columns = list(zip(*rows, strict=True))
    table = pa.table(
        [
            pa.array(range(len(rows)), pa.int64()),
            pa.array(columns[0], pa.int32()),
            pa.array(columns[1], pa.float64()),
            pa.array(columns[2], pa.string()),
        ],
        schema=FILE_SCHEMA,
    )
    pq.write_table(
        table,
        path,
        row_group_size=row_group_size,
        max_rows_per_page=rows_per_page,
        write_page_index=True,
        use_dictionary=dictionary,
        bloom_filter_options={"i": {"ndv": 16}, "s": {"ndv": 16}},
    )
    size = path.stat().st_size
    return DataFileSlice(f"file:{path}", size, len(rows), 0, length=size)


def _read_all(
    data_file: DataFileSlice,
    expression,
    deleted,
    predicates=(),
    output=(4, 1, 2, 3),
    *,
    kind=DeletedPositionsKind.POSITION_DELETES,
    **kwargs,
):
    metrics = ScanMetrics()
    batches = list(
        read_data_file(
            data_file,
            scan_context(READ_SCHEMA, output, expression, **kwargs),
            deleted_positions=deleted_positions(deleted, kind),
            row_predicates=predicates,
            metrics=metrics,
        )
    )
    return batches, metrics


def _comparable(value):
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=ROWS,
    filter_tree=FILTERS,
    data=st.data(),
    layout=st.tuples(st.integers(3, 50), st.integers(1, 8), st.booleans()),  # row group size, rows per page, dictionary
)
def test_rows_match_the_oracle_exactly(tmp_path: Path, rows, filter_tree, data, layout) -> None:
    # Every example writes the same path: two files with the same footer bytes would share remembered rejections.
    FOOTER_CACHE.clear()
    rejected_rows_cache().clear()
    data_file = _write(tmp_path / "p.parquet", rows, *layout)
    deleted = np.array(sorted(data.draw(st.sets(st.integers(0, len(rows) - 1)))), dtype=np.int64)
    deleted_values = data.draw(st.frozensets(INTS, max_size=2))
    predicates = (DeleteIntValues(deleted_values),) if deleted_values else ()

    batches, metrics = _read_all(data_file, _expression(filter_tree), deleted, predicates, batch_size=17)

    pushed = _push_not(filter_tree)
    deleted_set = set(deleted.tolist())
    expected = [
        (position, i, _comparable(f), s)
        for position, (i, f, s) in enumerate(rows)
        if position not in deleted_set and i not in deleted_values and _oracle(pushed, {"i": i, "f": f, "s": s})
    ]
    actual = [(row["pos"], row["i"], _comparable(row["f"]), row["s"]) for batch in batches for row in batch.to_pylist()]
    assert actual == expected
    assert all(batch.num_rows <= 17 for batch in batches)
    assert metrics.rows_out == len(expected)
    assert metrics.rows_deleted_by_position_deletes <= len(deleted)


def test_counts_without_a_filter_are_exact(tmp_path: Path) -> None:
    rows = [(i % 5, float(i), str(i)) for i in range(100)]
    data_file = _write(tmp_path / "c.parquet", rows, 30, 10, True)
    deleted = np.array([0, 1, 2, 31, 99], dtype=np.int64)
    batches, metrics = _read_all(data_file, None, deleted, (DeleteIntValues(frozenset({0})),))
    positions = [position for batch in batches for position in batch.column(0).to_pylist()]
    assert positions == [p for p in range(100) if p not in {0, 1, 2, 31, 99} and p % 5 != 0]
    assert metrics.rows_deleted_by_position_deletes == 5
    # Position 0 is both position- and equality-deleted: counted once, as a position delete.
    assert metrics.rows_deleted_by_equality_deletes == 20 - 1
    _, dv_metrics = _read_all(data_file, None, deleted, kind=DeletedPositionsKind.DELETION_VECTOR)
    assert dv_metrics.rows_deleted_by_deletion_vectors == 5
    assert dv_metrics.rows_deleted_by_position_deletes == 0


def test_fully_deleted_row_group_is_never_read(tmp_path: Path) -> None:
    rows = [(1, 1.0, "x")] * 40
    data_file = _write(tmp_path / "d.parquet", rows, 20, 5, False)
    batches, metrics = _read_all(data_file, None, np.arange(20, dtype=np.int64))
    assert sum(batch.num_rows for batch in batches) == 20
    assert metrics.rows_read == 20
    assert metrics.rows_deleted_by_position_deletes == 20


def test_late_materialization_skips_output_columns_when_nothing_survives(tmp_path: Path) -> None:
    # f spreads over [0, 1) in every page, so metadata cannot rule out f = 0.123456; no row holds it.
    random_text = np.random.default_rng(1)
    rows = [(i % 3, (i * 0.37) % 1.0, random_text.bytes(60).hex()) for i in range(300)]
    data_file = _write(tmp_path / "l.parquet", rows, 100, 10, False)
    _read_all(data_file, None, None)  # warm the footer cache so that bytes_read counts column data only
    _, metrics_no_match = _read_all(data_file, EqualTo("i", 1) & EqualTo("f", 0.123456), None)
    _, metrics_all = _read_all(data_file, NotNull("i"), None)
    pruned = metrics_no_match.rows_pruned_by_late_materialization + metrics_no_match.rows_pruned_by_page_index
    assert metrics_no_match.rows_pruned_by_late_materialization > 200
    assert pruned == 300
    assert metrics_no_match.rows_out == 0
    assert metrics_no_match.bytes_read < metrics_all.bytes_read / 2  # the string column was never read


def test_the_pos_metadata_column_is_each_surviving_rows_position_in_the_file(tmp_path: Path) -> None:
    rows = [(i % 7, float(i), f"v{i % 3}") for i in range(300)]
    whole = _write(tmp_path / "p.parquet", rows, 40, 10, True)
    schema = Schema(*READ_SCHEMA.fields, ROW_POSITION)
    deleted = np.array([0, 5, 41, 299], dtype=np.int64)
    metadata = pq.read_metadata(whole.path.removeprefix("file:"))
    second_slice_start = row_group_start_offset(metadata.row_group(3))
    for data_file, expression in [
        (whole, None),
        (whole, EqualTo("i", 3) & NotEqualTo("s", "v1")),  # late materialization decides per row group
        (DataFileSlice(whole.path, whole.file_size_in_bytes, 300, 0, start=second_slice_start, length=10**9), None),
    ]:
        batches = read_data_file(
            data_file,
            scan_context(schema, [ROW_POSITION.field_id, 4], expression),
            deleted_positions=deleted_positions(deleted),
            metrics=ScanMetrics(),
        )
        out = [(row["_pos"], row["pos"]) for batch in batches for row in batch.to_pylist()]
        assert out and all(position == physical for position, physical in out)
        assert not {position for position, _ in out} & set(deleted.tolist())


def test_slices_partition_the_row_groups(tmp_path: Path) -> None:
    rows = [(i % 7, float(i), f"v{i}") for i in range(200)]
    whole = _write(tmp_path / "s.parquet", rows, 30, 10, True)
    metadata = pq.read_metadata(whole.path.removeprefix("file:"))
    starts = [row_group_start_offset(metadata.row_group(index)) for index in range(metadata.num_row_groups)]
    boundaries = [0, starts[2], starts[5], whole.file_size_in_bytes]
    positions = []
    total_pruned_by_range = 0
    for start, end in itertools.pairwise(boundaries):
        part = DataFileSlice(whole.path, whole.file_size_in_bytes, 200, 0, start=start, length=end - start)
        batches, metrics = _read_all(part, GreaterThan("i", 2), None)
        positions += [position for batch in batches for position in batch.column(0).to_pylist()]
        total_pruned_by_range += metrics.row_groups_pruned_by_range
    assert positions == [p for p in range(200) if p % 7 > 2]
    assert total_pruned_by_range == 2 * metadata.num_row_groups


def test_identity_partition_constants_come_from_metadata(tmp_path: Path) -> None:
    rows = [(9, float(i), "from-file") for i in range(10)]
    base = _write(tmp_path / "k.parquet", rows, 5, 5, True)
    data_file = DataFileSlice(base.path, base.file_size_in_bytes, 10, 0, partition_constants={3: "from-metadata", 1: 4})
    batches, _ = _read_all(data_file, EqualTo("s", "from-metadata") & EqualTo("i", 4), None)
    table = pa.Table.from_batches(batches)
    assert table.column("s").to_pylist() == ["from-metadata"] * 10
    assert table.column("i").to_pylist() == [4] * 10
    assert table.schema.field("i").type == pa.int64()
    _, nothing = _read_all(data_file, EqualTo("s", "from-file"), None)
    assert nothing.rows_out == 0


def test_plain_path_matches_a_plain_pyarrow_read(tmp_path: Path) -> None:
    rows = [(i % 4, float(i), f"v{i}") for i in range(100)]
    data_file = _write(tmp_path / "plain.parquet", rows, 33, 10, True)
    batches, metrics = _read_all(data_file, AlwaysTrue(), None, output=(3, 4))
    table = pa.Table.from_batches(batches)
    plain = pq.read_table(data_file.path.removeprefix("file:"), columns=["s", "pos"])
    assert table.column_names == ["s", "pos"]
    assert table.column("s").to_pylist() == plain.column("s").to_pylist()
    assert metrics.rows_read == 100 and metrics.rows_out == 100
    assert metrics.footer_cache_hits == 0
    _, again = _read_all(data_file, AlwaysTrue(), None, output=(3,))
    assert again.footer_cache_hits == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, data=st.data(), row_group_size=st.integers(2, 30), batch_size=st.integers(1, 40))
def test_plain_path_with_deletes_keeps_order_across_read_ahead(tmp_path: Path, rows, data, row_group_size, batch_size):
    FOOTER_CACHE.clear()
    data_file = _write(tmp_path / "r.parquet", rows, row_group_size, 4, True)
    deleted = np.array(sorted(data.draw(st.sets(st.integers(0, len(rows) - 1)))), dtype=np.int64)
    # 1 byte: every row group is a unit of its own, decoded ahead on threads; else runs of row groups.
    run_bytes = data.draw(st.sampled_from([1, 10**9]))
    with _run_max_compressed_bytes(run_bytes):
        batches, metrics = _read_all(data_file, None, deleted, output=(4, 3), batch_size=batch_size)
    expected = [(p, s) for p, (_, _, s) in enumerate(rows) if p not in set(deleted.tolist())]
    assert [(row["pos"], row["s"]) for batch in batches for row in batch.to_pylist()] == expected
    assert all(batch.num_rows <= batch_size for batch in batches)
    assert metrics.rows_deleted_by_position_deletes == len(deleted)
    assert metrics.rows_out == len(expected)


@contextlib.contextmanager
def _run_max_compressed_bytes(value: int) -> Iterator[None]:
    saved = opener.RUN_MAX_COMPRESSED_BYTES
    opener.RUN_MAX_COMPRESSED_BYTES = value
    try:
        yield
    finally:
        opener.RUN_MAX_COMPRESSED_BYTES = saved


def _count_decoding_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Record the row groups of every ``read_row_groups`` call (real reads still happen)."""
    calls: list[list[int]] = []
    real = pq.ParquetFile.read_row_groups

    def recording(self, row_groups, *args, **kwargs):
        calls.append(list(row_groups))
        return real(self, row_groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", recording)
    return calls


def test_row_groups_without_filter_conjuncts_decode_in_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [(i % 4, float(i), f"v{i}") for i in range(100)]
    data_file = _write(tmp_path / "runs.parquet", rows, 10, 5, True)
    calls = _count_decoding_calls(monkeypatch)
    deleted = np.array([3, 45, 99], dtype=np.int64)

    batches, metrics = _read_all(data_file, None, deleted, (DeleteIntValues(frozenset({2})),))

    assert calls == [list(range(10))]  # deletes of every kind, one call for all ten row groups
    positions = [position for batch in batches for position in batch.column(0).to_pylist()]
    assert positions == [p for p in range(100) if p not in {3, 45, 99} and p % 4 != 2]
    assert metrics.rows_read == 100

    calls.clear()
    with _run_max_compressed_bytes(1):
        again, _ = _read_all(data_file, None, deleted, (DeleteIntValues(frozenset({2})),))
    assert sorted(calls) == [[index] for index in range(10)]  # decoded ahead on threads, in any order
    assert pa.Table.from_batches(again).equals(pa.Table.from_batches(batches))

    calls.clear()
    # i != 1 holds for no whole row group (each spans 0..3): late materialization, row group by row group.
    _read_all(data_file, NotEqualTo("i", 1), None)
    assert [call for call in calls if len(call) > 1] == []
    assert {index for call in calls for index in call} == set(range(10))

    calls.clear()
    # s != 'v7' is proven by the statistics of every row group but the first: those nine decode as one run.
    _read_all(data_file, NotEqualTo("s", "v7"), None)
    assert list(range(1, 10)) in calls


def _positions(batches: list[pa.RecordBatch]) -> list[int]:
    return [position for batch in batches for position in batch.column(0).to_pylist()]


def test_equality_delete_rejections_are_remembered_and_the_key_column_is_not_decoded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [(i % 4, float(i), f"v{i}") for i in range(100)]
    data_file = _write(tmp_path / "remembered.parquet", rows, 10, 5, True)
    deleted = np.array([3, 45, 99], dtype=np.int64)
    equality_deletes = (DeleteIntValues(frozenset({2})),)
    expected = [p for p in range(100) if p not in {3, 45, 99} and p % 4 != 2]
    decoded_columns: list[list[str]] = []
    real = pq.ParquetFile.read_row_groups

    def recording(self, row_groups, columns=None, *args, **kwargs):
        decoded_columns.append(list(columns or []))
        return real(self, row_groups, columns, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", recording)

    first, first_metrics = _read_all(data_file, None, deleted, equality_deletes, output=(4, 3))
    assert any("i" in columns for columns in decoded_columns)
    decoded_columns.clear()
    again, again_metrics = _read_all(data_file, None, deleted, equality_deletes, output=(4, 3))

    assert _positions(first) == _positions(again) == expected
    assert not any("i" in columns for columns in decoded_columns)  # applied as positions: the key is not read
    assert first_metrics.row_groups_with_remembered_rejections == 0
    assert again_metrics.row_groups_with_remembered_rejections == 10
    assert again_metrics.rows_deleted_by_equality_deletes == first_metrics.rows_deleted_by_equality_deletes == 25
    assert again_metrics.rows_deleted_by_position_deletes == first_metrics.rows_deleted_by_position_deletes == 3

    # Another delete set (other values) is not answered by the first one's memory.
    other, other_metrics = _read_all(data_file, None, None, (DeleteIntValues(frozenset({1})),), output=(4, 3))
    assert _positions(other) == [p for p in range(100) if p % 4 != 1]
    assert other_metrics.row_groups_with_remembered_rejections == 0


def test_rejections_remembered_for_some_row_groups_combine_with_evaluated_ones(tmp_path: Path) -> None:
    rows = [(i % 3, float(i), f"v{i}") for i in range(120)]
    data_file = _write(tmp_path / "partial.parquet", rows, 10, 5, True)
    equality_deletes = (DeleteIntValues(frozenset({0})),)

    # The filter prunes row groups 0-5 by statistics: only 6-11 are evaluated, and remembered.
    filtered, _ = _read_all(data_file, GreaterThanOrEqual("pos", 60), None, equality_deletes)
    assert _positions(filtered) == [p for p in range(60, 120) if p % 3 != 0]

    whole, metrics = _read_all(data_file, None, np.array([61, 62], dtype=np.int64), equality_deletes)
    assert _positions(whole) == [p for p in range(120) if p % 3 != 0 and p not in {61, 62}]
    assert metrics.row_groups_with_remembered_rejections == 6
    assert metrics.rows_deleted_by_equality_deletes == 40
    assert metrics.rows_deleted_by_position_deletes == 2


def test_a_keepable_predicate_runs_on_whole_columns_even_when_few_rows_are_alive(tmp_path: Path) -> None:
    rows = [(i % 3, float(i), f"v{i}") for i in range(40)]
    data_file = _write(tmp_path / "few_alive.parquet", rows, 40, 10, False)
    equality_deletes = (DeleteIntValues(frozenset({0})),)

    # The page index keeps one page of four: a quarter of the row group is alive when the delete set runs.
    filtered, filtered_metrics = _read_all(data_file, GreaterThanOrEqual("pos", 35), None, equality_deletes)
    assert filtered_metrics.rows_pruned_by_page_index == 30
    assert _positions(filtered) == [p for p in range(35, 40) if p % 3 != 0]
    assert filtered_metrics.rows_deleted_by_equality_deletes == 4  # among the alive rows only: 30, 33, 36, 39

    whole, metrics = _read_all(data_file, None, None, equality_deletes)
    assert metrics.row_groups_with_remembered_rejections == 1
    assert _positions(whole) == [p for p in range(40) if p % 3 != 0]
    assert metrics.rows_deleted_by_equality_deletes == 14


def test_a_consumer_stopping_early_closes_cleanly(tmp_path: Path) -> None:
    rows = [(i % 4, float(i), f"v{i}") for i in range(400)]
    data_file = _write(tmp_path / "early.parquet", rows, 20, 10, True)
    metrics = ScanMetrics()
    batches = read_data_file(
        data_file,
        scan_context(READ_SCHEMA, [4], batch_size=7),
        deleted_positions=deleted_positions(np.array([3], dtype=np.int64)),
        metrics=metrics,
    )
    first = next(batches)
    batches.close()
    assert first.column(0).to_pylist() == [0, 1, 2, 4, 5, 6, 7]
    assert metrics.rows_out < 400


def test_filter_on_a_struct_child_prunes_and_respects_null_parents(tmp_path: Path) -> None:
    from pyiceberg.types import StructType

    point_type = pa.struct([_field("x", pa.int64(), 11), _field("y", pa.int64(), 12)])
    points = [None if i % 10 == 0 else {"x": i, "y": -i} for i in range(100)]
    path = tmp_path / "nested.parquet"
    pq.write_table(
        pa.table([pa.array(range(100)), pa.array(points, point_type)], schema=pa.schema([
            _field("id", pa.int64(), 1), _field("point", point_type, 10)
        ])),
        path,
        row_group_size=25,
    )  # fmt: skip
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(
            10,
            "point",
            StructType(
                NestedField(11, "x", LongType(), required=False), NestedField(12, "y", LongType(), required=False)
            ),
            required=False,
        ),
    )
    data_file = DataFileSlice(f"file:{path}", path.stat().st_size, 100, 0)
    for expression, expected in [
        (GreaterThanOrEqual("point.x", 60), [i for i in range(60, 100) if i % 10]),
        (IsNull("point.y"), list(range(0, 100, 10))),
        (Or(LessThan("point.x", 3), EqualTo("id", 50)), [1, 2, 50]),
    ]:
        metrics = ScanMetrics()
        batches = read_data_file(data_file, scan_context(schema, [1], expression), metrics=metrics)
        assert [value for batch in batches for value in batch.column(0).to_pylist()] == expected, expression
        if expression == GreaterThanOrEqual("point.x", 60):
            assert metrics.row_groups_pruned_by_statistics == 2


def test_predicates_on_the_sort_column_run_first(tmp_path: Path) -> None:
    # k (sorted, wide) cannot be ruled out by metadata but matches nothing; i (cheap) matches all rows but one.
    keys = [f"key-{i:05d}-" + "x" * 60 for i in range(0, 400, 2)]
    table = pa.table(
        [pa.array(keys), pa.array(range(200), pa.int64())],
        schema=pa.schema([_field("k", pa.string(), 3), _field("i", pa.int64(), 1)]),
    )
    path = tmp_path / "sorted.parquet"
    schema = Schema(NestedField(3, "k", StringType(), required=False), NestedField(1, "i", LongType(), required=False))
    expression = And(EqualTo("k", "key-00101-" + "x" * 60), NotEqualTo("i", 77))

    def column_bytes_read(sorting_columns) -> int:
        pq.write_table(table, path, sorting_columns=sorting_columns, use_dictionary=False)
        FOOTER_CACHE.clear()
        data_file = DataFileSlice(f"file:{path}", path.stat().st_size, 200, 0)
        metrics = ScanMetrics()
        for _ in range(2):  # the second read finds the footer cached: it counts column bytes only
            metrics = ScanMetrics()
            batches = read_data_file(data_file, scan_context(schema, [3], expression), metrics=metrics)
            assert list(batches) == []
        return metrics.bytes_read

    unsorted = column_bytes_read(None)
    sorted_first = column_bytes_read([pq.SortingColumn(0)])
    i_bytes = pq.read_metadata(path).row_group(0).column(1).total_compressed_size
    assert unsorted - sorted_first == i_bytes  # sorted on k: k goes first, nothing survives, i is never read


def test_python_file_objects_take_the_single_threaded_path(tmp_path: Path) -> None:
    from pyiceberg.io.fsspec import FsspecFileIO

    rows = [(i % 4, float(i), f"v{i % 10}") for i in range(300)]
    data_file = _write(tmp_path / "fsspec.parquet", rows, 50, 10, True)
    expected = [p for p, (_, _, s) in enumerate(rows) if s == "v3" and p not in (3, 13)]
    for expression in (None, EqualTo("s", "v3")):
        metrics = ScanMetrics()
        context = scan_context(READ_SCHEMA, [4, 3], expression, io_properties=FSSPEC_IO)
        assert isinstance(context.io, FsspecFileIO)
        batches = read_data_file(
            data_file, context, deleted_positions=deleted_positions(np.array([3, 13], dtype=np.int64)), metrics=metrics
        )
        rows_out = [row for batch in batches for row in batch.to_pylist()]
        if expression is None:
            assert [row["pos"] for row in rows_out] == [p for p in range(300) if p not in (3, 13)]
        else:
            assert [row["pos"] for row in rows_out] == expected


def test_files_with_one_arrow_schema_and_two_physical_types_prune_by_their_own(tmp_path: Path) -> None:
    # A decimal stored as INT32 in one file and as FIXED_LEN_BYTE_ARRAY in another has the same Arrow schema in both:
    # each file's statistics must still be decoded by its own physical type.
    decimal_type = pa.decimal128(9, 2)
    schema = pa.schema([_field("d", decimal_type, 1)])
    read_schema = Schema(NestedField(1, "d", DecimalType(9, 2), required=False))
    values = [Decimal(f"{i}.25") for i in range(40)]
    expected = [Decimal("33.25")]
    for name, as_integer in (("int32.parquet", True), ("fixed.parquet", False)):
        path = tmp_path / name
        pq.write_table(
            pa.table([pa.array(values, decimal_type)], schema=schema),
            path,
            row_group_size=10,
            max_rows_per_page=5,
            write_page_index=True,
            bloom_filter_options={"d": {"ndv": 16}},
            store_decimal_as_integer=as_integer,
        )
        size = path.stat().st_size
        data_file = DataFileSlice(f"file:{path}", size, len(values), 0, length=size)
        context = scan_context(read_schema, (1,), EqualTo("d", Decimal("33.25")))
        metrics = ScanMetrics()
        batches = list(read_data_file(data_file, context, deleted_positions=deleted_positions(None), metrics=metrics))
        assert [value for batch in batches for value in batch.column(0).to_pylist()] == expected, name
        assert metrics.row_groups_pruned_by_statistics + metrics.row_groups_pruned_by_bloom_filter == 3, name
