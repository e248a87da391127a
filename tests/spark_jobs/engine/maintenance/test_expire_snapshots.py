"""Snapshot expiration by Iceberg Java's retention rules, and the cleanup of files only expired snapshots used."""

import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from spark_jobs.engine.maintenance import expire_snapshots, snapshots_to_expire
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import UserInputError
from tests.support.table_history import build_table_history


def _local(location: str) -> Path:
    return Path(urlparse(location).path)


def _future_ms() -> int:
    return int(time.time() * 1000) + 60_000


def _data_files_of(table, snapshot_id: int) -> set[str]:
    return {task.file.file_path for task in table.scan(snapshot_id=snapshot_id).plan_files()}


def test_retain_last_keeps_the_newest_snapshots_and_deletes_what_only_expired_ones_used(sql_catalog):
    history = build_table_history(sql_catalog)
    table = history.table
    ids = history.snapshot_ids
    before_files = {sid: _data_files_of(table, sid) for sid in ids}
    expired_manifest_lists = [_local(table.snapshot_by_id(sid).manifest_list) for sid in ids[:5]]
    result = expire_snapshots(table, older_than_ms=_future_ms(), retain_last=2)

    assert result.expired_snapshot_ids == ids[:5]
    assert result.retained_snapshot_ids == sorted(ids[5:])
    reloaded = sql_catalog.load_table("maint.events")
    assert [s.snapshot_id for s in reloaded.snapshots()] == ids[5:]
    # the c0 and c1 data files were only in expired snapshots; c2 and c3 are still read
    only_expired = set().union(*(before_files[sid] for sid in ids[:5])) - before_files[ids[5]] - before_files[ids[6]]
    assert len(only_expired) == 2 and result.files.data_files == only_expired
    assert not any(_local(path).exists() for path in only_expired)
    assert not any(path.exists() for path in expired_manifest_lists)
    assert result.files.counts()["deleted_manifest_lists"] == 5 and result.removal.failed == {}
    for sid in ids[5:]:
        snapshot = reloaded.snapshot_by_id(sid)
        assert _local(snapshot.manifest_list).exists()
        assert all(_local(m.manifest_path).exists() for m in snapshot.manifests(reloaded.io))
        assert all(_local(path).exists() for path in _data_files_of(reloaded, sid))
        assert reloaded.scan(snapshot_id=sid).to_arrow().num_rows == history.rows_per_snapshot[sid]
        ours = open_read_session(sql_catalog, "maint.events", snapshot_id=sid).to_arrow()
        assert ours.num_rows == history.rows_per_snapshot[sid]


def test_dry_run_reports_the_same_and_changes_nothing(sql_catalog):
    history = build_table_history(sql_catalog)
    table = history.table
    files_before = sorted(p for p in history.directory.rglob("*") if p.is_file())
    planned = expire_snapshots(table, older_than_ms=_future_ms(), retain_last=2, dry_run=True)
    assert planned.removal is None
    assert sorted(p for p in history.directory.rglob("*") if p.is_file()) == files_before
    assert sql_catalog.load_table("maint.events").metadata_location == table.metadata_location
    done = expire_snapshots(sql_catalog.load_table("maint.events"), older_than_ms=_future_ms(), retain_last=2)
    assert planned.expired_snapshot_ids == done.expired_snapshot_ids
    assert planned.files == done.files


def test_older_than_keeps_newer_snapshots_and_retain_last_a_minimum(sql_catalog):
    history = build_table_history(sql_catalog)
    table = history.table
    ids = history.snapshot_ids
    timestamps = [table.snapshot_by_id(sid).timestamp_ms for sid in ids]
    assert timestamps == sorted(timestamps) and len(set(timestamps)) == len(timestamps)
    # snapshots at or after the 4th one's time stay; the walk stops at the first older one
    assert snapshots_to_expire(table, older_than_ms=timestamps[3], retain_last=1) == ids[:3]
    # retain-last wins over age: the 5 newest are kept even though all are older than the future cutoff
    assert snapshots_to_expire(table, older_than_ms=_future_ms(), retain_last=5) == ids[:2]
    assert snapshots_to_expire(table, older_than_ms=_future_ms(), retain_last=100) == []
    # Java's default cutoff is 5 days ago: nothing here is that old
    assert snapshots_to_expire(table) == []


