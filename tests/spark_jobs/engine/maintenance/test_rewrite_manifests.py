"""Manifest rewrite: fewer manifests clustered by partition, the same files and rows, and pruning that reads fewer."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.table import Table

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.producer import CommitConflictError
from spark_jobs.engine.maintenance.rewrite_manifests import cluster_entries, plan_manifest_rewrite, rewrite_manifests
from spark_jobs.engine.planning.scan_planner import plan_scan
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_entries import read_live_entries
from tests.support.rewrite_tables import SCHEMA, SPEC, append, equality_delete_change, ids_and_checksum

CATEGORIES = ("a", "b", "c", "d")


@pytest.fixture
def spread(sql_catalog) -> Table:
    """Eight appends, each with rows in all four partitions: eight manifests that each span every partition."""
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table(
        "ns.spread",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": "2", "commit.manifest.target-size-bytes": "1"},
    )
    for index in range(8):
        ids = list(range(index * 40, (index + 1) * 40))
        rows = pa.table({"id": pa.array(ids, pa.int64()), "category": [CATEGORIES[i % 4] for i in ids]})
        append(table, rows, f"s{index}")
    return table


def _manifests_read(table: Table, row_filter: str) -> int:
    metrics = ScanMetrics()
    plan_scan(table, table.current_snapshot(), schema=table.schema(), row_filter=row_filter, metrics=metrics)
    return metrics.manifests_total - metrics.manifests_pruned


def _live(table: Table) -> set[tuple[str, int | None, int | None, int | None]]:
    return {
        (e.data_file.file_path, e.snapshot_id, e.sequence_number, e.file_sequence_number)
        for m in table.current_snapshot().manifests(table.io)
        for e in read_live_entries(m, table.io)
    }


def _target(table: Table, manifests: int) -> None:
    total = sum(m.manifest_length for m in table.current_snapshot().manifests(table.io))
    with table.transaction() as transaction:
        transaction.set_properties({"commit.manifest.target-size-bytes": str(-(-total // manifests))})


def test_manifests_are_clustered_by_partition_and_planning_reads_fewer(spread):
    before_rows, before_entries = ids_and_checksum(spread), _live(spread)
    assert len(spread.current_snapshot().manifests(spread.io)) == 8
    assert _manifests_read(spread, "category = 'a'") == 8
    _target(spread, 4)
    plan = plan_manifest_rewrite(spread)
    assert [(r.content.name, len(r.manifests), r.target_manifests) for r in plan.rewrites] == [("DATA", 8, 4)]
    result = rewrite_manifests(spread, plan)
    assert result.operation == "replace"
    assert (result.summary["manifests-created"], result.summary["manifests-replaced"]) == ("4", "8")
    assert result.summary["entries-processed"] == "32"
    manifests = spread.current_snapshot().manifests(spread.io)
    assert len(manifests) == 4
    assert _manifests_read(spread, "category = 'a'") == 1  # one partition per manifest: pruned by summaries
    assert _live(spread) == before_entries  # same files, snapshot ids and sequence numbers
    assert ids_and_checksum(spread) == before_rows
    assert spread.current_snapshot().summary["total-data-files"] == "32"


def test_delete_manifests_are_rewritten_too_and_a_single_small_manifest_is_left_alone(spread):
    commit_change(spread, equality_delete_change(spread, {"a": [0], "b": [1]}, "eq1"))
    commit_change(spread, equality_delete_change(spread, {"c": [2]}, "eq2"))
    before = ids_and_checksum(spread)
    with spread.transaction() as transaction:
        transaction.set_properties({"commit.manifest.target-size-bytes": str(8 * 1024 * 1024)})
    plan = plan_manifest_rewrite(spread)
    assert [(r.content.name, len(r.manifests), r.target_manifests) for r in plan.rewrites] == [
        ("DATA", 8, 1),
        ("DELETES", 2, 1),
    ]
    rewrite_manifests(spread, plan)
    assert [m.content for m in spread.current_snapshot().manifests(spread.io)] == [0, 1]
    assert ids_and_checksum(spread) == before
    assert plan_manifest_rewrite(spread).rewrites == ()  # one manifest per content: nothing left to do


def test_sort_by_and_spec_id_are_checked(spread):
    with pytest.raises(UserInputError, match="field\\(s\\) \\['nope'\\] were not found"):
        plan_manifest_rewrite(spread, sort_by=["nope"])
    with pytest.raises(UserInputError, match="Invalid spec id 9"):
        plan_manifest_rewrite(spread, spec_id=9)


def test_a_concurrent_commit_replacing_a_manifest_fails_the_rewrite_and_leaves_no_file(spread):
    _target(spread, 4)
    plan = plan_manifest_rewrite(spread)
    concurrent = spread.catalog.load_table(spread.name())
    _target(concurrent, 2)
    rewrite_manifests(concurrent, plan_manifest_rewrite(concurrent))  # replaces every manifest the plan names
    metadata_files = set(_metadata_dir(spread))
    with pytest.raises(CommitConflictError, match="no longer holds"):
        rewrite_manifests(spread, plan)
    assert set(_metadata_dir(spread)) == metadata_files  # the manifests it wrote were deleted


def test_an_append_racing_the_rewrite_is_kept(spread):
    _target(spread, 4)
    plan = plan_manifest_rewrite(spread)
    concurrent = spread.catalog.load_table(spread.name())
    append(concurrent, pa.table({"id": pa.array([999], pa.int64()), "category": ["a"]}), "late")
    rewrite_manifests(spread, plan)
    ids, _ = ids_and_checksum(spread)
    assert 999 in ids and len(ids) == 321


def test_clusters_keep_a_partition_whole():
    from types import SimpleNamespace

    from pyiceberg.typedef import Record

    def entry(category):
        return SimpleNamespace(data_file=SimpleNamespace(partition=Record(category)))

    entries = [entry(c) for c in "abababaccc"]
    runs = cluster_entries(entries, SPEC, (), 3)
    assert [[e.data_file.partition[0] for e in run] for run in runs] == [list("aaaa"), list("bbb"), list("ccc")]


def _metadata_dir(table: Table) -> list[str]:
    import os

    directory = table.metadata.location.removeprefix("file://") + "/metadata"
    return sorted(os.listdir(directory))


def test_an_upsert_and_a_manifest_rewrite_in_either_order_keep_both(spread):
    from tests.support.rewrite_tables import upsert_change

    _target(spread, 4)
    # the upsert lands between the rewrite's plan and its commit
    plan = plan_manifest_rewrite(spread)
    concurrent = spread.catalog.load_table(spread.name())
    commit_change(concurrent, upsert_change(concurrent, {"a": [0], "b": [1]}, "u1"))
    expected = ids_and_checksum(concurrent)
    rewrite_manifests(spread, plan)
    assert ids_and_checksum(spread) == expected
    # the rewrite lands between the upsert's plan and its commit
    upserter = spread.catalog.load_table(spread.name())
    upsert = upsert_change(upserter, {"c": [2], "d": [3]}, "u2")
    rewriter = spread.catalog.load_table(spread.name())
    rewrite_manifests(rewriter, plan_manifest_rewrite(rewriter))
    commit_change(upserter, upsert)
    ids, _ = ids_and_checksum(spread)
    assert len(ids) == 320 and ids.count(0) == ids.count(3) == 1
