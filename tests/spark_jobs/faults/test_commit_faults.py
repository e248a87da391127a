"""The committer under a fault at each phase, for every kind of change the jobs commit, on SQLite and PostgreSQL.

The changes are written with the engine's own writers in this process (no Spark): an append, an overwrite that
removes a data file (its manifest rewritten), a row delta of data and position delete files, equality deletes, and
a compaction batch (a ``replace`` with the starting sequence number). After each fault: the table reads, its rows
are the model's, and every file written is referenced, listed in a pending commit record, or named in the error or
the log. An unknown outcome is settled by committing the same change again with the same idempotency key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation

from spark_jobs.engine.commit.committer import CommitOutcomeUnknownError, commit_change
from spark_jobs.engine.commit.pending_commits import read_pending_records
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.rewrite_commit import commit_group_rewrites
from spark_jobs.engine.table.catalog import load_catalog
from tests.spark_jobs.faults.phases import PHASE_IDS, PHASES, Phase
from tests.spark_jobs.faults.tables import INITIAL, append_change, data_files, new_table
from tests.support import faults
from tests.support.fault_checks import files_under, rows_by_id, unaccounted_files, unreferenced_new_files
from tests.support.rewrite_tables import (
    equality_delete_change,
    live_data_files,
    position_delete_change,
    rewrite_locally,
)


def _overwrite_change(table: Table, tag: str) -> SnapshotChange:
    first = live_data_files(table)[0]
    return SnapshotChange(
        Operation.OVERWRITE,
        added_data_files=data_files(table, [100], "a", tag),
        removed_data_file_paths={first.file_path},
        no_new_data_in_partitions={(first.spec_id, tuple(first.partition))},
    )


def _row_delta_change(table: Table, tag: str) -> SnapshotChange:
    deletes = position_delete_change(table, {1, 5}, tag)
    return SnapshotChange(
        Operation.OVERWRITE,
        added_data_files=data_files(table, [1, 5], "b", tag),
        added_delete_files=deletes.added_delete_files,
        required_data_file_paths=deletes.required_data_file_paths,
        no_new_data_in_partitions=None,
    )


def _equality_change(table: Table, tag: str) -> SnapshotChange:
    return equality_delete_change(table, {"a": [2, 8], "b": [5]}, tag)


@dataclass(frozen=True)
class Kind:
    """A kind of change, how to build it on a table, and its effect on the rows."""

    name: str
    build: Callable[[Table, str], SnapshotChange]
    apply: Callable[[dict[int, tuple]], dict[int, tuple]]


KINDS = [
    Kind("append", append_change, lambda r: {**r, 100: ("a",), 101: ("a",)}),
    Kind("overwrite", _overwrite_change, lambda r: {**{i: v for i, v in r.items() if i >= 4}, 100: ("a",)}),
    Kind("row-delta", _row_delta_change, lambda r: {**r, 1: ("b",), 5: ("b",)}),
    Kind("equality-deletes", _equality_change, lambda r: {i: v for i, v in r.items() if i not in (2, 5, 8)}),
]


def _commit_under_fault(phase: Phase, caplog, commit: Callable[[], object]) -> Exception | None:
    plan = faults.reset_plan(**phase.plan)
    caplog.clear()
    try:
        with caplog.at_level(logging.WARNING):
            commit()
        return None
    except Exception as error:  # inspected by the caller
        return error
    finally:
        faults.reset_plan()
        assert plan.fired, f"no fault of {phase.name} fired"


def _check_ending(phase: Phase, error: Exception | None, identifier: str) -> None:
    if phase.ends == "ok":
        assert error is None, f"{phase.name}: {error!r}"
    elif phase.ends == "unknown":
        assert isinstance(error, CommitOutcomeUnknownError), f"{phase.name}: {error!r}"
        assert identifier in str(error) and str(error.snapshot_id) in str(error) and error.record_location in str(error)
    else:
        assert error is not None and not isinstance(error, CommitOutcomeUnknownError), f"{phase.name}: {error!r}"


def _check_files(table: Table, phase: Phase, before: set[str], error: Exception | None, caplog) -> None:
    assert unaccounted_files(table, before, f"{error}\n{caplog.text}") == set()
    if phase.ends == "ok" or (phase.ends == "error" and not phase.plan.get("deletes_failing")):
        assert unreferenced_new_files(table, before) == set()


def check_change_under_fault(catalog_name: str, kind: Kind, phase: Phase, caplog) -> None:
    """Commit ``kind`` under ``phase``'s fault; check the table, the files, and the retry (module doc)."""
    table, identifier = new_table(catalog_name)
    before = files_under(table)
    change = kind.build(table, "c1")
    change.idempotency_key = "key-1"
    error = _commit_under_fault(phase, caplog, lambda: commit_change(table, change))
    _check_ending(phase, error, identifier)
    assert rows_by_id(catalog_name, identifier) == (kind.apply(INITIAL) if phase.lands else INITIAL)
    _check_files(table, phase, before, error, caplog)
    if phase.ends == "unknown":
        table.refresh()
        again = kind.build(load_catalog(catalog_name).load_table(identifier), "c2") if not phase.lands else change
        again.idempotency_key = "key-1"
        result = commit_change(table, again)
        assert result.already_committed == phase.lands
        assert rows_by_id(catalog_name, identifier) == kind.apply(INITIAL)
        assert read_pending_records(table) == {} and unreferenced_new_files(table, before) == set()


@pytest.mark.parametrize("phase", PHASES, ids=PHASE_IDS)
@pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])
def test_a_change_under_a_commit_fault(faulty_catalog, kind, phase, caplog) -> None:
    check_change_under_fault(faulty_catalog, kind, phase, caplog)


@pytest.mark.parametrize("phase", PHASES, ids=PHASE_IDS)
def test_a_compaction_batch_under_a_commit_fault(faulty_catalog, phase, caplog) -> None:
    table, identifier = new_table(catalog_name=faulty_catalog)
    before_rows = rows_by_id(faulty_catalog, identifier)
    options = RewriteOptions.resolve(table.properties, min_input_files=2)
    plan = plan_rewrite(table, table.current_snapshot(), options)
    assert plan.groups
    before = files_under(table)
    rewrites = rewrite_locally(table, plan)
    head = table.current_snapshot().snapshot_id
    error = _commit_under_fault(phase, caplog, lambda: commit_group_rewrites(table, plan, rewrites))
    _check_ending(phase, error, identifier)
    table = load_catalog(faulty_catalog).load_table(identifier)
    assert rows_by_id(faulty_catalog, identifier) == before_rows
    replaced = table.current_snapshot().snapshot_id != head
    assert replaced == phase.lands
    if replaced:
        assert table.current_snapshot().summary.operation.value == "replace"
        assert len(live_data_files(table)) == 2
    _check_files(table, phase, before, error, caplog)
    if phase.ends == "unknown":  # the next commit to the branch decides the record
        commit_change(table, append_change(table, "later"))
        assert read_pending_records(table) == {} and unreferenced_new_files(table, before) == set()
