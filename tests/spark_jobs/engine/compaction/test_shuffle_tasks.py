"""Sort and z-order rewrites run in-process: every output file sorted, outputs over disjoint key ranges, rows kept."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.sorting import NullOrder, SortDirection
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.rewrite_commit import commit_group_rewrites
from spark_jobs.engine.compaction.strategy import resolve_strategy
from spark_jobs.engine.table.manifest_entries import read_live_entries
from tests.support.rewrite_tables import (
    append,
    ids_and_checksum,
    position_delete_change,
    read_rows,
    shuffle_rewrite_locally,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "k", LongType(), required=False),
    NestedField(3, "name", StringType(), required=False),
    NestedField(4, "score", DoubleType(), required=False),
)
FILES, ROWS_PER_FILE = 6, 400


@pytest.fixture
def unsorted(sql_catalog) -> Table:
    """Six appends of 400 rows each with k drawn at random (nulls and NaN scores included), ids 0..2399."""
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.unsorted", SCHEMA, properties={"format-version": "2"})
    rng = np.random.default_rng(5)
    for index in range(FILES):
        ids = np.arange(index * ROWS_PER_FILE, (index + 1) * ROWS_PER_FILE)
        k = rng.integers(-1000, 1000, ROWS_PER_FILE)
        scores = rng.random(ROWS_PER_FILE)
        scores[::37] = np.nan
        rows = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "k": pa.array([None if i % 53 == 0 else int(v) for i, v in zip(ids, k, strict=True)], pa.int64()),
                "name": pa.array([f"n{v % 97:03d}" for v in ids]),
                "score": pa.array([None if i % 41 == 0 else s for i, s in zip(ids, scores, strict=True)], pa.float64()),
            }
        )
        append(table, rows, f"u{index}")
    return table


def _rewrite(table: Table, sort_order: str | None, **strategy_options):
    size = sum(entry.data_file.file_size_in_bytes for entry in _live_data(table))
    options = RewriteOptions.resolve({}, target_file_size_bytes=size // 4, rewrite_all=True)
    strategy = resolve_strategy(table, "sort", sort_order, **strategy_options)
    plan = plan_rewrite(table, table.current_snapshot(), options, strategy=strategy)
    rewrites = shuffle_rewrite_locally(table, plan)
    result, _ = commit_group_rewrites(table, plan, rewrites)
    return plan, result


def _live_data(table: Table) -> list:
    table = table.catalog.load_table(table.name())
    return [
        entry
        for manifest in table.current_snapshot().manifests(table.io)
        if manifest.content == 0
        for entry in read_live_entries(manifest, table.io)
    ]


def _files_in_write_order(table: Table, snapshot_id: int) -> list:
    entries = [entry for entry in _live_data(table) if entry.snapshot_id == snapshot_id]
    return sorted(entries, key=lambda entry: entry.data_file.file_path)


def _spark_sorted(values: list, descending: bool, nulls_first: bool) -> list:
    """Spark's order of numbers with nulls and NaN: NaN above every number."""
    nulls = [v for v in values if v is None]
    nans = [v for v in values if v is not None and math.isnan(v)]
    numbers = sorted((v for v in values if v is not None and not math.isnan(v)), reverse=descending)
    ordered = (nans + numbers) if descending else (numbers + nans)
    return nulls + ordered if nulls_first else ordered + nulls


def test_sort_writes_sorted_files_over_disjoint_ranges_and_keeps_every_row(unsorted):
    before = ids_and_checksum(unsorted)
    plan, result = _rewrite(unsorted, "k desc nulls last, id")
    assert plan.groups[0].expected_output_files == 4 and plan.strategy.output_sort_order_id == 0
    assert ids_and_checksum(unsorted) == before
    files = _files_in_write_order(unsorted, result.snapshot_id)
    assert len(files) >= 3  # a range per output; equal keys share one
    previous_last = None
    for entry in files:
        rows = pq.read_table(entry.data_file.file_path.removeprefix("file://"), columns=["k", "id"]).to_pylist()
        keys = [(r["k"], r["id"]) for r in rows]
        expected = sorted(keys, key=lambda key: (key[0] is None, -(key[0] or 0), key[1]))
        assert keys == expected  # each file sorted: k descending, nulls last, then id
        if previous_last is not None:  # the next output's first key sorts after this one's last: disjoint ranges
            assert sorted([previous_last, keys[0]], key=lambda key: (key[0] is None, -(key[0] or 0), key[1])) == [
                previous_last,
                keys[0],
            ]
            assert previous_last != keys[0]
        previous_last = keys[-1]


def test_sort_on_a_double_places_nulls_and_nan_as_spark_does(unsorted):
    _, result = _rewrite(unsorted, "score desc nulls first")
    values = []
    for entry in _files_in_write_order(unsorted, result.snapshot_id):
        values += (
            pq.read_table(entry.data_file.file_path.removeprefix("file://"), columns=["score"]).column(0).to_pylist()
        )
    assert [repr(v) for v in values] == [repr(v) for v in _spark_sorted(values, descending=True, nulls_first=True)]


def test_sort_by_the_tables_own_order_marks_files_with_its_id(unsorted):
    with unsorted.update_sort_order() as update:
        update.asc("name", IdentityTransform(), NullOrder.NULLS_FIRST)
    unsorted = unsorted.catalog.load_table(unsorted.name())
    order_id = unsorted.sort_order().order_id
    plan, result = _rewrite(unsorted, None)
    assert plan.strategy.description == "name ASC NULLS FIRST" and plan.strategy.output_sort_order_id == order_id
    files = _files_in_write_order(unsorted, result.snapshot_id)
    assert {entry.data_file.sort_order_id for entry in files} == {order_id}
    names = [
        pq.read_table(e.data_file.file_path.removeprefix("file://"), columns=["name"]).column(0).to_pylist()
        for e in files
    ]
    assert [n for file_names in names for n in file_names] == sorted(n for file_names in names for n in file_names)


