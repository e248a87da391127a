"""Rewrite tasks: packing a group into about one task per output file, and a task's rows with its deletes folded in."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table.snapshots import Operation

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.rewrite_tasks import plan_rewrite_tasks, rewrite_contexts
from spark_jobs.engine.compaction.strategy import resolve_strategy
from spark_jobs.engine.planning.scan_context import with_row_lineage
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data
from tests.support.conformance import table_checksum
from tests.support.corpus_copies import register_corpus_copy
from tests.support.live_deletes import live_row_lineage
from tests.support.rewrite_tables import (
    SCHEMA,
    SPEC,
    append,
    equality_delete_change,
    position_delete_change,
    read_rows,
    rewrite_locally,
    rows,
    shuffle_rewrite_locally,
)

MIB = 1024 * 1024


def test_a_group_is_packed_into_about_one_task_per_expected_output_file(sql_catalog, tmp_path):
    table = register_corpus_copy(sql_catalog, "small_files", tmp_path)
    options = RewriteOptions.resolve(table.properties, target_file_size_bytes=MIB, max_file_group_size_bytes=4 * MIB)
    plan = plan_rewrite(table, table.current_snapshot(), options)
    tasks = plan_rewrite_tasks(table, plan.groups)
    for group in plan.groups:
        of_group = [task for task in tasks if task.group_index == group.global_index]
        assert len(of_group) == group.expected_output_files
        assert all(task.input_bytes <= group.input_split_size for task in of_group)
        read = sorted(s.path for task in of_group for s in task.slices)
        assert read == sorted(candidate.path for candidate in group.files)  # every file once, no other group's
    assert [task.task_index for task in tasks if task.group_index == 1] == list(
        range(plan.groups[0].expected_output_files)
    )


def test_rewritten_files_hold_the_surviving_rows_with_deletes_folded_in(events):
    commit_change(events, position_delete_change(events, {0, 1, 41, 42}, "pos"))
    commit_change(events, equality_delete_change(events, {"a": [80, 81], "b": [100]}, "eq"))
    before = read_rows(events)
    plan = _plan(events)
    assert [len(group.files) for group in plan.groups] == [6, 6]
    rewrites = rewrite_locally(events, plan)
    written = [item for rewrite in rewrites for item in rewrite.written]
    assert len(written) == 2 and {tuple(item["partition_values"]) for item in written} == {("a",), ("b",)}
    rewritten = [pq.read_table(item["file_path"].removeprefix("file://")) for item in written]
    assert sum(item["record_count"] for item in written) == before.num_rows == 240 - 7
    ids = sorted(i for data in rewritten for i in data.column("id").to_pylist())
    assert ids == sorted(before.column("id").to_pylist()) and not {0, 1, 41, 42, 80, 81, 100} & set(ids)
    together = pa.concat_tables(rewritten).select(before.column_names)
    assert table_checksum(together, before.column_names) == table_checksum(before, before.column_names)


def test_the_writer_rolls_at_the_plans_max_file_size(events):
    plan = _plan(events)
    contexts = rewrite_contexts(events, plan, plan_rewrite_tasks(events, plan.groups))
    assert contexts.write.properties["write.target-file-size-bytes"] == str(plan.write_max_file_size)
    assert [field.name for field in contexts.scan.read_schema.fields] == ["id", "category"]


def _plan(table):
    options = RewriteOptions.resolve(table.properties, min_input_files=2)
    return plan_rewrite(table, table.current_snapshot(), options)


def test_rewritten_files_follow_the_tables_sort_order(events):
    from pyiceberg.table.sorting import NullOrder
    from pyiceberg.transforms import IdentityTransform

    with events.update_sort_order() as update:
        update.desc("id", IdentityTransform(), NullOrder.NULLS_LAST)
    order_id = events.sort_order().order_id
    written = [item for rewrite in rewrite_locally(events, _plan(events)) for item in rewrite.written]
    assert written and all(item["sort_order_id"] == order_id != 0 for item in written)
    for item in written:
        ids = pq.read_table(item["file_path"].removeprefix("file://")).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True) and len(ids) == 120


@pytest.mark.parametrize("sort_order", [None, "id desc"])
def test_rewritten_rows_of_a_v3_table_keep_their_row_ids_and_sequence_numbers(sql_catalog, sort_order):
    """Rows a bin-pack or sort rewrite moves keep their lineage: the value a file stores, else the inherited one
    (first row id + position, the file's data sequence number), as Iceberg Java's rewrite keeps them."""
    allow_v3_metadata_writes()
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.lineage", SCHEMA, partition_spec=SPEC, properties={"format-version": "3"})
    append(table, rows(list(range(20)), "a"), "first")
    append(table, rows(list(range(20, 35)), "a"), "second")
    # rows another engine updated: each stores a row id and sequence number, or null for the inherited one
    stored = rows(list(range(35, 45)), "a").append_column(
        "_row_id", pa.array([None if i % 3 == 0 else 900 + i for i in range(10)], pa.int64())
    )
    stored = stored.append_column("_last_updated_sequence_number", pa.array([1 if i % 2 else None for i in range(10)]))
    with_lineage = WriteContext.for_table(table, with_row_lineage(table.schema()))
    files = [to_data_file(item) for item in write_data(stored, with_lineage, "stored")]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    table = sql_catalog.load_table("ns.lineage")
    expected = live_row_lineage(table)
    assert expected[36] == (901, 1) and expected[35][1] == expected[0][1] + 2 and len(expected) == 45

    if sort_order is None:
        rewrites = rewrite_locally(table, _plan(table))
    else:
        options = RewriteOptions.resolve({}, rewrite_all=True)
        strategy = resolve_strategy(table, "sort", sort_order)
        rewrites = shuffle_rewrite_locally(
            table, plan_rewrite(table, table.current_snapshot(), options, strategy=strategy)
        )
    written = [pq.read_table(item["file_path"].removeprefix("file://")) for r in rewrites for item in r.written]
    got = {
        i: (row_id, sequence)
        for data in written
        for i, row_id, sequence in zip(
            *(data.column(c).to_pylist() for c in ("id", "_row_id", "_last_updated_sequence_number")), strict=True
        )
    }
    assert got == expected
