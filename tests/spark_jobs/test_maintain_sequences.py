"""Randomized sequences of writes, refs and maintenance, checked against a model of every snapshot's rows.

Each seed generates a sequence of operations over a small table partitioned by ``category`` (format
v2 or v3, by seed):

1. Writes through the engine's writers and committer, to ``main`` or to a branch: appends, overwrites of a
   partition, upserts (position deletes, or deletion vectors on v3, and the rows again), deletes by position (or
   deletion vector) or by equality on ``id``.
2. Refs through pyiceberg: main rolled back to an ancestor; branches and tags at any retained snapshot, with or
   without their own retention (``max-ref-age-ms``; on branches ``min-snapshots-to-keep`` and
   ``max-snapshot-age-ms``); the table's ``history.expire.*`` properties set or unset.
3. Maintenance of ``main``: compaction (bin-pack, sort, z-order; with and without partial progress) run in this
   process as the executors would, and the maintain job's rewrite-position-deletes, rewrite-manifests,
   expire-snapshots (varied ``--older-than`` and ``--retain-last``) and remove-orphan-files (stray files of
   several ages, default and explicit cutoffs).

The model keeps the rows of every snapshot. After each maintenance step:

1. every retained snapshot reads its model rows (by id), every ref reads the rows of the snapshot it points at
   (by name), and every time of main's history reads the snapshot main was at then, or fails when that one
   has expired;
2. every file the metadata references exists: the current and logged metadata files, and every retained
   snapshot's manifest list, manifests and live data and delete files;
3. expiry removed exactly the snapshots and refs that Iceberg Java's ``RemoveSnapshots`` rules remove, computed
   here independently from the metadata before the call, and left no file that only they referenced; its dry run
   planned the same and changed nothing;
4. orphan removal removed exactly the stray files older than its cutoff and nothing else (a young stray stands
   for a file of a write still in progress); its dry run listed the same files and removed none.

CI runs ``CI_SEEDS``; ``AIP_LIFECYCLE_SEEDS=N`` runs seeds 0..N-1 instead (``A:B``: seeds A..B-1), and
``AIP_LIFECYCLE_STEPS`` sets the length of a sequence (26). A failure names the seed, the setting that replays it
and the operations so far.
"""

from __future__ import annotations

import itertools
import os
import random
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import Table
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import Operation

from spark_jobs import maintain as maintain_job
from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.candidates import list_candidates
from spark_jobs.engine.compaction.rewrite_commit import commit_group_rewrites
from spark_jobs.engine.compaction.strategy import resolve_strategy
from spark_jobs.engine.deletes.position_deletes import load_deleted_positions
from spark_jobs.engine.maintenance.reachable_files import normalize_location, reachable_locations
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import SnapshotNotFoundError
from spark_jobs.engine.write.deletion_vector_files import (
    DeletionVectorTarget,
    merged_positions,
    write_deletion_vectors,
)
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import (
    WriteContext,
    write_data,
    write_equality_delete_rows,
    write_position_delete_rows,
)
from tests.support.referenced_files import files_that_must_exist
from tests.support.rewrite_tables import SCHEMA, SPEC, rewrite_locally, shuffle_rewrite_locally
from tests.support.seeds import seeds_from_environment

CI_SEEDS = [0, 1, 2]
STEPS = int(os.environ.get("AIP_LIFECYCLE_STEPS", "26"))


SEEDS = seeds_from_environment("AIP_LIFECYCLE_SEEDS", CI_SEEDS, range_separator=":")
CATEGORIES = "abc"
DAY_MS = 24 * 60 * 60 * 1000
TINY_MS = 1  # an age every snapshot exceeds (the test sleeps a few ms before expiring)
STRAY_AGES_MS = {"old": 4 * DAY_MS, "hours": 3 * 60 * 60 * 1000, "young": 0}

Rows = list[tuple[int, str]]


