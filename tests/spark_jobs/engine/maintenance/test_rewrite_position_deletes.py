"""Position delete rewrite: fewer files per partition, positions of removed data files dropped, rows unchanged."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.producer import CommitConflictError
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.rewrite_commit import commit_group_rewrites
from spark_jobs.engine.maintenance.rewrite_position_deletes import (
    PositionDeleteRewriteOptions,
    plan_position_delete_rewrite,
    rewrite_position_deletes,
)
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.table.manifest_entries import read_live_entries
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_position_delete_rows
from tests.support.corpus_copies import register_corpus_copy
from tests.support.rewrite_tables import (
    build_events,
    ids_and_checksum,
    live_data_files,
    position_delete_change,
    rewrite_locally,
    upsert_change,
)

DEFAULTS = PositionDeleteRewriteOptions.resolve({})


def _delete_entries(table: Table) -> list:
    table = table.catalog.load_table(table.name())
    return [
        entry
        for manifest in table.current_snapshot().manifests(table.io)
        if manifest.content == 1
        for entry in read_live_entries(manifest, table.io)
    ]


@pytest.fixture
def events(sql_catalog) -> Table:
    """Format v2, partitioned by category: 12 one-file appends of 20 rows, alternating 'a' and 'b' (ids 0..239)."""
    return build_events(sql_catalog)


@pytest.fixture
def with_deletes(events) -> Table:
    """The events table with one position delete file per data file (12, six per partition), 2 rows each."""
    commit_change(
        events, position_delete_change(events, {i * 20 + 3 for i in range(12)} | {i * 20 + 7 for i in range(12)}, "p")
    )
    return events


def test_small_delete_files_are_packed_per_partition_into_one_each(with_deletes):
    before = ids_and_checksum(with_deletes)
    assert len(before[0]) == 240 - 24
    old = _delete_entries(with_deletes)
    plan = plan_position_delete_rewrite(with_deletes, DEFAULTS)
    assert [(len(group.files), group.partition[1]) for group in plan.groups] == [(6, ("a",)), (6, ("b",))]
    assert "12 position delete files" in plan.describe()
    outcome = rewrite_position_deletes(with_deletes, plan)
    assert (outcome.rewritten_files, outcome.added_files, len(outcome.commits)) == (12, 2, 1)
    assert outcome.positions_read == outcome.positions_written == 24 and outcome.positions_dropped == 0
    assert outcome.commits[0].operation == "replace"
    assert ids_and_checksum(with_deletes) == before
    new = _delete_entries(with_deletes)
    assert len(new) == 2
    assert {entry.sequence_number for entry in new} == {max(entry.sequence_number for entry in old)}
    for entry in new:  # sorted by (file_path, pos), each file of one partition
        rows = pq.read_table(entry.data_file.file_path.removeprefix("file://")).to_pylist()
        assert rows == sorted(rows, key=lambda row: (row["file_path"], row["pos"]))


def test_positions_of_removed_data_files_are_dropped(events):
    # one partition-wide delete file in partition a naming rows of two data files
    data_files = [f for f in live_data_files(events) if tuple(f.partition) == ("a",)][:2]
    first, second = data_files
    positions = pa.table({"file_path": [first.file_path] * 2 + [second.file_path], "pos": [1, 2, 5]})
    written = write_position_delete_rows(positions, WriteContext.for_table(events), first.spec_id, ("a",), "wide")
    commit_change(events, SnapshotChange(Operation.DELETE, added_delete_files=[to_data_file(i) for i in written]))
    # a compaction rewrites only the first file; the wide delete file still applies to the second, so it stays
    plan = plan_rewrite(
        events, events.current_snapshot(), RewriteOptions.resolve({}, rewrite_all=True), where="id < 20"
    )
    assert [candidate.path for group in plan.groups for candidate in group.files] == [first.file_path]
    commit_group_rewrites(events, plan, rewrite_locally(events, plan))
    before = ids_and_checksum(events)
    assert len(before[0]) == 240 - 3
    options = PositionDeleteRewriteOptions.resolve({}, rewrite_all=True)
    outcome = rewrite_position_deletes(events, plan_position_delete_rewrite(events, options))
    assert (outcome.positions_read, outcome.positions_written, outcome.positions_dropped) == (3, 1, 2)
    assert ids_and_checksum(events) == before
    (entry,) = _delete_entries(events)
    assert entry.data_file.record_count == 1


def test_a_delete_file_that_applies_to_nothing_is_removed_even_when_not_selected(events):
    first = live_data_files(events)[0]
    commit_change(events, position_delete_change(events, {first_id(first)}, "p"))
    # the data file goes: its delete file now applies to nothing
    plan = plan_rewrite(
        events, events.current_snapshot(), RewriteOptions.resolve({}, rewrite_all=True), where="id < 20"
    )
    commit_group_rewrites(events, plan, rewrite_locally(events, plan))
    # the compaction freed it already; put a fresh dangling one back by hand
    stale = pa.table({"file_path": [first.file_path], "pos": [0]})
    written = write_position_delete_rows(
        stale, WriteContext.for_table(events), first.spec_id, tuple(first.partition), "stale"
    )
    commit_change(events, SnapshotChange(Operation.DELETE, added_delete_files=[to_data_file(i) for i in written]))
    before = ids_and_checksum(events)
    options = PositionDeleteRewriteOptions.resolve({}, min_input_files=1000)
    plan = plan_position_delete_rewrite(events, options)
    assert plan.groups == () and len(plan.dangling) == 1
    outcome = rewrite_position_deletes(events, plan)
    assert outcome.dangling_files_removed == 1 and _delete_entries(events) == []
    assert ids_and_checksum(events) == before


def first_id(data_file) -> int:
    return pq.read_table(data_file.file_path.removeprefix("file://"), columns=["id"]).column(0)[0].as_py()


# -- concurrency with an upsert, both orders -------------------------------------------------------------------


def test_an_upsert_committed_during_the_rewrite_keeps_both(with_deletes):
    plan = plan_position_delete_rewrite(with_deletes, DEFAULTS)
    concurrent = with_deletes.catalog.load_table(with_deletes.name())
    commit_change(concurrent, upsert_change(concurrent, {"a": [0, 40], "b": [20]}, "u"))
    expected = ids_and_checksum(concurrent)
    rewrite_position_deletes(with_deletes, plan)
    assert ids_and_checksum(with_deletes) == expected


def test_a_rewrite_committed_during_an_upsert_keeps_both(with_deletes):
    upsert = upsert_change(with_deletes, {"a": [0, 40], "b": [20]}, "u")  # planned on the table before the rewrite
    rewriter = with_deletes.catalog.load_table(with_deletes.name())
    rewrite_position_deletes(rewriter, plan_position_delete_rewrite(rewriter, DEFAULTS))
    commit_change(with_deletes, upsert)
    ids, _ = ids_and_checksum(with_deletes)
    assert ids.count(0) == ids.count(40) == ids.count(20) == 1 and len(ids) == 240 - 24


def test_a_concurrent_removal_of_a_rewritten_file_fails_the_rewrite_cleanly(with_deletes):
    plan = plan_position_delete_rewrite(with_deletes, DEFAULTS)
    concurrent = with_deletes.catalog.load_table(with_deletes.name())
    gone = plan.groups[0].files[0].data_file.file_path
    commit_change(concurrent, SnapshotChange(Operation.DELETE, removed_delete_file_paths={gone}))
    before = concurrent.catalog.load_table(concurrent.name()).metadata_location
    with pytest.raises(CommitConflictError):
        rewrite_position_deletes(with_deletes, plan)
    assert with_deletes.catalog.load_table(with_deletes.name()).metadata_location == before


def test_deletion_vectors_need_no_rewrite(sql_catalog, tmp_path):
    table = register_corpus_copy(sql_catalog, "mor_v3_dv", tmp_path)
    plan = plan_position_delete_rewrite(table, DEFAULTS)
    assert plan.format_version == 3 and plan.deletion_vectors > 0 and plan.groups == ()
    assert "need no rewrite" in plan.describe()


def test_options_are_checked_as_java_checks_them():
    with pytest.raises(UserInputError, match="'min-input-files' is set to 0"):
        PositionDeleteRewriteOptions.resolve({}, min_input_files=0)
    assert (
        PositionDeleteRewriteOptions.resolve({"write.delete.target-file-size-bytes": "1000"}).min_file_size_bytes == 750
    )
