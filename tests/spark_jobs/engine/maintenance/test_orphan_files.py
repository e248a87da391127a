"""Orphan files: listed under the table location, not reachable from metadata, older than the cutoff."""

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from spark_jobs.engine.commit.outcome import PendingCommit
from spark_jobs.engine.commit.pending_commits import new_record, write_pending_record
from spark_jobs.engine.maintenance import expire_snapshots, remove_orphan_files
from spark_jobs.engine.shared.errors import UserInputError
from tests.support.table_history import SCHEMA, build_table_history

DAY_S = 24 * 60 * 60


def _plant(path: Path, age_days: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not referenced by any snapshot")
    moment = time.time() - age_days * DAY_S
    os.utime(path, (moment, moment))
    return path


def _future_ms() -> int:
    return int(time.time() * 1000) + 60_000


def test_a_table_written_by_pyiceberg_has_no_orphans(sql_catalog):
    history = build_table_history(sql_catalog)
    result = remove_orphan_files(history.table, older_than_ms=_future_ms(), dry_run=True, allow_short_retention=True)
    assert result.files_listed > 0 and result.orphans == []
    expire_snapshots(history.table, older_than_ms=_future_ms(), retain_last=1)
    after = remove_orphan_files(
        sql_catalog.load_table("maint.events"), older_than_ms=_future_ms(), dry_run=True, allow_short_retention=True
    )
    assert after.orphans == [] and after.files_listed < result.files_listed


def test_planted_files_older_than_the_cutoff_are_found_and_removed(sql_catalog):
    history = build_table_history(sql_catalog)
    root = history.directory
    old = [
        _plant(root / "data" / "orphan-1.parquet", age_days=10),
        _plant(root / "metadata" / "stale-manifest.avro", age_days=4),
        _plant(root / "data" / "category=x" / "nested.parquet", age_days=30),
    ]
    fresh = _plant(root / "data" / "in-flight.parquet", age_days=1)  # newer than the default 3 days
    hidden = [_plant(root / "data" / ".part.crc", age_days=10), _plant(root / "_temporary" / "0" / "x", age_days=10)]

    planned = remove_orphan_files(history.table, dry_run=True)
    assert sorted(Path(o.location.removeprefix("file://")) for o in planned.orphans) == sorted(old)
    assert all(path.exists() for path in [*old, fresh, *hidden])
    assert planned.as_dict()["orphan_bytes"] == 3 * len(b"not referenced by any snapshot")

    removed = remove_orphan_files(history.table)
    assert len(removed.removal.removed) == 3 and removed.removal.failed == {}
    assert not any(path.exists() for path in old)
    assert all(path.exists() for path in [fresh, *hidden])
    table = sql_catalog.load_table("maint.events")
    for sid in history.snapshot_ids:
        assert table.scan(snapshot_id=sid).to_arrow().num_rows == history.rows_per_snapshot[sid]


def test_a_recent_cutoff_takes_the_fresh_file_too(sql_catalog):
    history = build_table_history(sql_catalog)
    fresh = _plant(history.directory / "data" / "in-flight.parquet", age_days=1)
    result = remove_orphan_files(history.table, older_than_ms=_future_ms(), dry_run=True, allow_short_retention=True)
    assert [o.location for o in result.orphans] == [f"file://{fresh}"]


def test_a_cutoff_less_than_a_day_ago_is_refused_before_anything_is_listed(sql_catalog):
    history = build_table_history(sql_catalog)
    old = _plant(history.directory / "data" / "orphan.parquet", age_days=10)
    with pytest.raises(UserInputError, match=r"less than 24 hours ago: files of writes still in progress"):
        remove_orphan_files(history.table, older_than_ms=int(time.time() * 1000) - 23 * 3600 * 1000)
    assert old.exists()
    done = remove_orphan_files(history.table, older_than_ms=int(time.time() * 1000) - 25 * 3600 * 1000)
    assert [o.location for o in done.orphans] == [f"file://{old}"] and not old.exists()


class _CommitBeforeSecondReload(SqlCatalog):
    """A real SQL catalog that runs ``before_second_load`` just before its second ``load_table``."""

    before_second_load = None
    loads = 0

    def load_table(self, identifier):
        type(self).loads += 1
        if type(self).loads == 2 and type(self).before_second_load is not None:
            type(self).before_second_load()
        return super().load_table(identifier)


def test_an_orphan_that_a_commit_references_meanwhile_is_not_deleted(sql_catalog, tmp_path):
    history = build_table_history(sql_catalog)
    landing = history.directory / "data" / "added-meanwhile.parquet"
    pq.write_table(pa.table({"id": pa.array([7], pa.int64()), "category": ["m"]}, schema=SCHEMA), landing)
    moment = time.time() - 10 * DAY_S
    os.utime(landing, (moment, moment))
    watched = _CommitBeforeSecondReload("test", **sql_catalog.properties)
    table = watched.load_table("maint.events")
    _CommitBeforeSecondReload.loads = 0  # the job reloads twice: after listing, and just before deleting
    _CommitBeforeSecondReload.before_second_load = lambda: sql_catalog.load_table("maint.events").add_files(
        [f"file://{landing}"]
    )
    try:
        result = remove_orphan_files(table)
    finally:
        _CommitBeforeSecondReload.before_second_load = None
    assert result.referenced_meanwhile == [f"file://{landing}"] and landing.exists()
    assert result.removal is not None and result.removal.removed == []
    assert sql_catalog.load_table("maint.events").scan(row_filter="id = 7").to_arrow().num_rows == 1


def test_files_of_an_undecided_commit_are_held_until_the_next_commit_decides_it(sql_catalog):
    history = build_table_history(sql_catalog)
    table = history.table
    written = _plant(history.directory / "data" / "written-by-an-undecided-commit.parquet", age_days=10)
    head = table.current_snapshot()
    pending = PendingCommit(str(table.metadata.table_uuid), 123456789, "main", head.snapshot_id, "run-1")
    record = write_pending_record(
        table, new_record(table, pending, job="ingest", error=TimeoutError("no answer"), files=[f"file://{written}"])
    )
    dry = remove_orphan_files(table, dry_run=True)
    assert dry.orphans == [] and dry.held_by_pending_commits == [f"file://{written}"]
    done = remove_orphan_files(table)
    assert done.orphans == [] and written.exists() and done.as_dict()["files_held_by_pending_commits"]
    # The next commit moves the branch past the asserted parent: the commit can no longer land.
    table.append(pa.table({"id": pa.array([500], pa.int64()), "category": ["n"]}, schema=SCHEMA))
    after = remove_orphan_files(table)
    assert after.held_by_pending_commits == [] and not written.exists()
    assert not Path(record.removeprefix("file://")).exists()


def test_underscore_directories_are_listed_only_for_partition_fields_named_so(sql_catalog):
    # Java's PartitionAwareHiddenPathFilter: ``_x=...`` is a partition directory (listed) only when a spec of the
    # table has a field named ``_x``; any other name starting with ``_`` or ``.`` is hidden, ``=`` or not.
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    sql_catalog.create_namespace("maint")
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "_p", StringType()))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="_p"))
    table = sql_catalog.create_table("maint.hidden", schema=schema, partition_spec=spec)
    data = Path(table.metadata.location.removeprefix("file://")) / "data"
    listed = [
        _plant(data / "_p=a" / "stray.parquet", age_days=10),
        _plant(data / "_p=_b" / "q=x%2Fy" / "stray.parquet", age_days=10),
        _plant(data / "p=c" / "stray.parquet", age_days=10),
    ]
    for hidden in ("_q=1/stray.parquet", "_pp=1/stray.parquet", "_p=a/.stray.parquet.crc", "_p=a/_SUCCESS", ".x=1/f"):
        _plant(data / hidden, age_days=10)
    result = remove_orphan_files(table, dry_run=True)
    assert sorted(Path(o.location.removeprefix("file://")) for o in result.orphans) == sorted(listed)