@dataclass
class Sequence:
    """The table under test, the model of every snapshot's rows, and the operations so far (for the report)."""

    table: Table
    rng: random.Random
    rows: dict[int, Rows] = field(default_factory=dict)  # snapshot id -> sorted rows
    next_id: int = 0
    ops: list[str] = field(default_factory=list)
    strays: dict[Path, int] = field(default_factory=dict)  # stray file -> its mtime (ms)
    main_log: list[tuple[int, int]] = field(default_factory=list)  # (time, snapshot id) of main, never expired

    @property
    def name(self) -> str:
        return ".".join(self.table.name())

    def reload(self) -> None:
        """The table as the catalog has it now; main's new log entries added to the model's own log."""
        self.table = self.table.catalog.load_table(self.table.name())
        known = set(self.main_log)
        self.main_log += [
            (entry.timestamp_ms, entry.snapshot_id)
            for entry in self.table.metadata.snapshot_log
            if (entry.timestamp_ms, entry.snapshot_id) not in known
        ]

    def head(self, branch: str) -> int | None:
        snapshot = self.table.metadata.snapshot_by_name(branch)
        return snapshot.snapshot_id if snapshot is not None else None

    def head_rows(self, branch: str) -> Rows:
        head = self.head(branch)
        return [] if head is None else self.rows[head]

    def branches(self) -> list[str]:
        refs = self.table.metadata.refs
        return sorted(name for name, ref in refs.items() if ref.snapshot_ref_type == SnapshotRefType.BRANCH)

    def new_ids(self, count: int) -> list[int]:
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        return ids


def _category(row_id: int) -> str:
    return CATEGORIES[row_id % len(CATEGORIES)]


def _arrow(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "category": pa.array([_category(i) for i in ids])})


def _local(location: str) -> Path:
    return Path(urlparse(location).path)


# ---- writes (the engine's writers and committer, as the ingest job commits) ----


def _commit(seq: Sequence, branch: str, change: SnapshotChange, rows: Rows) -> None:
    result = commit_change(seq.table, change, branch=branch)
    seq.reload()
    seq.rows[result.snapshot_id] = sorted(rows)


def _write(seq: Sequence, ids: list[int], tag: str) -> list:
    context = WriteContext.for_table(seq.table)
    return [to_data_file(item) for item in write_data(_arrow(ids), context, tag)] if ids else []


def _live_data_files(seq: Sequence, branch: str) -> list:
    """The data files of the branch head."""
    snapshot = seq.table.metadata.snapshot_by_name(branch)
    return [candidate.file for candidate in list_candidates(seq.table, snapshot)] if snapshot else []


def _position_deletes(seq: Sequence, branch: str, ids: set[int], tag: str) -> SnapshotChange:
    """Deletes of the rows with these ids of the branch head: position delete files (v2) or deletion vectors (v3)."""
    context = WriteContext.for_table(seq.table)
    snapshot = seq.table.metadata.snapshot_by_name(branch)
    candidates = list_candidates(seq.table, snapshot) if snapshot else []
    written, targets, required = [], [], set()
    replaced_vectors, replaced_position_deletes = set(), set()
    for candidate in candidates:
        live = candidate.file
        values = pq.read_table(_local(live.path)).column("id").to_pylist()
        positions = [pos for pos, value in enumerate(values) if value in ids]
        if not positions:
            continue
        required.add(live.path)
        if seq.table.metadata.format_version < 3:
            deletes = pa.table({"file_path": [live.path] * len(positions), "pos": positions})
            written += write_position_delete_rows(
                deletes, context, live.spec_id, tuple(live.partition), f"{tag}-{len(written)}"
            )
            continue
        existing = load_deleted_positions(live, io=seq.table.io).positions
        targets.append(
            DeletionVectorTarget(
                live.path,
                live.spec_id,
                tuple(live.partition),
                merged_positions(np.array(positions, dtype=np.int64), existing),
            )
        )
        if live.deletion_vector is not None:
            replaced_vectors.add((live.deletion_vector.path, live.deletion_vector.content_offset))
        replaced_position_deletes |= {f.path for f in live.position_deletes if f.referenced_data_file == live.path}
    if targets:
        location = context.locations.new_data_location(f"{context.write_id}-{tag}-dv.puffin")
        written += write_deletion_vectors(targets, seq.table.io, lambda: location)
    return SnapshotChange(
        Operation.DELETE,
        added_delete_files=[to_data_file(item) for item in written],
        no_new_data_in_partitions=None,
        required_data_file_paths=required,
        removed_deletion_vectors=replaced_vectors,
        removed_delete_file_paths=replaced_position_deletes,
        no_new_deletes_for_data_files=set(required) if targets else set(),
    )


