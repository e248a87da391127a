"""Scan task descriptors: which slices take the merge-on-read path, whole files, a task's weight."""

from __future__ import annotations

import pickle

from spark_jobs.engine.planning.scan_tasks import (
    DataFileSlice,
    DeletionVector,
    EqualityDeleteFile,
    PositionDeleteFile,
    ScanTask,
)


def test_a_slice_with_any_delete_takes_the_merge_on_read_path() -> None:
    plain = DataFileSlice("d.parquet", 1000, 10, 0, length=1000)
    assert not plain.has_deletes
    assert DataFileSlice("d.parquet", 1000, 10, 0, position_deletes=(PositionDeleteFile("p", 1, 1, 2),)).has_deletes
    assert DataFileSlice(
        "d.parquet", 1000, 10, 0, equality_deletes=(EqualityDeleteFile("e", 1, 1, (1,), 2),)
    ).has_deletes
    vector = DeletionVector("dv.puffin", 4, 40, 3, "d.parquet", 2)
    assert DataFileSlice("d.parquet", 1000, 10, 0, deletion_vector=vector).has_deletes


def test_whole_files_and_task_weights() -> None:
    whole = DataFileSlice("a", 1000, 10, 0, start=0, length=1000)
    head = DataFileSlice("b", 1000, 10, 0, start=0, length=400)
    tail = DataFileSlice("b", 1000, 10, 0, start=400, length=600)
    assert whole.is_whole_file and not head.is_whole_file and not tail.is_whole_file
    task = ScanTask((whole, head, tail))
    assert task.estimated_bytes == 2000
    assert pickle.loads(pickle.dumps(task)) == task
