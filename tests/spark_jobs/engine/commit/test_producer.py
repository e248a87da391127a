"""The snapshot producer: delete manifests, removed entries, and a pinned data sequence number for ``replace``."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.manifest import DataFileContent, ManifestContent, ManifestEntryStatus
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.types import LongType, NestedField

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.table.manifest_entries import read_live_entries
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data, write_equality_delete_rows

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def _table(sql_catalog):
    sql_catalog.create_namespace("ns")
    return sql_catalog.create_table("ns.t", SCHEMA, properties={"format-version": "2"})


def _data(table, ids, tag):
    return [
        to_data_file(f)
        for f in write_data(pa.table({"id": pa.array(ids, pa.int64())}), WriteContext.for_table(table), tag)
    ]


def test_delete_files_go_to_a_deletes_manifest_and_apply(sql_catalog) -> None:
    table = _table(sql_catalog)
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=_data(table, [1, 2, 3], "a")))
    keys = pa.table({"id": pa.array([2], pa.int64())})
    deletes = [
        to_data_file(f)
        for f in write_equality_delete_rows(
            keys, WriteContext.for_table(table), key_names=["id"], spec_id=0, partition_values=(), task_tag="d"
        )
    ]
    commit_change(table, SnapshotChange(Operation.DELETE, added_delete_files=deletes))
    manifests = table.current_snapshot().manifests(table.io)
    delete_manifests = [m for m in manifests if m.content == ManifestContent.DELETES]
    assert len(delete_manifests) == 1 and delete_manifests[0].added_files_count == 1
    (entry,) = read_live_entries(delete_manifests[0], table.io)
    assert entry.data_file.content == DataFileContent.EQUALITY_DELETES and entry.data_file.equality_ids == [1]
    assert entry.sequence_number == table.current_snapshot().sequence_number
    assert sorted(open_read_session(sql_catalog, "ns.t").to_arrow().column("id").to_pylist()) == [1, 3]


def test_a_replace_keeps_the_pinned_data_sequence_number_and_marks_replaced_files_deleted(sql_catalog) -> None:
    table = _table(sql_catalog)
    first = _data(table, [1, 2], "a")
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=first))
    starting_sequence = table.current_snapshot().sequence_number
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=_data(table, [3], "b")))
    rewritten = _data(table, [1, 2], "c")
    commit_change(
        table,
        SnapshotChange(
            Operation.REPLACE,
            added_data_files=rewritten,
            removed_data_file_paths={f.file_path for f in first},
            data_sequence_number=starting_sequence,
        ),
    )
    snapshot = table.current_snapshot()
    assert snapshot.summary.operation == Operation.REPLACE and snapshot.sequence_number == starting_sequence + 2
    assert snapshot.summary["total-records"] == "3" and snapshot.summary["total-data-files"] == "2"
    by_path = {}
    deleted = []
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
            if entry.status == ManifestEntryStatus.DELETED:
                deleted.append(entry.data_file.file_path)
            else:
                by_path[entry.data_file.file_path] = entry
    assert sorted(deleted) == sorted(f.file_path for f in first)
    for data_file in rewritten:
        entry = by_path[data_file.file_path]
        assert entry.status == ManifestEntryStatus.ADDED
        assert entry.sequence_number == starting_sequence
        assert entry.file_sequence_number == snapshot.sequence_number
    assert sorted(open_read_session(sql_catalog, "ns.t").to_arrow().column("id").to_pylist()) == [1, 2, 3]