def op_append(seq: Sequence, branch: str) -> None:
    ids = seq.new_ids(seq.rng.randint(3, 12))
    seq.ops.append(f"append({branch}, {len(ids)} rows)")
    files = _write(seq, ids, f"ap{len(seq.ops)}")
    _commit(
        seq, branch, SnapshotChange(Operation.APPEND, added_data_files=files), seq.head_rows(branch) + _arrow_rows(ids)
    )


def _arrow_rows(ids: list[int]) -> Rows:
    return [(i, _category(i)) for i in ids]


def op_overwrite_partition(seq: Sequence, branch: str) -> None:
    category = seq.rng.choice(CATEGORIES)
    ids = [i for i in seq.new_ids(seq.rng.randint(0, 9)) if _category(i) == category]
    seq.ops.append(f"overwrite({branch}, category={category}, {len(ids)} rows)")
    removed = {f.path for f in _live_data_files(seq, branch) if f.partition[0] == category}
    change = SnapshotChange(
        Operation.OVERWRITE, added_data_files=_write(seq, ids, f"ow{len(seq.ops)}"), removed_data_file_paths=removed
    )
    kept = [row for row in seq.head_rows(branch) if row[1] != category]
    _commit(seq, branch, change, kept + _arrow_rows(ids))


def _pick(seq: Sequence, branch: str, most: int) -> list[int]:
    ids = [row[0] for row in seq.head_rows(branch)]
    return sorted(seq.rng.sample(ids, min(len(ids), seq.rng.randint(1, most))))


def op_upsert(seq: Sequence, branch: str) -> None:
    old = _pick(seq, branch, 4)
    new = seq.new_ids(seq.rng.randint(0, 3))
    seq.ops.append(f"upsert({branch}, ids {old} + {len(new)} new)")
    change = _position_deletes(seq, branch, set(old), f"up{len(seq.ops)}")
    change.operation = Operation.OVERWRITE
    change.added_data_files = _write(seq, old + new, f"un{len(seq.ops)}")
    _commit(seq, branch, change, seq.head_rows(branch) + _arrow_rows(new))


def op_delete(seq: Sequence, branch: str) -> None:
    ids = _pick(seq, branch, 5)
    if not ids:
        return
    equality = seq.rng.random() < 0.5
    seq.ops.append(f"delete({branch}, {'equality' if equality else 'position'}, ids {ids})")
    if equality:
        context = WriteContext.for_table(seq.table)
        written = []
        for category in sorted({_category(i) for i in ids}):
            written += write_equality_delete_rows(
                pa.table({"id": pa.array([i for i in ids if _category(i) == category], pa.int64())}),
                context,
                key_names=["id"],
                spec_id=seq.table.spec().spec_id,
                partition_values=(category,),
                task_tag=f"eq{len(seq.ops)}-{category}",
            )
        change = SnapshotChange(
            Operation.DELETE, added_delete_files=[to_data_file(i) for i in written], no_new_data_in_partitions=None
        )
    else:
        change = _position_deletes(seq, branch, set(ids), f"pd{len(seq.ops)}")
    gone = set(ids)
    _commit(seq, branch, change, [row for row in seq.head_rows(branch) if row[0] not in gone])


# ---- refs and properties (pyiceberg) ----


def _retention(seq: Sequence) -> int | None:
    return seq.rng.choice([None, None, TINY_MS, DAY_MS])


def op_create_ref(seq: Sequence) -> None:
    snapshots = seq.table.metadata.snapshots
    if not snapshots:
        return
    snapshot_id = seq.rng.choice(snapshots).snapshot_id
    max_ref_age = _retention(seq)
    if seq.rng.random() < 0.5:
        name = f"t{len(seq.ops)}"
        seq.ops.append(f"create_tag({name}, at {snapshot_id}, max_ref_age_ms={max_ref_age})")
        seq.table.manage_snapshots().create_tag(snapshot_id, name, max_ref_age_ms=max_ref_age).commit()
    else:
        name = f"b{len(seq.ops)}"
        keep = seq.rng.choice([None, 1, 2, 3])
        max_age = _retention(seq)
        seq.ops.append(
            f"create_branch({name}, at {snapshot_id}, max_ref_age_ms={max_ref_age}, "
            f"min_snapshots_to_keep={keep}, max_snapshot_age_ms={max_age})"
        )
        seq.table.manage_snapshots().create_branch(
            snapshot_id, name, max_ref_age_ms=max_ref_age, max_snapshot_age_ms=max_age, min_snapshots_to_keep=keep
        ).commit()
    seq.reload()