def test_refs_keep_their_snapshots_and_branches_their_own_minimum(sql_catalog):
    history = build_table_history(sql_catalog)
    table = history.table
    s1, s2, s3, s4, s5, s6, s7 = history.snapshot_ids
    table.manage_snapshots().create_tag(s2, "release").create_branch(s4, "audit", min_snapshots_to_keep=2).commit()
    # main keeps s7; the tag keeps s2; the branch keeps its head s4 and its parent s3
    assert snapshots_to_expire(table, older_than_ms=_future_ms(), retain_last=1) == [s1, s5, s6]
    result = expire_snapshots(table, older_than_ms=_future_ms(), retain_last=1)
    reloaded = sql_catalog.load_table("maint.events")
    assert sorted(s.snapshot_id for s in reloaded.snapshots()) == sorted([s2, s3, s4, s7])
    assert set(reloaded.metadata.refs) == {"main", "release", "audit"}
    for sid in (s2, s3, s4, s7):
        assert reloaded.scan(snapshot_id=sid).to_arrow().num_rows == history.rows_per_snapshot[sid]
    assert result.files.data_files == set()  # every data file is still read by a kept snapshot


def test_expiring_on_stale_metadata_retries_on_the_new_metadata(sql_catalog):
    history = build_table_history(sql_catalog)
    stale = sql_catalog.load_table("maint.events")
    fresh = sql_catalog.load_table("maint.events")
    batch = history.table.scan(snapshot_id=history.snapshot_ids[-1]).to_arrow().slice(0, 3)
    fresh.append(batch)  # main moves after the stale copy was loaded
    newest = fresh.current_snapshot().snapshot_id
    result = expire_snapshots(stale, older_than_ms=_future_ms(), retain_last=2)
    # chosen again on the new metadata: the new snapshot and its parent stay
    assert result.expired_snapshot_ids == history.snapshot_ids[:6]
    reloaded = sql_catalog.load_table("maint.events")
    assert [s.snapshot_id for s in reloaded.snapshots()] == [history.snapshot_ids[-1], newest]
    assert reloaded.scan().to_arrow().num_rows == history.rows_per_snapshot[history.snapshot_ids[-1]] + 3


def test_retain_last_must_be_positive(sql_catalog):
    history = build_table_history(sql_catalog)
    with pytest.raises(UserInputError, match="retain-last must be at least 1"):
        snapshots_to_expire(history.table, retain_last=0)


def _files_read_at(table, snapshot_id: int) -> set[str]:
    """Data and delete files a scan of the snapshot opens (pyiceberg's planner: an independent oracle)."""
    files: set[str] = set()
    for task in table.scan(snapshot_id=snapshot_id).plan_files():
        files.add(task.file.file_path)
        files.update(delete_file.file_path for delete_file in task.delete_files)
    return files


def test_dry_run_on_tables_java_wrote_frees_only_what_the_kept_snapshot_does_not_read(conformance_catalog):
    # a dry run changes nothing, so the shared corpus stays intact
    v1_cow = conformance_catalog.load_table("corpus.v1_cow")
    result = expire_snapshots(v1_cow, older_than_ms=_future_ms(), retain_last=1, dry_run=True)
    current = v1_cow.current_snapshot().snapshot_id
    expired = [s.snapshot_id for s in v1_cow.snapshots() if s.snapshot_id != current]
    assert result.expired_snapshot_ids == expired
    read_before = set().union(*(_files_read_at(v1_cow, sid) for sid in expired))
    assert result.files.data_files == read_before - _files_read_at(v1_cow, current)
    assert result.files.data_files  # copy-on-write rewrote files: the old versions go

    mor = conformance_catalog.load_table("corpus.mor_v2_pos")
    result = expire_snapshots(mor, older_than_ms=_future_ms(), retain_last=1, dry_run=True)
    freed = result.files.all()
    assert result.files.position_delete_files  # replaced position delete files of earlier DELETEs
    assert not freed & _files_read_at(mor, mor.current_snapshot().snapshot_id)
    assert all(Path(urlparse(path).path).exists() for path in freed)


