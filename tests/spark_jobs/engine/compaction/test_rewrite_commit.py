"""Rewrite commits on a real SQLite catalog: replace snapshots, freed deletes removed, concurrent commits validated.

The groups are rewritten in this process (``rewrite_locally``, the executor code); a concurrent commit is made
between the rewrite and its commit, or after it, as another job's would land.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyiceberg.exceptions import CommitFailedException

from spark_jobs.engine.commit.committer import CommitOutcomeUnknownError, commit_change
from spark_jobs.engine.commit.producer import CommitConflictError
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.rewrite_commit import (
    commit_group_rewrites,
    removable_delete_keys,
    removable_delete_locations,
)
from spark_jobs.engine.table.manifest_entries import read_live_entries
from tests.support.conformance import table_checksum
from tests.support.corpus_copies import register_corpus_copy
from tests.support.rewrite_tables import (
    append,
    equality_delete_change,
    exists,
    ids_and_checksum,
    position_delete_change,
    read_rows,
    rewrite_locally,
    rows,
)


def _plan(table, where: str | None = None, **options):
    resolved = RewriteOptions.resolve(table.properties, **{"min_input_files": 2, **options})
    return plan_rewrite(table, table.current_snapshot(), resolved, where=where)


def _live_entries(table, content: int) -> list:
    snapshot = table.current_snapshot()
    return [
        entry
        for manifest in snapshot.manifests(table.io)
        if manifest.content == content
        for entry in read_live_entries(manifest, table.io)
    ]


def _rows_and_checksum(table) -> tuple[int, str]:
    data = read_rows(table)
    return data.num_rows, table_checksum(data, data.column_names)[0]


def _written(rewrites) -> list[str]:
    return [item["file_path"] for rewrite in rewrites for item in rewrite.written]


@pytest.mark.parametrize("corpus_table", ["mor_v2_pos", "v2_eq_deletes"])
def test_java_written_deletes_are_folded_in_and_freed_delete_files_removed(sql_catalog, tmp_path, corpus_table):
    table = register_corpus_copy(sql_catalog, corpus_table, tmp_path)
    before = ids_and_checksum(table)
    start = table.current_snapshot()
    plan = _plan(table, rewrite_all=True)
    assert plan.freed_delete_locations
    result, removed = commit_group_rewrites(table, plan, rewrite_locally(table, plan))
    assert {location for location, _ in removed} == set(plan.freed_delete_locations)
    assert result.operation == "replace" and int(result.summary["removed-delete-files"]) == len(removed)
    assert ids_and_checksum(table) == before
    live_deletes = {entry.data_file.file_path for entry in _live_entries(table, 1)}
    assert not live_deletes & {location for location, _ in removed}
    assert {entry.sequence_number for entry in _live_entries(table, 0) if entry.snapshot_id == result.snapshot_id} == {
        start.sequence_number
    }


@pytest.mark.parametrize("corpus_table", ["partition_evolution", "schema_evolution", "types"])
def test_every_row_and_value_survives_a_rewrite_of_evolved_and_typed_tables(sql_catalog, tmp_path, corpus_table):
    table = register_corpus_copy(sql_catalog, corpus_table, tmp_path)
    before = _rows_and_checksum(table)
    plan = _plan(table, rewrite_all=True)
    result, _ = commit_group_rewrites(table, plan, rewrite_locally(table, plan))
    assert result.operation == "replace" and _rows_and_checksum(table) == before and before[0] > 0
    new_files = [entry.data_file for entry in _live_entries(table, 0) if entry.snapshot_id == result.snapshot_id]
    assert new_files and {data_file.spec_id for data_file in new_files} == {table.spec().spec_id}
    assert len(_live_entries(table, 0)) == len(new_files)  # every old file (of any spec) was rewritten


def test_deletes_of_own_writers_are_folded_in_and_only_freed_ones_removed(events):
    commit_change(events, position_delete_change(events, {0, 1, 20, 21}, "pos"))
    commit_change(events, equality_delete_change(events, {"a": [40, 80], "b": [60]}, "eq"))
    before = ids_and_checksum(events)
    plan = _plan(events, where="category = 'a'")
    assert [len(group.files) for group in plan.groups] == [6]
    result, removed = commit_group_rewrites(events, plan, rewrite_locally(events, plan))
    assert ids_and_checksum(events) == before and len(before[0]) == 240 - 7
    # partition a's position delete file and equality delete file are gone; b's stay
    assert len(removed) == 2 and all("category=a" in path and offset is None for path, offset in removed)
    live_deletes = [entry.data_file.file_path for entry in _live_entries(events, 1)]
    assert len(live_deletes) == 2 and all("category=b" in path for path in live_deletes)
    assert result.summary["deleted-data-files"] == "6" and result.summary["added-data-files"] == "1"


def test_a_delete_shared_by_two_groups_is_removed_only_with_both():
    from types import SimpleNamespace

    from spark_jobs.engine.compaction.planner import FileGroup
    from spark_jobs.engine.planning.delete_index import AppliedDeletes
    from spark_jobs.engine.planning.scan_tasks import DeletionVector, PositionDeleteFile

    shared = PositionDeleteFile("shared.parquet", 10, 2, 2, None)
    own = PositionDeleteFile("own.parquet", 10, 1, 2, "a.parquet")
    # One Puffin file holding the deletion vectors of c and d: each vector goes with its own data file.
    dv_c = DeletionVector("dv.puffin", 4, 40, 1, "c.parquet", 2)
    dv_d = DeletionVector("dv.puffin", 44, 40, 1, "d.parquet", 2)

    def candidate(path, deletes):
        return SimpleNamespace(path=path, deletes=deletes)

    group_1 = FileGroup(1, 1, (), (candidate("a.parquet", AppliedDeletes((shared, own), None, ())),), 1, 1)
    group_2 = FileGroup(2, 2, (), (candidate("b.parquet", AppliedDeletes((shared,), None, ())),), 1, 1)
    group_3 = FileGroup(3, 3, (), (candidate("c.parquet", AppliedDeletes((), dv_c, ())),), 1, 1)
    group_4 = FileGroup(4, 4, (), (candidate("d.parquet", AppliedDeletes((), dv_d, ())),), 1, 1)
    plan = SimpleNamespace(
        groups=(group_1, group_2, group_3, group_4),
        freed_delete_locations=frozenset({"shared.parquet", "own.parquet", "dv.puffin"}),
        freed_delete_files=frozenset(
            {("shared.parquet", None), ("own.parquet", None), ("dv.puffin", 4), ("dv.puffin", 44)}
        ),
    )
    assert removable_delete_locations(plan, ["a.parquet"]) == {"own.parquet"}
    assert removable_delete_locations(plan, ["a.parquet", "b.parquet"]) == {"own.parquet", "shared.parquet"}
    assert removable_delete_keys(plan, ["c.parquet"]) == {("dv.puffin", 4)}
    assert removable_delete_keys(plan, ["c.parquet", "d.parquet"]) == {("dv.puffin", 4), ("dv.puffin", 44)}


# -- concurrency ---------------------------------------------------------------------------------------------------


def test_an_equality_delete_committed_during_the_rewrite_still_applies(events):
    plan = _plan(events)
    rewrites = rewrite_locally(events, plan)
    concurrent = events.catalog.load_table(events.name())
    commit_change(concurrent, equality_delete_change(concurrent, {"a": [0, 40], "b": [20]}, "eq"))
    result, _ = commit_group_rewrites(events, plan, rewrites)
    assert result.operation == "replace" and result.attempts >= 1
    ids, _ = ids_and_checksum(events)
    assert ids == sorted(set(range(240)) - {0, 40, 20})  # none lost, none resurrected
    assert all(exists(path) for path in _written(rewrites))


def test_an_equality_delete_planned_before_and_committed_after_the_rewrite_still_applies(events):
    plan = _plan(events)
    delete = equality_delete_change(events.catalog.load_table(events.name()), {"a": [0], "b": [20]}, "eq")
    commit_group_rewrites(events, plan, rewrite_locally(events, plan))
    commit_change(events.catalog.load_table(events.name()), delete)
    assert ids_and_checksum(events)[0] == sorted(set(range(240)) - {0, 20})


def test_a_position_delete_on_a_replaced_file_committed_during_the_rewrite_fails_it_cleanly(events):
    plan = _plan(events)
    rewrites = rewrite_locally(events, plan)
    concurrent = events.catalog.load_table(events.name())
    delete = commit_change(concurrent, position_delete_change(concurrent, {5, 25}, "pos"))
    with pytest.raises(CommitConflictError, match="position deletes"):
        commit_group_rewrites(events, plan, rewrites)
    after = events.catalog.load_table(events.name())
    assert after.current_snapshot().snapshot_id == delete.snapshot_id  # the rewrite left no snapshot
    assert ids_and_checksum(after)[0] == sorted(set(range(240)) - {5, 25})
    assert _written(rewrites) and not any(exists(path) for path in _written(rewrites))


def test_a_position_delete_planned_before_the_rewrite_and_committed_after_it_fails(events):
    plan = _plan(events)
    deleter = events.catalog.load_table(events.name())  # the delete job loads the table before the rewrite commits
    delete = position_delete_change(deleter, {5}, "pos")
    commit_group_rewrites(events, plan, rewrite_locally(events, plan))
    with pytest.raises(CommitConflictError, match="commit aborted"):
        commit_change(deleter, delete)
    assert ids_and_checksum(events)[0] == list(range(240))
    assert not any(exists(f.file_path) for f in delete.added_delete_files)


def test_a_position_delete_on_a_file_outside_the_rewrite_does_not_block_it(events):
    plan = _plan(events, where="category = 'a'")
    rewrites = rewrite_locally(events, plan)
    concurrent = events.catalog.load_table(events.name())
    commit_change(concurrent, position_delete_change(concurrent, {20}, "pos"))  # id 20 is in partition b
    commit_group_rewrites(events, plan, rewrites)
    assert ids_and_checksum(events)[0] == sorted(set(range(240)) - {20})


def test_an_append_racing_the_rewrite_does_not_block_it_and_both_survive(events):
    plan = _plan(events)
    rewrites = rewrite_locally(events, plan)
    append(events.catalog.load_table(events.name()), rows([1000, 1001], "a"), "race")
    result, _ = commit_group_rewrites(events, plan, rewrites)
    assert result.operation == "replace"
    assert ids_and_checksum(events)[0] == [*range(240), 1000, 1001]
    assert len(_live_entries(events, 0)) == 3  # one file per partition, plus the appended one


def test_an_append_landing_after_validation_makes_the_commit_retry_on_the_new_metadata(events, monkeypatch):
    from spark_jobs.engine.compaction import rewrite_commit

    plan = _plan(events)
    rewrites = rewrite_locally(events, plan)
    validate = rewrite_commit.validate_concurrent_commits

    def validate_then_let_an_append_land(table, change, starting_snapshot_id):
        validate(table, change, starting_snapshot_id)
        append(table.catalog.load_table(table.name()), rows([5000], "b"), "late")

    monkeypatch.setattr(rewrite_commit, "validate_concurrent_commits", validate_then_let_an_append_land)
    result, _ = commit_group_rewrites(events, plan, rewrites)
    assert result.attempts == 2 and not result.already_committed
    assert ids_and_checksum(events)[0] == [*range(240), 5000]


def test_a_position_delete_landing_after_validation_is_caught_when_the_lost_race_is_validated(events, monkeypatch):
    from spark_jobs.engine.compaction import rewrite_commit

    plan = _plan(events)
    rewrites = rewrite_locally(events, plan)
    validate = rewrite_commit.validate_concurrent_commits

    def validate_then_let_a_delete_land(table, change, starting_snapshot_id):
        validate(table, change, starting_snapshot_id)
        other = table.catalog.load_table(table.name())
        commit_change(other, position_delete_change(other, {7}, "late"))

    monkeypatch.setattr(rewrite_commit, "validate_concurrent_commits", validate_then_let_a_delete_land)
    with pytest.raises(CommitConflictError, match="position deletes"):
        commit_group_rewrites(events, plan, rewrites)
    assert ids_and_checksum(events)[0] == sorted(set(range(240)) - {7})
    assert not any(exists(path) for path in _written(rewrites))


def test_a_commit_refused_every_time_leaves_the_table_unchanged_and_deletes_the_written_files(events, monkeypatch):
    before_location = events.metadata_location
    before = ids_and_checksum(events)
    plan = _plan(events)
    rewrites = rewrite_locally(events, plan)
    metadata_files = set(Path(events.metadata.location.removeprefix("file://"), "metadata").iterdir())

    def refuse(*args, **kwargs):
        raise CommitFailedException("injected: lost every race")

    monkeypatch.setattr(type(events.catalog), "commit_table", refuse)
    monkeypatch.setitem(events.metadata.properties, "commit.retry.num-retries", "1")
    monkeypatch.setitem(events.metadata.properties, "commit.retry.min-wait-ms", "1")
    with pytest.raises(CommitConflictError, match=r"lost the race"):
        commit_group_rewrites(events, plan, rewrites)
    monkeypatch.undo()
    after = events.catalog.load_table(events.name())
    assert after.metadata_location == before_location and ids_and_checksum(after) == before
    assert _written(rewrites) and not any(exists(path) for path in _written(rewrites))
    # no manifest or manifest list of the failed attempts is left either
    assert set(Path(events.metadata.location.removeprefix("file://"), "metadata").iterdir()) == metadata_files


def test_a_commit_never_answered_keeps_its_files_and_records_them_until_a_later_commit_settles_it(events, monkeypatch):
    before_location = events.metadata_location
    before = ids_and_checksum(events)
    plan = _plan(events)
    rewrites = rewrite_locally(events, plan)

    def unanswered(*args, **kwargs):
        raise RuntimeError("injected: catalog unreachable")

    monkeypatch.setattr(type(events.catalog), "commit_table", unanswered)
    monkeypatch.setitem(events.metadata.properties, "commit.retry.num-retries", "1")
    monkeypatch.setitem(events.metadata.properties, "commit.retry.min-wait-ms", "1")
    with pytest.raises(CommitOutcomeUnknownError, match=r"outcome unknown .* nothing deleted") as raised:
        commit_group_rewrites(events, plan, rewrites)
    monkeypatch.undo()
    after = events.catalog.load_table(events.name())
    assert after.metadata_location == before_location and ids_and_checksum(after) == before
    # The request might still land while the branch is at its parent: its files stay, listed in the record.
    record = json.loads(Path(raised.value.record_location.removeprefix("file://")).read_text())
    assert record["snapshot_id"] == raised.value.snapshot_id and record["table"] == "ns.events"
    assert set(_written(rewrites)) <= set(record["files"]) and all(exists(path) for path in record["files"])
    # The next commit moves the branch: the request can no longer land, so its files and the record go.
    append(after, rows([1000], "a"), "later")
    assert not any(exists(path) for path in record["files"])
    assert not Path(raised.value.record_location.removeprefix("file://")).exists()