def op_rollback(seq: Sequence) -> None:
    """Main rolled back to one of its ancestors (pyiceberg), as a user undoes a bad write."""
    metadata = seq.table.metadata
    head = metadata.current_snapshot()
    ancestors = []
    while head is not None and head.parent_snapshot_id is not None:
        head = metadata.snapshot_by_id(head.parent_snapshot_id)
        if head is not None:
            ancestors.append(head.snapshot_id)
    if not ancestors:
        return
    target = seq.rng.choice(ancestors)
    seq.ops.append(f"rollback(main, to {target})")
    seq.table.manage_snapshots().rollback_to_snapshot(target).commit()
    seq.reload()


EXPIRY_PROPERTIES = {
    "history.expire.min-snapshots-to-keep": ["1", "2", "4"],
    "history.expire.max-snapshot-age-ms": [str(TINY_MS), str(10 * DAY_MS)],
    "history.expire.max-ref-age-ms": [str(TINY_MS), str(DAY_MS)],
}


def op_set_property(seq: Sequence) -> None:
    key = seq.rng.choice(sorted(EXPIRY_PROPERTIES))
    value = seq.rng.choice([None, *EXPIRY_PROPERTIES[key]])
    seq.ops.append(f"set_property({key}={value})")
    if value is None and key not in seq.table.properties:
        return
    with seq.table.transaction() as transaction:
        if value is None:
            transaction.remove_properties(key)
        else:
            transaction.set_properties({key: value})
    seq.reload()


# ---- maintenance of main ----


def _replaced_main(seq: Sequence, before_ids: set[int], rows: Rows) -> None:
    """Every snapshot a rewrite added holds the rows main held before it."""
    seq.reload()
    for snapshot in seq.table.metadata.snapshots:
        if snapshot.snapshot_id not in before_ids:
            seq.rows[snapshot.snapshot_id] = rows


def op_compact(seq: Sequence) -> None:
    strategy_name = seq.rng.choice(["binpack", "sort", "zorder"])
    partial = seq.rng.random() < 0.5
    rewrite_all = seq.rng.random() < 0.7
    seq.ops.append(f"compact({strategy_name}, partial_progress={partial}, rewrite_all={rewrite_all})")
    sort_order = {"binpack": None, "sort": "id desc", "zorder": "zorder(id, category)"}[strategy_name]
    strategy = resolve_strategy(seq.table, None if sort_order is None else "sort", sort_order)
    options = RewriteOptions.resolve(
        seq.table.properties,
        min_input_files=2,
        rewrite_all=rewrite_all,
        partial_progress_enabled=partial,
        partial_progress_max_commits=3,
    )
    plan = plan_rewrite(seq.table, seq.table.current_snapshot(), options, strategy=strategy)
    if not plan.groups:
        return
    before_ids = {s.snapshot_id for s in seq.table.metadata.snapshots}
    rows = seq.head_rows(MAIN_BRANCH)
    rewrite = rewrite_locally if strategy_name == "binpack" else shuffle_rewrite_locally
    replaced: set[str] = set()
    per_commit = plan.groups_per_commit
    for start in range(0, len(plan.groups), per_commit):
        rewrites = rewrite(seq.table, plan, list(plan.groups[start : start + per_commit]))
        commit_group_rewrites(seq.table, plan, rewrites, replaced_before=replaced)
        replaced |= {path for item in rewrites for path in item.replaced_paths}
    _replaced_main(seq, before_ids, rows)


def _maintain(seq: Sequence, action: str, *args: str) -> dict:
    seq.ops.append(f"maintain({action} {' '.join(args)})".replace(" )", ")"))
    return maintain_job.main([action, "--catalog", "testing", "--table", seq.name, *args])


