"""Read sessions in-process: every conformance query returns exactly Java's rows; bad input names what is wrong."""

from __future__ import annotations

import pytest

from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import (
    InvalidFilterError,
    SnapshotNotFoundError,
    TableNotFoundError,
    UserInputError,
)
from tests.support.conformance import ConformanceQuery, load_queries, table_checksum

QUERIES = load_queries()


@pytest.mark.parametrize("query", QUERIES, ids=[q.id for q in QUERIES])
def test_conformance_query_in_process(conformance_catalog, query: ConformanceQuery) -> None:
    session = open_read_session(
        conformance_catalog,
        query.table,
        columns=query.select,
        row_filter=query.where,
        snapshot_id=query.snapshot_id,
        as_of=query.as_of_timestamp_ms,
    )
    if query.resolves_to_snapshot_id is not None:
        assert session.snapshot_id == query.resolves_to_snapshot_id
    result = session.to_arrow()
    assert result.column_names == query.result_columns
    assert result.num_rows == query.row_count
    checksum, column_checksums = table_checksum(result, query.result_columns)
    differing = [c for c in query.result_columns if column_checksums[c] != query.column_checksums.get(c)]
    assert checksum == query.checksum, f"columns that differ: {differing}"
    assert session.metrics.rows_out == query.row_count


def test_deletes_are_counted_by_kind(conformance_catalog) -> None:
    positional = open_read_session(conformance_catalog, "corpus.mor_v2_pos")
    positional.to_arrow()
    vectors = open_read_session(conformance_catalog, "corpus.mor_v3_dv")
    vectors.to_arrow()
    equality = open_read_session(conformance_catalog, "corpus.v2_eq_deletes_part")
    equality.to_arrow()
    assert positional.metrics.rows_deleted_by_position_deletes > 0
    assert positional.metrics.rows_deleted_by_deletion_vectors == 0
    assert vectors.metrics.rows_deleted_by_deletion_vectors == positional.metrics.rows_deleted_by_position_deletes
    assert equality.metrics.rows_deleted_by_equality_deletes > 0


def test_filter_prunes_files_by_metrics_and_rows_by_late_materialization(conformance_catalog) -> None:
    session = open_read_session(conformance_catalog, "corpus.mor_v2_pos", row_filter="id < 100")
    result = session.to_arrow()
    everything = open_read_session(conformance_catalog, "corpus.mor_v2_pos").to_arrow()
    assert sorted(result.column("id").to_pylist()) == sorted(v for v in everything.column("id").to_pylist() if v < 100)
    metrics = session.metrics
    # Ids are spread over the files: column metrics rule most files out; the rest are one row group each, whose
    # statistics cannot, so late materialization drops their rows.
    assert 0 < metrics.data_files_pruned < metrics.data_files_total
    assert metrics.files_opened == metrics.data_files_total - metrics.data_files_pruned
    assert metrics.row_groups_pruned_by_statistics == 0
    assert metrics.rows_pruned_by_late_materialization > 0
    assert metrics.rows_out == result.num_rows


def test_unknown_column_names_the_table_and_the_columns(conformance_catalog) -> None:
    with pytest.raises(UserInputError, match=r"corpus\.v1_cow has no column 'nope'; columns: id, ts"):
        open_read_session(conformance_catalog, "corpus.v1_cow", columns=["id", "nope"])


def test_unknown_table_is_a_clear_error(conformance_catalog) -> None:
    with pytest.raises(TableNotFoundError, match=r"corpus\.nope"):
        open_read_session(conformance_catalog, "corpus.nope")


def test_unknown_snapshot_is_a_clear_error(conformance_catalog) -> None:
    with pytest.raises(SnapshotNotFoundError, match=r"corpus\.v1_cow"):
        open_read_session(conformance_catalog, "corpus.v1_cow", snapshot_id=42)


def test_bad_filter_is_a_clear_error(conformance_catalog) -> None:
    with pytest.raises(InvalidFilterError, match=r"corpus\.v1_cow"):
        open_read_session(conformance_catalog, "corpus.v1_cow", row_filter="no_such_column > 3")