def test_zorder_orders_rows_by_the_interleaved_key_and_keeps_rows(unsorted):
    before = ids_and_checksum(unsorted)
    plan, result = _rewrite(unsorted, "zorder(k, id)")
    assert plan.strategy.name == "zorder" and plan.strategy.description == "zorder(k, id)"
    assert ids_and_checksum(unsorted) == before
    keys = plan.strategy.keys
    z_values = []
    for entry in _files_in_write_order(unsorted, result.snapshot_id):
        rows = pq.read_table(entry.data_file.file_path.removeprefix("file://"))
        z_values += keys.key_table(rows).column(0).to_pylist()
    assert z_values == sorted(z_values)


def test_deleted_rows_stay_deleted_through_a_sort_rewrite(unsorted):
    commit_change(unsorted, position_delete_change(unsorted, {3, 500, 1999}, "pos"))
    before = ids_and_checksum(unsorted)
    assert len(before[0]) == FILES * ROWS_PER_FILE - 3
    _rewrite(unsorted, "name desc")
    assert ids_and_checksum(unsorted) == before
    assert read_rows(unsorted).num_rows == FILES * ROWS_PER_FILE - 3


def test_shuffle_partitions_per_file_writes_each_output_from_several_sorted_ranges(unsorted):
    before = ids_and_checksum(unsorted)
    _, result = _rewrite(unsorted, "id", shuffle_partitions_per_file=3)
    assert ids_and_checksum(unsorted) == before
    ids = []
    for entry in _files_in_write_order(unsorted, result.snapshot_id):
        ids += pq.read_table(entry.data_file.file_path.removeprefix("file://"), columns=["id"]).column(0).to_pylist()
    assert ids == sorted(ids) == list(range(FILES * ROWS_PER_FILE))


@pytest.mark.parametrize("direction", [SortDirection.ASC, SortDirection.DESC])
def test_parsed_direction_defaults_follow_spark(direction):
    from spark_jobs.engine.compaction.sort_order_parsing import parse_sort_order_text

    (term,) = parse_sort_order_text(f"k {direction.value}").terms
    assert term.null_order == (NullOrder.NULLS_FIRST if direction == SortDirection.ASC else NullOrder.NULLS_LAST)


# -- concurrency with an upsert, both orders (as bin-pack: the same replace commit and validation) ------------------


def _plan_only(table: Table, sort_order: str):
    options = RewriteOptions.resolve({}, rewrite_all=True)
    return plan_rewrite(table, table.current_snapshot(), options, strategy=resolve_strategy(table, "sort", sort_order))


def _upsert(table: Table, ids: list[int]):
    """Position deletes for ``ids`` and the same ids again with new names (an upsert by id)."""
    from spark_jobs.engine.write.file_entries import to_data_file
    from spark_jobs.engine.write.write_context import WriteContext, write_data

    change = position_delete_change(table, set(ids), "up")
    rows = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array(ids, pa.int64()),
            "name": [f"new-{i}" for i in ids],
            "score": pa.array([0.5] * len(ids)),
        }
    )
    change.added_data_files += [to_data_file(item) for item in write_data(rows, WriteContext.for_table(table), "new")]
    return change


@pytest.mark.parametrize("sort_order", ["k desc", "zorder(k, name)"])
def test_an_upsert_committed_during_a_sort_rewrite_fails_the_rewrite_cleanly(unsorted, sort_order):
    from spark_jobs.engine.commit.producer import CommitConflictError

    plan = _plan_only(unsorted, sort_order)
    rewrites = shuffle_rewrite_locally(unsorted, plan)
    concurrent = unsorted.catalog.load_table(unsorted.name())
    commit_change(concurrent, _upsert(concurrent, [7, 901]))
    expected = ids_and_checksum(concurrent)
    with pytest.raises(CommitConflictError, match="position deletes"):
        commit_group_rewrites(unsorted, plan, rewrites)
    assert ids_and_checksum(unsorted) == expected
    written = [item["file_path"] for rewrite in rewrites for item in rewrite.written]
    assert written and not any(Path(p.removeprefix("file://")).exists() for p in written)


@pytest.mark.parametrize("sort_order", ["k desc", "zorder(k, name)"])
def test_an_upsert_planned_before_a_sort_rewrite_commits_fails_and_succeeds_when_replanned(unsorted, sort_order):
    from spark_jobs.engine.commit.producer import CommitConflictError

    upserter = unsorted.catalog.load_table(unsorted.name())
    stale = _upsert(upserter, [7, 901])  # planned on the files the rewrite replaces
    plan = _plan_only(unsorted, sort_order)
    before = ids_and_checksum(unsorted)
    commit_group_rewrites(unsorted, plan, shuffle_rewrite_locally(unsorted, plan))
    with pytest.raises(CommitConflictError):
        commit_change(upserter, stale)
    assert ids_and_checksum(unsorted) == before
    fresh = unsorted.catalog.load_table(unsorted.name())
    commit_change(fresh, _upsert(fresh, [7, 901]))
    names = read_rows(fresh).filter(pa.compute.is_in(read_rows(fresh).column("id"), pa.array([7, 901]))).column("name")
    assert sorted(names.to_pylist()) == ["new-7", "new-901"]