def op_rewrite_position_deletes(seq: Sequence) -> None:
    before_ids = {s.snapshot_id for s in seq.table.metadata.snapshots}
    rows = seq.head_rows(MAIN_BRANCH)
    args = ["--rewrite-all"] if seq.rng.random() < 0.7 else ["--min-input-files", "2"]
    if seq.rng.random() < 0.4:
        args += ["--partial-progress", "--max-commits", "2"]
    _maintain(seq, "rewrite-position-deletes", *args)
    _replaced_main(seq, before_ids, rows)


def op_rewrite_manifests(seq: Sequence) -> None:
    before_ids = {s.snapshot_id for s in seq.table.metadata.snapshots}
    rows = seq.head_rows(MAIN_BRANCH)
    _maintain(seq, "rewrite-manifests")
    _replaced_main(seq, before_ids, rows)


def op_expire(seq: Sequence) -> None:
    time.sleep(0.005)  # every snapshot older than TINY_MS
    snapshots = seq.table.metadata.snapshots
    args: list[str] = []
    choice = seq.rng.random()
    if choice < 0.45 and snapshots:
        args += ["--older-than", str(seq.rng.choice(snapshots).timestamp_ms)]
    elif choice < 0.8:
        args += ["--older-than", str(int(time.time() * 1000) + 60_000)]
    if seq.rng.random() < 0.6:
        args += ["--retain-last", str(seq.rng.randint(1, 4))]
    before = seq.table.metadata
    older_than = int(args[args.index("--older-than") + 1]) if "--older-than" in args else None
    retain_last = int(args[args.index("--retain-last") + 1]) if "--retain-last" in args else None
    expected_snapshots, expected_refs = java_expiration(before, older_than, retain_last, int(time.time() * 1000))
    if seq.rng.random() < 0.3:  # a dry run first: the same plan, and nothing changes
        location = _local(before.location)
        files = {p for p in location.rglob("*") if p.is_file()}
        metadata_location = seq.table.metadata_location
        planned = _maintain(seq, "expire-snapshots", *args, "--dry-run")
        assert set(planned["expired_snapshot_ids"]) == expected_snapshots
        assert set(planned["removed_refs"]) == expected_refs
        assert {p for p in location.rglob("*") if p.is_file()} == files
        seq.reload()
        assert seq.table.metadata_location == metadata_location, "a dry run committed"
    unreferenced_before = _unreferenced_files(seq)
    result = _maintain(seq, "expire-snapshots", *args)
    seq.reload()
    after = seq.table.metadata
    left = _unreferenced_files(seq) - unreferenced_before
    assert not left, f"expiry left files only expired snapshots referenced: {sorted(map(str, left))}"
    gone = {s.snapshot_id for s in before.snapshots} - {s.snapshot_id for s in after.snapshots}
    assert gone == expected_snapshots, f"expired {sorted(gone)}, Java's rules expire {sorted(expected_snapshots)}"
    assert set(before.refs) - set(after.refs) == expected_refs, (
        f"refs removed {sorted(set(before.refs) - set(after.refs))}, Java's rules remove {sorted(expected_refs)}"
    )
    assert sorted(result["expired_snapshot_ids"]) == sorted(gone)
    for snapshot_id in gone:
        seq.rows.pop(snapshot_id, None)


