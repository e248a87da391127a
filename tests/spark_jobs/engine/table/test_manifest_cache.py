"""Manifest lists and manifest entries are read once per process, and a new snapshot's manifests are seen."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.manifest import ManifestFile

from spark_jobs.engine.planning.scan_planner import plan_scan
from spark_jobs.engine.table.manifest_cache import (
    cached_live_entries,
    cached_manifests,
    manifest_cache,
    manifest_columns,
    manifest_columns_cache,
)
from spark_jobs.engine.table.manifest_columns import decode_manifest, partition_type_resolver
from spark_jobs.engine.table.manifest_entries import (
    first_row_id,
    in_v3_list_layout,
    read_live_entries,
    set_first_row_id,
)
from tests.spark_jobs.engine.deletes.delete_file_writers import RecordingFileIO


@pytest.fixture
def table(sql_catalog):
    sql_catalog.create_namespace("db")
    created = sql_catalog.create_table("db.t", schema=pa.schema([pa.field("id", pa.int64())]))
    created.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    return sql_catalog.load_table("db.t")


def _metadata_files_opened(io: RecordingFileIO) -> list[str]:
    return [path for path in io.log.opened if path.endswith(".avro")]


def test_second_read_of_a_snapshot_opens_no_manifest_list_or_manifest(table) -> None:
    manifest_cache().clear()
    snapshot = table.current_snapshot()
    io = RecordingFileIO()

    first = [cached_live_entries(cached_manifests(snapshot, io), io)]
    opened_first = _metadata_files_opened(io)
    second = [cached_live_entries(cached_manifests(snapshot, io), io)]

    assert len(opened_first) == 2  # the manifest list and the one manifest
    assert _metadata_files_opened(io) == opened_first  # nothing more
    assert second == first


def test_cached_entries_equal_a_fresh_read(table) -> None:
    manifest_cache().clear()
    manifests = cached_manifests(table.current_snapshot(), table.io)
    cached_live_entries(manifests, table.io)

    cached = cached_live_entries(manifests, table.io)
    fresh = [tuple(read_live_entries(manifest, table.io)) for manifest in manifests]

    assert [[entry.data_file.file_path for entry in entries] for entries in cached] == [
        [entry.data_file.file_path for entry in entries] for entries in fresh
    ]
    assert [[entry.sequence_number for entry in entries] for entries in cached] == [
        [entry.sequence_number for entry in entries] for entries in fresh
    ]


def test_a_later_snapshot_plans_its_new_files(table) -> None:
    plan_scan(table, table.current_snapshot())  # caches the first snapshot's manifests
    table.append(pa.table({"id": pa.array([4, 5], pa.int64())}))
    table = table.refresh()

    plan = plan_scan(table, table.current_snapshot())

    assert sum(data_file.record_count for task in plan.tasks for data_file in task.slices) == 5
    assert len({data_file.path for task in plan.tasks for data_file in task.slices}) == 2


def test_manifests_read_in_parallel_are_read_once_even_when_the_cache_keeps_none(
    table, monkeypatch: pytest.MonkeyPatch
) -> None:
    table.append(pa.table({"id": pa.array([4], pa.int64())}))  # a second manifest: the parallel path
    manifests = cached_manifests(table.refresh().current_snapshot(), table.io)
    assert len(manifests) == 2
    monkeypatch.setattr(manifest_cache(), "max_bytes", 0)  # keeps nothing
    manifest_cache().clear()
    io = RecordingFileIO()

    entries = cached_live_entries(manifests, io)

    assert sorted(_metadata_files_opened(io)) == sorted(manifest.manifest_path for manifest in manifests)
    assert [len(manifest_entries) for manifest_entries in entries] == [1, 1]


def test_a_manifest_listed_with_another_first_row_id_is_not_served_its_old_row_ids(table) -> None:
    manifest_cache().clear()
    (manifest,) = cached_manifests(table.current_snapshot(), table.io)
    first = in_v3_list_layout(manifest)
    set_first_row_id(first, 100)
    second = in_v3_list_layout(ManifestFile(*(manifest[i] for i in range(len(manifest)))))
    set_first_row_id(second, 500)

    (entries_first,) = cached_live_entries([first], table.io)
    (entries_second,) = cached_live_entries([second], table.io)

    assert [first_row_id(entry.data_file) for entry in entries_first] == [100]
    assert [first_row_id(entry.data_file) for entry in entries_second] == [500]


def test_a_plan_whose_manifests_cannot_all_stay_cached_keeps_what_the_cache_held(
    table, monkeypatch: pytest.MonkeyPatch
) -> None:
    for new_id in (4, 5):
        table.append(pa.table({"id": pa.array([new_id], pa.int64())}))
    table = table.refresh()
    manifests = cached_manifests(table.current_snapshot(), table.io)
    assert len(manifests) == 3
    partition_type_of = partition_type_resolver(table)
    cache = manifest_columns_cache()
    cache.clear()
    one = decode_manifest(manifests[0], table.io, partition_type_of(0), use_duckdb=False).nbytes
    monkeypatch.setattr(cache, "max_bytes", int(one * 2.5))  # room for two of the three
    cache.put("held before", "value", one)

    decoded = list(manifest_columns(manifests, table.io, partition_type_of))

    assert [columns.num_rows for columns in decoded] == [1, 1, 1]
    assert cache.get("held before") == "value"  # not evicted by manifests that could not all stay
    assert sum(key != "held before" for key in cache._entries) <= 1  # at most the first one, decided after it

    monkeypatch.setattr(cache, "max_bytes", one * 10)  # room for all: each is cached
    cache.clear()
    list(manifest_columns(manifests, table.io, partition_type_of))
    assert len(cache._entries) == 3
