"""Compaction on local Spark under commit faults, with and without partial progress, on a real SQLite catalog.

Two partitions of two small files each make two file groups: one commit without partial progress, two with it
(``partial-progress.max-commits`` 2). The fault hits the first commit. Rows never change; what may change is which
groups were replaced. A certain failure deletes that batch's files (with partial progress the other batch still
commits); an unknown outcome stops the job at once, keeps the batch's files (recorded beside the table) and the next
commit settles the record. ``test_commit_faults`` tries every phase on one batch's commit without Spark.
"""

from __future__ import annotations

import logging

import pytest

from spark_jobs.engine.commit.committer import CommitOutcomeUnknownError, commit_change
from spark_jobs.engine.commit.pending_commits import read_pending_records
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.table.catalog import load_catalog
from spark_jobs.spark.compact import run_rewrite
from tests.spark_jobs.faults.phases import PHASES
from tests.spark_jobs.faults.tables import append_change, new_table
from tests.support import faults
from tests.support.fault_checks import files_under, rows_by_id, unaccounted_files, unreferenced_new_files
from tests.support.rewrite_tables import live_data_files

pytestmark = pytest.mark.spark

CASE_NAMES = ("manifest list write", "catalog call raising after it landed", "call raising after it landed, no reload")
CASES = [p for p in PHASES if p.name in CASE_NAMES]


@pytest.mark.parametrize("partial_progress", [False, True], ids=["one-commit", "partial-progress"])
@pytest.mark.parametrize("phase", CASES, ids=[p.name.replace(" ", "-") for p in CASES])
def test_compaction_under_a_fault_in_its_first_commit(spark, sqlite_faulty_catalog, phase, partial_progress, caplog):
    table, identifier = new_table(sqlite_faulty_catalog)
    rows = rows_by_id(sqlite_faulty_catalog, identifier)
    options = RewriteOptions.resolve(
        table.properties,
        min_input_files=2,
        partial_progress_enabled=partial_progress,
        partial_progress_max_commits=2 if partial_progress else None,
    )
    plan = plan_rewrite(table, table.current_snapshot(), options)
    assert len(plan.groups) == 2 and plan.groups_per_commit == (1 if partial_progress else 2)
    before = files_under(table)
    plan_in_force = faults.reset_plan(**phase.plan)
    outcome, error = None, None
    try:
        with caplog.at_level(logging.WARNING):
            outcome = run_rewrite(spark, table, plan)
    except Exception as raised:  # inspected below
        error = raised
    finally:
        faults.reset_plan()
    assert plan_in_force.fired

    table = load_catalog(sqlite_faulty_catalog).load_table(identifier)
    assert rows_by_id(sqlite_faulty_catalog, identifier) == rows
    replaced = {s.snapshot_id for s in table.snapshots() if s.summary.operation.value == "replace"}
    if phase.ends == "ok":
        assert error is None and outcome is not None and len(outcome.commits) == (2 if partial_progress else 1)
        assert len(live_data_files(table)) == 2
    elif phase.ends == "unknown":
        assert isinstance(error, CommitOutcomeUnknownError) and identifier in str(error)
        assert replaced == {error.snapshot_id}, "the job went on after a commit whose outcome it did not know"
    elif partial_progress:
        assert error is None and outcome.failed_groups == [plan.groups[0].global_index] and len(replaced) == 1
    else:
        assert error is not None and not replaced
    assert unaccounted_files(table, before, f"{error}\n{caplog.text}") == set()
    if phase.ends != "unknown":
        assert unreferenced_new_files(table, before) == set()
    else:
        commit_change(table, append_change(table, "later"))
        assert read_pending_records(table) == {} and unreferenced_new_files(table, before) == set()