def op_remove_orphans(seq: Sequence) -> None:
    location = _local(seq.table.metadata.location)
    now_ms = int(time.time() * 1000)
    for _ in range(seq.rng.randint(1, 3)):
        age = seq.rng.choice(sorted(STRAY_AGES_MS))
        folder = seq.rng.choice(["data", f"data/category={seq.rng.choice(CATEGORIES)}", "metadata", "stray-dir"])
        path = location / folder / f"stray-{len(seq.ops)}-{len(seq.strays)}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left behind")
        mtime_ms = now_ms - STRAY_AGES_MS[age]
        os.utime(path, (mtime_ms / 1000, mtime_ms / 1000))
        seq.strays[path] = mtime_ms
    if seq.rng.random() < 0.5:
        cutoff, args = now_ms - 3 * DAY_MS, []
    else:
        cutoff = now_ms - 60 * 60 * 1000
        args = ["--older-than", str(cutoff), "--allow-short-retention"]
    files_before = {p for p in location.rglob("*") if p.is_file()}
    planned = _maintain(seq, "remove-orphan-files", *args, "--dry-run")
    assert {p for p in location.rglob("*") if p.is_file()} == files_before
    _maintain(seq, "remove-orphan-files", *args)
    files_after = {p for p in location.rglob("*") if p.is_file()}
    expected = {path for path, mtime in seq.strays.items() if mtime < cutoff and path in files_before}
    assert files_before - files_after == expected, (
        f"removed {sorted(map(str, files_before - files_after))}, expected the old strays {sorted(map(str, expected))}"
    )
    assert {_local(location_) for location_ in planned["orphan_file_locations"]} == expected
    for path in expected:
        del seq.strays[path]


# ---- Java's expiry rules, written independently of the engine (RemoveSnapshots.internalApply) ----


def java_expiration(
    metadata, older_than: int | None, retain_last: int | None, now_ms: int
) -> tuple[set[int], set[str]]:
    """The snapshot ids and ref names Iceberg Java's ``RemoveSnapshots`` removes from ``metadata``."""
    properties = metadata.properties
    default_older_than = (
        older_than
        if older_than is not None
        else now_ms - int(properties.get("history.expire.max-snapshot-age-ms", 5 * DAY_MS))
    )
    default_keep = (
        retain_last if retain_last is not None else int(properties.get("history.expire.min-snapshots-to-keep", 1))
    )
    default_ref_age = (
        int(properties["history.expire.max-ref-age-ms"]) if "history.expire.max-ref-age-ms" in properties else None
    )
    by_id = {s.snapshot_id: s for s in metadata.snapshots}

    def ancestors(snapshot_id: int):
        current = by_id.get(snapshot_id)
        while current is not None:
            yield current
            current = by_id.get(current.parent_snapshot_id) if current.parent_snapshot_id is not None else None

    retained_refs = {}
    for name, ref in metadata.refs.items():
        snapshot = by_id.get(ref.snapshot_id)
        max_ref_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_ref_age
        if name == MAIN_BRANCH or (
            snapshot is not None and (max_ref_age is None or now_ms - snapshot.timestamp_ms <= max_ref_age)
        ):
            retained_refs[name] = ref
    keep = {ref.snapshot_id for ref in retained_refs.values()}
    referenced = set()
    for ref in retained_refs.values():
        if ref.snapshot_ref_type != SnapshotRefType.BRANCH:
            referenced.add(ref.snapshot_id)
            continue
        branch_older_than = (
            now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else default_older_than
        )
        branch_keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else default_keep
        on_branch: set[int] = set()
        for ancestor in ancestors(ref.snapshot_id):
            referenced.add(ancestor.snapshot_id)
        for ancestor in ancestors(ref.snapshot_id):
            if len(on_branch) < branch_keep or ancestor.timestamp_ms >= branch_older_than:
                on_branch.add(ancestor.snapshot_id)
            else:
                break
        keep |= on_branch
    keep |= {
        s.snapshot_id
        for s in metadata.snapshots
        if s.snapshot_id not in referenced and s.timestamp_ms >= default_older_than
    }
    return set(by_id) - keep, set(metadata.refs) - set(retained_refs)


# ---- the checks after each maintenance step ----


def _read(seq: Sequence, **target) -> Rows:
    data = open_read_session(seq.table.catalog, seq.table, **target).to_arrow()
    return sorted(zip(data.column("id").to_pylist(), data.column("category").to_pylist(), strict=True))


def check_table(seq: Sequence) -> None:
    """Checks 1 and 2 of the module docstring."""
    seq.reload()
    metadata = seq.table.metadata
    for snapshot in metadata.snapshots:
        assert _read(seq, snapshot_id=snapshot.snapshot_id) == seq.rows[snapshot.snapshot_id], (
            f"snapshot {snapshot.snapshot_id} does not read its rows"
        )
    for name, ref in metadata.refs.items():
        if name != MAIN_BRANCH:
            assert _read(seq, ref=name) == seq.rows[ref.snapshot_id], f"ref {name} does not read its rows"
    check_time_travel(seq)
    missing = [location for location in files_that_must_exist(seq.table) if not _local(location).exists()]
    assert not missing, f"files the metadata references are gone: {missing}"


