"""What one commit does: the files it wrote, the files that must stay live, when it is a pure append."""

from __future__ import annotations

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.table.snapshots import Operation
from pyiceberg.typedef import Record

from spark_jobs.engine.commit.snapshot_change import IDEMPOTENCY_KEY_PROPERTY, SnapshotChange


def _file(path: str, content: DataFileContent = DataFileContent.DATA, referenced: str | None = None) -> DataFile:
    data_file = DataFile.from_args(
        _table_format_version=3,
        content=content,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=1,
        file_size_in_bytes=10,
        referenced_data_file=referenced,
    )
    data_file.spec_id = 0
    return data_file


def test_written_paths_are_the_added_data_and_delete_files() -> None:
    change = SnapshotChange(Operation.OVERWRITE, [_file("d1")], [_file("x1", DataFileContent.EQUALITY_DELETES)])
    assert change.written_file_paths == ["d1", "x1"]


def test_a_pure_append_adds_data_files_only_and_asks_no_validation() -> None:
    assert SnapshotChange(Operation.APPEND, [_file("d1")]).is_pure_append
    assert not SnapshotChange(Operation.APPEND, [_file("d1")], no_new_data_in_partitions=None).is_pure_append
    assert not SnapshotChange(Operation.APPEND, [_file("d1")], no_new_data_in_partitions={(0, ())}).is_pure_append
    assert not SnapshotChange(Operation.OVERWRITE, removed_data_file_paths={"d0"}).is_pure_append
    assert not SnapshotChange(Operation.APPEND, [_file("d1")], required_data_file_paths={"d0"}).is_pure_append
    position_deletes = [_file("p", DataFileContent.POSITION_DELETES)]
    assert not SnapshotChange(Operation.DELETE, added_delete_files=position_deletes).is_pure_append


def test_data_files_that_must_stay_live_include_the_targets_of_scoped_position_deletes() -> None:
    change = SnapshotChange(
        Operation.DELETE,
        added_delete_files=[
            _file("p1", DataFileContent.POSITION_DELETES, referenced="d7"),
            _file("p2", DataFileContent.POSITION_DELETES),
            _file("e1", DataFileContent.EQUALITY_DELETES),
        ],
        removed_data_file_paths={"d1"},
        required_data_file_paths={"d2"},
    )
    assert change.data_files_that_must_stay_live == {"d1", "d2", "d7"}


def test_the_idempotency_key_joins_the_summary_properties() -> None:
    change = SnapshotChange(Operation.APPEND, summary_properties={"mode": "append"})
    assert change.summary_with_key() == {"mode": "append"}
    change.idempotency_key = "dag.run.task"
    assert change.summary_with_key() == {"mode": "append", IDEMPOTENCY_KEY_PROPERTY: "dag.run.task"}
    assert change.summary_properties == {"mode": "append"}
