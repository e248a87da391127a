"""Rewrite candidates: the snapshot's data files that may match the filter, each with exactly its deletes."""

import pytest

from spark_jobs.engine.compaction.candidates import list_candidates
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import InvalidFilterError


def test_every_live_data_file_without_a_filter(conformance_catalog):
    table = conformance_catalog.load_table("corpus.small_files")
    candidates = list_candidates(table, table.current_snapshot())
    assert len(candidates) == 2000
    assert sum(c.record_count for c in candidates) == 200000
    assert all(c.delete_file_count == 0 and c.known_deleted_records == 0 for c in candidates)


def test_where_keeps_only_files_whose_metrics_may_match(conformance_catalog):
    table = conformance_catalog.load_table("corpus.small_files")
    candidates = list_candidates(table, table.current_snapshot(), "id < 100")
    assert 0 < len(candidates) < 2000
    id_field = table.schema().find_field("id").field_id
    from pyiceberg.conversions import from_bytes
    from pyiceberg.types import LongType

    from spark_jobs.engine.table.manifest_entries import read_live_entries

    data_files = {
        entry.data_file.file_path: entry.data_file
        for manifest in table.current_snapshot().manifests(table.io)
        for entry in read_live_entries(manifest, table.io)
    }
    kept = {candidate.path for candidate in candidates}
    for path, data_file in data_files.items():
        assert (path in kept) == (from_bytes(LongType(), data_file.lower_bounds[id_field]) < 100)


def test_a_bad_where_names_the_table(conformance_catalog):
    table = conformance_catalog.load_table("corpus.small_files")
    with pytest.raises(InvalidFilterError, match=r"corpus\.small_files"):
        list_candidates(table, table.current_snapshot(), "no_such_column = 1")


def test_no_snapshot_has_no_candidates(conformance_catalog):
    table = conformance_catalog.load_table("corpus.small_files")
    assert list_candidates(table, None) == []


@pytest.mark.parametrize("table_name", ["mor_v2_pos", "mor_v3_dv", "v2_eq_deletes"])
def test_deletes_are_those_the_read_planner_attaches(conformance_catalog, table_name):
    table = conformance_catalog.load_table(f"corpus.{table_name}")
    candidates = {c.path: c for c in list_candidates(table, table.current_snapshot())}
    session = open_read_session("conformance", f"corpus.{table_name}")
    slices = {s.path: s for task in session.plan.tasks for s in task.slices}
    assert set(candidates) == set(slices)
    for path, candidate in candidates.items():
        as_slice = candidate.as_slice(table)
        assert as_slice.position_deletes == slices[path].position_deletes
        assert as_slice.deletion_vector == slices[path].deletion_vector
        assert as_slice.equality_deletes == slices[path].equality_deletes
        assert as_slice.partition_constants == slices[path].partition_constants
    assert any(c.delete_file_count for c in candidates.values())


def test_file_scoped_deletes_count_toward_deleted_records(conformance_catalog):
    table = conformance_catalog.load_table("corpus.mor_v3_dv")
    candidates = list_candidates(table, table.current_snapshot())
    with_dv = [c for c in candidates if c.deletes.deletion_vector is not None]
    assert with_dv
    for candidate in with_dv:
        assert candidate.known_deleted_records == min(
            candidate.deletes.deletion_vector.cardinality, candidate.record_count
        )
    equality = list_candidates(*_current("v2_eq_deletes", conformance_catalog))
    assert any(c.deletes.equality_deletes for c in equality)
    for candidate in equality:
        scoped = [d for d in candidate.deletes.position_deletes if d.referenced_data_file is not None]
        assert candidate.known_deleted_records == min(sum(d.record_count for d in scoped), candidate.record_count)


def _current(name, catalog):
    table = catalog.load_table(f"corpus.{name}")
    return table, table.current_snapshot()