def test_refs_past_their_max_age_are_dropped_and_their_snapshots_expire(sql_catalog):
    history = build_table_history(sql_catalog)
    table = history.table
    s1, s2, s3, s4, s5, s6, s7 = history.snapshot_ids
    time.sleep(0.01)  # every snapshot is now older than 1 ms
    (
        table.manage_snapshots()
        .create_tag(s2, "old-tag", max_ref_age_ms=1)
        .create_tag(s3, "kept-tag")
        .create_branch(s5, "old-branch", max_ref_age_ms=1)
        .create_branch(s6, "kept-branch", max_ref_age_ms=24 * 60 * 60 * 1000)
        .commit()
    )
    with table.transaction() as transaction:  # main is never dropped, whatever the table's default ref age
        transaction.set_properties({"history.expire.max-ref-age-ms": "1"})
    table = sql_catalog.load_table("maint.events")
    # dropped: old-tag, old-branch, and kept-tag by the table default; kept: main (s7) and kept-branch (s6)
    assert snapshots_to_expire(table, older_than_ms=_future_ms(), retain_last=1) == [s1, s2, s3, s4, s5]
    result = expire_snapshots(table, older_than_ms=_future_ms(), retain_last=1)
    assert result.removed_refs == ["kept-tag", "old-branch", "old-tag"]
    reloaded = sql_catalog.load_table("maint.events")
    assert set(reloaded.metadata.refs) == {"main", "kept-branch"}
    assert sorted(s.snapshot_id for s in reloaded.snapshots()) == sorted([s6, s7])
    assert reloaded.scan(snapshot_id=s6).to_arrow().num_rows == history.rows_per_snapshot[s6]


def test_gc_disabled_refuses_to_expire_or_remove_orphans(sql_catalog):
    from spark_jobs.engine.maintenance import remove_orphan_files

    history = build_table_history(sql_catalog)
    with history.table.transaction() as transaction:
        transaction.set_properties({"gc.enabled": "false"})
    table = sql_catalog.load_table("maint.events")
    files_before = sorted(p for p in history.directory.rglob("*") if p.is_file())
    with pytest.raises(UserInputError, match=r"maint\.events.*gc\.enabled is false"):
        expire_snapshots(table, older_than_ms=_future_ms(), retain_last=1)
    with pytest.raises(UserInputError, match=r"maint\.events.*gc\.enabled is false"):
        remove_orphan_files(table, older_than_ms=_future_ms(), allow_short_retention=True)
    assert len(sql_catalog.load_table("maint.events").snapshots()) == 7
    assert sorted(p for p in history.directory.rglob("*") if p.is_file()) == files_before


def test_partition_statistics_of_expired_snapshots_leave_the_metadata_and_their_files_go(sql_catalog):
    # pyiceberg's RemoveSnapshotsUpdate drops statistics entries of removed snapshots but not partition statistics
    # entries; Java's expire_snapshots removes both the entry and its file.
    from pyiceberg.table.statistics import PartitionStatisticsFile
    from pyiceberg.table.update import SetPartitionStatisticsUpdate

    history = build_table_history(sql_catalog)
    ids = history.snapshot_ids
    files = {}
    for snapshot_id in (ids[0], ids[-1]):
        path = history.directory / "metadata" / f"partition-stats-{snapshot_id}.parquet"
        path.write_bytes(b"partition statistics")
        files[snapshot_id] = path
        stats = PartitionStatisticsFile(
            snapshot_id=snapshot_id, statistics_path=f"file://{path}", file_size_in_bytes=path.stat().st_size
        )
        sql_catalog.commit_table(history.table, (), (SetPartitionStatisticsUpdate(partition_statistics=stats),))
        history.table.refresh()
    planned = expire_snapshots(history.table, older_than_ms=_future_ms(), retain_last=2, dry_run=True)
    assert planned.files.statistics_files == {f"file://{files[ids[0]]}"}
    result = expire_snapshots(history.table, older_than_ms=_future_ms(), retain_last=2)
    assert result.as_dict()["deleted_statistics_files"] == 1
    reloaded = sql_catalog.load_table("maint.events")
    assert [s.snapshot_id for s in reloaded.metadata.partition_statistics] == [ids[-1]]
    assert not files[ids[0]].exists() and files[ids[-1]].exists()
