"""Scan tasks run in this process: one schema for every batch, deletes applied, counters merged, task order kept."""

from __future__ import annotations

import pyarrow as pa

from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.read.task_scan import read_slice, read_task, read_tasks_to_table
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
