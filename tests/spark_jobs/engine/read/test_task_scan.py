"""Scan tasks run in this process: one schema for every batch, deletes applied, counters merged, task order kept."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from spark_jobs.engine.deletes.cache import delete_file_cache
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.read.task_scan import read_slice, read_task, read_tasks_to_table
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.metrics import ScanMetrics
from tests.spark_jobs.engine.deletes.delete_file_writers import corpus_query


def test_tasks_in_process_give_the_rows_of_every_task_in_order(conformance_catalog) -> None:
    session = open_read_session(conformance_catalog, "corpus.mor_v2_pos", columns=["id"])
    assert len(session.tasks) > 1
    metrics = ScanMetrics()
    together = read_tasks_to_table(session.tasks, session.context, metrics)
    one_by_one = [batch for task in session.tasks for batch in read_task(task, session.context, ScanMetrics())]
    assert together.equals(pa.Table.from_batches(one_by_one, schema=session.output_schema))
    assert together.num_rows == corpus_query("mor_v2_pos", "full_scan").row_count == metrics.rows_out
    assert metrics.rows_deleted_by_position_deletes > 0 and metrics.files_opened == len(
        [s for task in session.tasks for s in task.slices]
    )


def test_a_slice_with_a_deletion_vector_drops_its_rows(conformance_catalog) -> None:
    session = open_read_session(conformance_catalog, "corpus.mor_v3_dv", columns=["id"])
    with_vector = next(s for task in session.tasks for s in task.slices if s.deletion_vector is not None)
    metrics = ScanMetrics()
    rows = sum(batch.num_rows for batch in read_slice(with_vector, session.context, metrics))
    assert metrics.rows_deleted_by_deletion_vectors > 0
    assert rows == with_vector.record_count - metrics.rows_deleted_by_deletion_vectors


def test_no_tasks_is_an_empty_table_of_the_output_schema(conformance_catalog) -> None:
    session = open_read_session(conformance_catalog, "corpus.mor_v2_pos", columns=["id"], row_filter="id < 0")
    empty = read_tasks_to_table([], session.context, ScanMetrics())
    assert empty.num_rows == 0 and empty.schema.equals(session.output_schema)


def test_equality_deletes_loaded_beside_decoding_drop_rows_and_count_their_bytes(conformance_catalog) -> None:
    session = open_read_session(conformance_catalog, "corpus.v2_eq_deletes", columns=["id"])
    delete_file_cache().clear()
    with_deletes = [s for task in session.tasks for s in task.slices if s.equality_deletes]
    assert with_deletes
    metrics = ScanMetrics()
    rows = sum(
        batch.num_rows for data_file in with_deletes for batch in read_slice(data_file, session.context, metrics)
    )
    assert metrics.rows_deleted_by_equality_deletes > 0 and metrics.delete_bytes_read > 0
    deleted = metrics.rows_deleted_by_equality_deletes + metrics.rows_deleted_by_position_deletes
    assert rows == sum(s.record_count for s in with_deletes) - deleted


def test_a_missing_equality_delete_file_is_named_as_a_delete_file(conformance_catalog, tmp_path) -> None:
    session = open_read_session(conformance_catalog, "corpus.v2_eq_deletes", columns=["id"])
    data_file = next(s for task in session.tasks for s in task.slices if s.equality_deletes)
    gone = dataclasses.replace(data_file.equality_deletes[0], path=f"file:{tmp_path / 'gone.parquet'}")
    data_file = dataclasses.replace(data_file, equality_deletes=(gone,))

    with pytest.raises(CorruptFileError, match=r"delete file .*gone\.parquet is missing"):
        list(read_slice(data_file, session.context, ScanMetrics()))
