"""count(*) plans from metadata: the manifest list alone without deletes, manifest entries with them, and exactly
the data files some delete applies to left to scan."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.table import Table

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.planning.row_count import MANIFEST_ENTRIES, MANIFEST_LIST, CountPlan, plan_count
from tests.support.rewrite_tables import (
    SCHEMA,
    SPEC,
    append,
    equality_delete_change,
    live_data_files,
    position_delete_change,
    rows,
)


def _table(sql_catalog) -> Table:
    """Partitioned by category: four one-file appends of 20 rows, a b a b (ids 0..79)."""
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.events", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    for index in range(4):
        append(table, rows(list(range(index * 20, (index + 1) * 20)), "ab"[index % 2]), f"a{index}")
    return table


def _file_holding(table: Table, row_id: int) -> str:
    """The live data file that holds the row with ``row_id``."""
    (path,) = [
        data_file.file_path
        for data_file in live_data_files(table)
        if row_id in pq.read_table(data_file.file_path.removeprefix("file://")).column("id").to_pylist()
    ]
    return path


def test_a_table_without_snapshots_counts_zero_from_nothing(sql_catalog) -> None:
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.empty", SCHEMA)
    plan = plan_count(table, table.current_snapshot())
    assert plan == CountPlan(0, 0, frozenset(), MANIFEST_LIST, 0)
    assert plan.answered_from_metadata


def test_without_deletes_the_manifest_list_answers_without_opening_a_manifest(sql_catalog) -> None:
    table = _table(sql_catalog)
    plan = plan_count(table, table.current_snapshot())
    assert (plan.metadata_rows, plan.metadata_files, plan.source, plan.manifests_read) == (80, 4, MANIFEST_LIST, 0)
    assert plan.answered_from_metadata
    assert plan.counters() == {
        "count_from_metadata": True,
        "count_source": MANIFEST_LIST,
        "data_files_counted_from_metadata": 4,
        "rows_counted_from_metadata": 80,
        "data_files_scanned_for_count": 0,
        "manifests_read_for_count": 0,
    }


def test_an_older_snapshot_is_counted_from_its_own_manifest_list(sql_catalog) -> None:
    table = _table(sql_catalog)
    second = table.history()[1].snapshot_id
    plan = plan_count(table, table.snapshot_by_id(second))
    assert (plan.metadata_rows, plan.metadata_files) == (40, 2)


def test_only_the_files_a_position_delete_applies_to_are_left_to_scan(sql_catalog) -> None:
    table = _table(sql_catalog)
    commit_change(table, position_delete_change(table, {3, 45}, "p"))  # ids 3 and 45: the first and third files
    plan = plan_count(table, table.current_snapshot())
    assert plan.source == MANIFEST_ENTRIES and not plan.answered_from_metadata
    assert plan.files_to_scan == {_file_holding(table, 3), _file_holding(table, 45)}
    assert (plan.metadata_rows, plan.metadata_files) == (40, 2)
    assert plan.manifests_read >= 5  # four data manifests and the delete manifest
    assert plan.counters()["data_files_scanned_for_count"] == 2


def test_an_equality_delete_leaves_only_the_files_its_partition_and_bounds_may_touch(sql_catalog) -> None:
    table = _table(sql_catalog)
    commit_change(table, equality_delete_change(table, {"b": [25]}, "e"))  # partition b, id 25: the second file
    plan = plan_count(table, table.current_snapshot())
    assert plan.files_to_scan == {_file_holding(table, 25)}
    assert (plan.metadata_rows, plan.metadata_files) == (60, 3)


def test_rows_appended_after_a_delete_are_not_affected_by_it(sql_catalog) -> None:
    """A data file newer than a delete file (higher sequence number) is counted from its record_count."""
    table = _table(sql_catalog)
    commit_change(table, position_delete_change(table, {0}, "p"))
    append(table, pa.table({"id": pa.array([100, 101], pa.int64()), "category": ["a", "a"]}), "late")
    plan = plan_count(table, table.current_snapshot())
    assert plan.files_to_scan == {_file_holding(table, 0)}
    assert (plan.metadata_rows, plan.metadata_files) == (62, 4)
