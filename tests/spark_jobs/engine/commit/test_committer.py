"""The committer against a real SQLite catalog: round trips, exactly-once, lost races retried or refused, cleanup."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.producer import CommitConflictError
from spark_jobs.engine.commit.snapshot_change import IDEMPOTENCY_KEY_PROPERTY, SnapshotChange
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import UnsupportedFeatureError, UserInputError
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data, write_position_delete_rows

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "category", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))


@pytest.fixture
def table(sql_catalog):
    """An empty format v2 table partitioned by category."""
    sql_catalog.create_namespace("ns")
    return sql_catalog.create_table("ns.events", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})


def rows(ids: list[int], category: str = "a") -> pa.Table:
    """Rows with the given ids, all in one category."""
    return pa.table({"id": pa.array(ids, pa.int64()), "category": [category] * len(ids)})


def data_files(table, data: pa.Table, tag: str = "t0") -> list:
    """Write ``data`` as data files of ``table`` and return their DataFile entries."""
    return [to_data_file(item) for item in write_data(data, WriteContext.for_table(table), tag)]


def _ids_ours(table) -> list[int]:
    return sorted(open_read_session(table.catalog, ".".join(table.name())).to_arrow().column("id").to_pylist())


def _ids_pyiceberg(table) -> list[int]:
    return sorted(table.catalog.load_table(table.name()).scan().to_arrow().column("id").to_pylist())


def _exists(path: str) -> bool:
    return Path(path.removeprefix("file://")).exists()


def _position_deletes(table, files, ids_to_delete: set[int]) -> list:
    """Position delete files removing ``ids_to_delete`` from ``files``, one per partition."""
    context = WriteContext.for_table(table)
    written = []
    for data_file in files:
        ids = pq.read_table(data_file.file_path.removeprefix("file://")).column("id").to_pylist()
        positions = [pos for pos, value in enumerate(ids) if value in ids_to_delete]
        if positions:
            deletes = pa.table({"file_path": [data_file.file_path] * len(positions), "pos": positions})
            written += write_position_delete_rows(
                deletes, context, data_file.spec_id, tuple(data_file.partition), f"d{len(written)}"
            )
    return [to_data_file(item) for item in written]


def test_append_then_position_deletes_read_back_identically(table) -> None:
    files = data_files(table, pa.concat_tables([rows(list(range(10)), "a"), rows(list(range(10, 15)), "b")]))
    appended = commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    assert appended.operation == "append" and appended.summary["added-records"] == "15"
    assert _ids_ours(table) == _ids_pyiceberg(table) == list(range(15))

    deletes = _position_deletes(table, files, {3, 11})
    deleted = commit_change(
        table, SnapshotChange(Operation.DELETE, added_delete_files=deletes, no_new_data_in_partitions=None)
    )
    assert deleted.operation == "delete"
    assert deleted.summary["added-position-deletes"] == "2" and deleted.summary["added-delete-files"] == "2"
    expected = [i for i in range(15) if i not in (3, 11)]
    assert _ids_ours(table) == _ids_pyiceberg(table) == expected
    assert table.current_snapshot().parent_snapshot_id == appended.snapshot_id


def test_a_committed_idempotency_key_commits_nothing_and_deletes_the_new_files(table) -> None:
    first = commit_change(
        table, SnapshotChange(Operation.APPEND, added_data_files=data_files(table, rows([1, 2])), idempotency_key="k")
    )
    assert table.current_snapshot().summary[IDEMPOTENCY_KEY_PROPERTY] == "k"
    again_files = data_files(table, rows([1, 2]), "t1")
    again = commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=again_files, idempotency_key="k"))
    assert again.already_committed and again.snapshot_id == first.snapshot_id
    assert table.current_snapshot().snapshot_id == first.snapshot_id
    assert _ids_ours(table) == [1, 2]
    assert not any(_exists(f.file_path) for f in again_files)


def test_an_append_that_loses_the_race_is_retried_on_the_new_metadata(table) -> None:
    stale = table.catalog.load_table("ns.events")
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=data_files(table, rows([1]))))
    result = commit_change(stale, SnapshotChange(Operation.APPEND, added_data_files=data_files(stale, rows([2]), "t1")))
    assert result.attempts == 2
    assert _ids_ours(table) == _ids_pyiceberg(table) == [1, 2]
    assert int(stale.current_snapshot().summary["total-records"]) == 2


def test_a_delete_racing_a_new_data_file_fails_cleanly(table) -> None:
    files = data_files(table, rows([1, 2, 3]))
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    planned_on = table.catalog.load_table("ns.events")
    start_id = planned_on.current_snapshot().snapshot_id
    deletes = _position_deletes(planned_on, files, {2})
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=data_files(table, rows([2]), "t1")))
    head = table.catalog.load_table("ns.events").current_snapshot().snapshot_id

    change = SnapshotChange(Operation.DELETE, added_delete_files=deletes, no_new_data_in_partitions=None)
    with pytest.raises(CommitConflictError, match="added data file"):
        commit_change(planned_on, change, starting_snapshot_id=start_id)
    assert table.catalog.load_table("ns.events").current_snapshot().snapshot_id == head
    assert not any(_exists(f.file_path) for f in deletes)
    assert _ids_ours(table) == [1, 2, 2, 3]


def test_position_deletes_for_a_data_file_removed_meanwhile_fail_cleanly(table) -> None:
    files = data_files(table, rows([1, 2, 3]))
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    planned_on = table.catalog.load_table("ns.events")
    deletes = _position_deletes(planned_on, files, {2})
    replacement = data_files(table, rows([1, 2, 3]), "t1")
    commit_change(
        table,
        SnapshotChange(
            Operation.OVERWRITE,
            added_data_files=replacement,
            removed_data_file_paths={f.file_path for f in files},
        ),
    )
    change = SnapshotChange(
        Operation.DELETE,
        added_delete_files=deletes,
        required_data_file_paths={f.file_path for f in files},
    )
    with pytest.raises(CommitConflictError, match="removed by a concurrent commit"):
        commit_change(planned_on, change)
    assert not any(_exists(f.file_path) for f in deletes)
    assert _ids_ours(table) == [1, 2, 3]


def test_overwrite_removes_files_and_keeps_the_others(table) -> None:
    a_files = data_files(table, rows([1, 2], "a"))
    b_files = data_files(table, rows([3, 4], "b"), "t1")
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=a_files + b_files))
    new_a = data_files(table, rows([10], "a"), "t2")
    result = commit_change(
        table,
        SnapshotChange(
            Operation.OVERWRITE,
            added_data_files=new_a,
            removed_data_file_paths={f.file_path for f in a_files},
            no_new_data_in_partitions={(0, ("a",))},
        ),
    )
    assert result.summary["deleted-data-files"] == str(len(a_files)) and result.summary["deleted-records"] == "2"
    assert _ids_ours(table) == _ids_pyiceberg(table) == [3, 4, 10]


def test_removing_a_file_the_table_does_not_hold_fails_and_deletes_the_written_files(table) -> None:
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=data_files(table, rows([1]))))
    before = table.current_snapshot().snapshot_id
    metadata_dir = Path(table.metadata.location.removeprefix("file://")) / "metadata"
    avro_before = set(metadata_dir.glob("*.avro"))
    new_files = data_files(table, rows([2]), "t1")
    change = SnapshotChange(
        Operation.OVERWRITE, added_data_files=new_files, removed_data_file_paths={"file:///nowhere/x.parquet"}
    )
    with pytest.raises(CommitConflictError, match="no longer holds 1 file"):
        commit_change(table, change)
    assert table.catalog.load_table("ns.events").current_snapshot().snapshot_id == before
    assert not any(_exists(f.file_path) for f in new_files)
    assert set(metadata_dir.glob("*.avro")) == avro_before


def test_writes_to_a_format_v1_table_are_refused(sql_catalog) -> None:
    sql_catalog.create_namespace("v1")
    v1 = sql_catalog.create_table("v1.t", SCHEMA, properties={"format-version": "1"})
    with pytest.raises(UnsupportedFeatureError, match=r"writes to format v1 tables are not supported \(table v1.t\)"):
        commit_change(v1, SnapshotChange(Operation.APPEND))
    assert sql_catalog.load_table("v1.t").current_snapshot() is None


def test_a_position_delete_racing_an_append_is_retried_when_only_its_files_must_stay(table) -> None:
    files = data_files(table, rows([1, 2, 3]))
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    planned_on = table.catalog.load_table("ns.events")
    start_id = planned_on.current_snapshot().snapshot_id
    deletes = _position_deletes(planned_on, files, {2})
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=data_files(table, rows([2]), "t1")))
    change = SnapshotChange(
        Operation.DELETE,
        added_delete_files=deletes,
        required_data_file_paths={f.file_path for f in files},
    )
    result = commit_change(planned_on, change, starting_snapshot_id=start_id)
    assert result.attempts == 2 and result.operation == "delete"
    assert _ids_ours(table) == _ids_pyiceberg(table) == [1, 2, 3]


def test_a_malformed_retry_property_is_bad_input_and_commits_nothing(table) -> None:
    with table.transaction() as transaction:
        transaction.set_properties({"commit.retry.num-retries": "four"})
    files = data_files(table, rows([1]))
    with pytest.raises(UserInputError, match=r"commit\.retry\.num-retries"):
        commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    assert table.refresh().current_snapshot() is None