def check_time_travel(seq: Sequence) -> None:
    """As of each time of main's history (the model's log, which expiry does not shorten), a read returns the rows
    of the snapshot main was at then; when that snapshot has expired it fails. When the snapshot is retained, a
    failure is allowed too: Iceberg Java drops the log entries before an expired one."""
    commit_times = [t for t, _ in seq.main_log]
    times = sorted({*commit_times, *((a + b) // 2 for a, b in itertools.pairwise(commit_times))})
    for at in times:
        expected = [snapshot_id for t, snapshot_id in seq.main_log if t <= at][-1]
        retained = seq.table.metadata.snapshot_by_id(expected) is not None
        try:
            rows = _read(seq, as_of=at)
        except SnapshotNotFoundError:
            continue
        assert retained, f"as of {at} main was at expired snapshot {expected}, yet a read returned {len(rows)} rows"
        assert rows == seq.rows[expected], f"as of {at} does not read snapshot {expected}"


def _unreferenced_files(seq: Sequence) -> set[Path]:
    """Data, delete, manifest and manifest list files under the table location that no metadata references."""
    table = seq.table
    reachable = {normalize_location(x) for x in reachable_locations(table.metadata, table.metadata_location, table.io)}
    return {
        path
        for path in _local(table.metadata.location).rglob("*")
        if path.is_file()
        and not path.name.endswith(".metadata.json")
        and path not in seq.strays
        and normalize_location(f"file://{path}") not in reachable
    }


# ---- the generator ----

WRITES = [op_append, op_append, op_upsert, op_delete, op_delete, op_overwrite_partition]
MAINTENANCE = [op_compact, op_rewrite_position_deletes, op_rewrite_manifests, op_expire, op_expire, op_remove_orphans]


def start_sequence(catalog, seed: int) -> Sequence:
    """A new table in a namespace of its own, and the sequence of ``seed`` ready to run on it."""
    namespace = f"life_{uuid.uuid4().hex[:10]}"
    catalog.create_namespace(namespace)
    rng = random.Random(seed)
    version = rng.choice(["2", "3"])
    if version == "3":
        allow_v3_metadata_writes()  # pyiceberg writes v3 metadata (refs, properties) through the engine's serializer
    properties = {"format-version": version}
    table = catalog.create_table(f"{namespace}.events", SCHEMA, partition_spec=SPEC, properties=properties)
    seq = Sequence(table, rng)
    seq.ops.append(f"create_table(format-version={version})")
    return seq


def run_sequence(seq: Sequence) -> None:
    """Run the generated operations, checking after each maintenance step and after a last expiry."""
    rng = seq.rng
    for _ in range(3):
        op_append(seq, MAIN_BRANCH)
    for _ in range(STEPS):
        kind = rng.random()
        if kind < 0.5:
            branch = rng.choice([MAIN_BRANCH, MAIN_BRANCH, *seq.branches()])
            rng.choice(WRITES)(seq, branch)
        elif kind < 0.62:
            op_create_ref(seq)
        elif kind < 0.66:
            op_set_property(seq)
        elif kind < 0.69:
            op_rollback(seq)
        else:
            rng.choice(MAINTENANCE)(seq)
            check_table(seq)
    op_expire(seq)
    check_table(seq)


@pytest.mark.parametrize("seed", SEEDS)
def test_sequence_of_writes_refs_and_maintenance_keeps_every_retained_snapshot(testing_catalog, seed):
    seq = start_sequence(testing_catalog, seed)
    try:
        run_sequence(seq)
    except Exception as error:
        steps = "\n".join(f"  {index}. {op}" for index, op in enumerate(seq.ops, 1))
        raise AssertionError(
            f"seed {seed} failed at operation {len(seq.ops)} ({type(error).__name__}: {error}); "
            f"AIP_LIFECYCLE_SEEDS={seed}:{seed + 1} AIP_LIFECYCLE_STEPS={STEPS} replays it. Operations:\n{steps}"
        ) from error
