"""Expire old snapshots and delete the files only they referenced, by Iceberg Java's rules (``RemoveSnapshots``).

Which snapshots stay (Java's ``internalApply``):

0. Nothing when the table's ``gc.enabled`` is false: its files may be shared with other tables (Java refuses too).
   Nothing when the table cannot be read whole (a manifest list or manifest missing or damaged): it is refused before
   anything is committed or deleted, ``--dry-run`` included.
1. A ref other than ``main`` whose snapshot is older than the ref's ``max-ref-age-ms`` (default: the table's
   ``history.expire.max-ref-age-ms``, else forever) is dropped. Every other ref (branch or tag) is kept, and so is
   the snapshot it points at.
2. Along each kept branch, from its head through its ancestors, a snapshot is kept while fewer than ``retain_last``
   (the branch's ``min-snapshots-to-keep`` when set) are kept or its timestamp is at or after ``older_than``
   (now minus the branch's ``max-snapshot-age-ms`` when set); the first one that fails ends the walk.
3. A snapshot no kept ref reaches is kept when its timestamp is at or after ``older_than``.
4. All others expire. Defaults as Java: ``older_than`` now minus ``history.expire.max-snapshot-age-ms`` (5 days),
   ``retain_last`` ``history.expire.min-snapshots-to-keep`` (1).

The commit is pyiceberg's ``RemoveSnapshotRefUpdate`` for each dropped ref and ``RemoveSnapshotsUpdate`` (it
removes the snapshots, their log entries and statistics entries, and deletes no file), plus a
``RemovePartitionStatisticsUpdate`` per partition statistics file of an expired snapshot (pyiceberg's
``RemoveSnapshotsUpdate`` leaves those entries, and so their files, behind; Java removes both), with requirements
that every ref still points where it pointed when the snapshots were chosen. pyiceberg removes only the expired
snapshots' entries from the snapshot log, where Java drops every entry before them as well; the same commit records the
time of the last removed entry (``table.snapshots.EXPIRED_LOG_PROPERTY``) so that reads as of a time up to it fail
as Java's do instead of resolving to an older entry. pyiceberg's own ``ExpireSnapshots`` builder
asserts nothing, so a branch that moved meanwhile would not be noticed; here a lost race reloads the table and
chooses again, up to ``COMMIT_ATTEMPTS`` times, and nothing is deleted before a commit is known to have landed (a
call without an answer is decided from the reloaded table, as ``commit.outcome`` does for snapshots). Then the
files are cleaned as Java's ``ReachableFileCleanup`` does, comparing the metadata the commit was based on with the
metadata after it:

1. The manifest lists of expired snapshots.
2. Manifests of expired snapshots that no remaining snapshot lists.
3. Data and delete files live in those manifests and live in no manifest of a remaining snapshot.
4. Statistics files whose entries the commit removed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.table.update import (
    AssertRefSnapshotId,
    AssertTableUUID,
    RemovePartitionStatisticsUpdate,
    RemoveSnapshotRefUpdate,
    RemoveSnapshotsUpdate,
    SetPropertiesUpdate,
    TableRequirement,
    TableUpdate,
)

from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes
from spark_jobs.engine.commit.outcome import ReloadFailedError, StatusCheck, reload_with_retries
from spark_jobs.engine.maintenance.file_removal import RemovalOutcome, remove_files
from spark_jobs.engine.maintenance.reachable_files import (
    ManifestContents,
    live_content_files,
    manifests_of,
    read_whole,
)
from spark_jobs.engine.shared.errors import EngineError, UserInputError
from spark_jobs.engine.table.properties import int_property
from spark_jobs.engine.table.snapshots import EXPIRED_LOG_PROPERTY

log = logging.getLogger(__name__)
MAX_SNAPSHOT_AGE_PROPERTY = "history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS_TO_KEEP_PROPERTY = "history.expire.min-snapshots-to-keep"
MAX_REF_AGE_PROPERTY = "history.expire.max-ref-age-ms"
GC_ENABLED_PROPERTY = "gc.enabled"
DEFAULT_MAX_SNAPSHOT_AGE_MS = 5 * 24 * 60 * 60 * 1000
DEFAULT_MIN_SNAPSHOTS_TO_KEEP = 1
COMMIT_ATTEMPTS = 4


@dataclass(frozen=True)
class ExpiredFiles:
    """The files an expiration removes, by kind (locations as the metadata spells them)."""

    manifest_lists: frozenset[str]
    manifests: frozenset[str]
    data_files: frozenset[str]
    position_delete_files: frozenset[str]
    equality_delete_files: frozenset[str]
    statistics_files: frozenset[str]

    def all(self) -> set[str]:
        """Every location, for deletion."""
        return {
            *self.manifest_lists,
            *self.manifests,
            *self.data_files,
            *self.position_delete_files,
            *self.equality_delete_files,
            *self.statistics_files,
        }

    def counts(self) -> dict[str, int]:
        """How many of each kind, named as Java's ExpireSnapshots result."""
        return {
            "deleted_data_files": len(self.data_files),
            "deleted_position_delete_files": len(self.position_delete_files),
            "deleted_equality_delete_files": len(self.equality_delete_files),
            "deleted_manifests": len(self.manifests),
            "deleted_manifest_lists": len(self.manifest_lists),
            "deleted_statistics_files": len(self.statistics_files),
        }


@dataclass(frozen=True)
class ExpirationResult:
    """What an expiration did (or, in a dry run, would do)."""

    expired_snapshot_ids: list[int]
    retained_snapshot_ids: list[int]
    files: ExpiredFiles
    removal: RemovalOutcome | None  # None in a dry run
    removed_refs: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The result as the maintain job's JSON."""
        result: dict[str, Any] = {
            "expired_snapshot_ids": self.expired_snapshot_ids,
            "retained_snapshot_ids": self.retained_snapshot_ids,
            "removed_refs": self.removed_refs,
            **self.files.counts(),
        }
        if self.removal is not None:
            result["files_already_gone"] = len(self.removal.already_gone)
            result["files_failed"] = self.removal.failed
        return result


@dataclass(frozen=True)
class ExpirationChoice:
    """What an expiration removes: snapshot ids (oldest first) and the names of refs past their max age."""

    snapshot_ids: list[int]
    ref_names: list[str]


def snapshots_to_expire(table: Table, *, older_than_ms: int | None = None, retain_last: int | None = None) -> list[int]:
    """Ids of the snapshots Java's rules expire (steps 0-4 of the module docstring), oldest first."""
    return choose_expiration(table, older_than_ms=older_than_ms, retain_last=retain_last).snapshot_ids


def choose_expiration(
    table: Table, *, older_than_ms: int | None = None, retain_last: int | None = None
) -> ExpirationChoice:
    """The snapshots and refs Java's rules remove (steps 0-4 of the module docstring)."""
    metadata = table.metadata
    properties = table.properties
    check_gc_enabled(table, "expire snapshots")
    now_ms = int(time.time() * 1000)
    if older_than_ms is None:
        older_than_ms = now_ms - int_property(
            properties,
            MAX_SNAPSHOT_AGE_PROPERTY,
            DEFAULT_MAX_SNAPSHOT_AGE_MS,
            expected="an integer number of milliseconds",
        )
    if retain_last is None:
        retain_last = int_property(properties, MIN_SNAPSHOTS_TO_KEEP_PROPERTY, DEFAULT_MIN_SNAPSHOTS_TO_KEEP)
    if retain_last < 1:
        raise UserInputError(f"retain-last must be at least 1, got {retain_last}")
    default_max_ref_age_ms = int_property(
        properties, MAX_REF_AGE_PROPERTY, None, expected="an integer number of milliseconds"
    )
    retained: set[int] = set()
    reachable_from_refs: set[int] = set()
    removed_refs: list[str] = []
    for name, ref in sorted(metadata.refs.items()):
        snapshot = metadata.snapshot_by_id(ref.snapshot_id)
        max_ref_age_ms = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_max_ref_age_ms
        too_old = max_ref_age_ms is not None and now_ms - snapshot.timestamp_ms > max_ref_age_ms if snapshot else False
        if name != MAIN_BRANCH and too_old:
            removed_refs.append(name)
            continue
        retained.add(ref.snapshot_id)
        if ref.snapshot_ref_type != SnapshotRefType.BRANCH:
            reachable_from_refs.add(ref.snapshot_id)
            continue
        branch_older_than = now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else older_than_ms
        branch_keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else retain_last
        ancestors = _ancestors(metadata, ref.snapshot_id)
        reachable_from_refs.update(ancestor.snapshot_id for ancestor in ancestors)
        kept_on_branch: set[int] = set()
        for ancestor in ancestors:
            if len(kept_on_branch) < branch_keep or ancestor.timestamp_ms >= branch_older_than:
                kept_on_branch.add(ancestor.snapshot_id)
            else:
                break
        retained |= kept_on_branch
    for snapshot in metadata.snapshots:
        if snapshot.snapshot_id not in reachable_from_refs and snapshot.timestamp_ms >= older_than_ms:
            retained.add(snapshot.snapshot_id)
    ordered = sorted(metadata.snapshots, key=lambda snapshot: (snapshot.timestamp_ms, snapshot.sequence_number or 0))
    return ExpirationChoice([s.snapshot_id for s in ordered if s.snapshot_id not in retained], removed_refs)


def check_gc_enabled(table: Table, action: str) -> None:
    """Refuse to delete a table's files when its ``gc.enabled`` is false, as Iceberg Java does."""
    if str(table.properties.get(GC_ENABLED_PROPERTY, "true")).strip().lower() == "false":
        raise UserInputError(
            f"cannot {action} of table {'.'.join(table.name())}: table property {GC_ENABLED_PROPERTY} is false "
            "(its files may be shared with other tables, so deleting them could corrupt those)"
        )


def expire_snapshots(
    table: Table, *, older_than_ms: int | None = None, retain_last: int | None = None, dry_run: bool = False
) -> ExpirationResult:
    """Expire by Java's rules, commit, then delete what only expired snapshots referenced (nothing in a dry run).

    The table is read whole first (every manifest list and manifest): one that is missing or damaged fails the
    expiry (CorruptFileError) before anything is committed or deleted.
    """
    check_gc_enabled(table, "expire snapshots")
    known = read_whole(table.metadata.snapshots, table.io, ".".join(table.name()))
    if dry_run:
        choice = choose_expiration(table, older_than_ms=older_than_ms, retain_last=retain_last)
        before = table.metadata
        after_snapshots = [s for s in before.snapshots if s.snapshot_id not in set(choice.snapshot_ids)]
        files = files_to_clean(table, before, before.snapshots, after_snapshots, after=None, known=known)
        return ExpirationResult(
            choice.snapshot_ids, [s.snapshot_id for s in after_snapshots], files, None, choice.ref_names
        )
    if table.metadata.format_version >= 3:
        allow_v3_metadata_writes()  # pyiceberg writes the new metadata file; v3 needs our serializer
    before, after = _commit_expiration(table, older_than_ms, retain_last)
    files = files_to_clean(table, before, before.snapshots, after.snapshots, after=after, known=known)
    removal = remove_files(table.io, files.all()) if files.all() else RemovalOutcome()
    after_ids = {snapshot.snapshot_id for snapshot in after.snapshots}
    expired = [snapshot.snapshot_id for snapshot in before.snapshots if snapshot.snapshot_id not in after_ids]
    removed_refs = sorted(name for name in before.refs if name not in after.refs)
    return ExpirationResult(expired, sorted(after_ids), files, removal, removed_refs)


def _commit_expiration(
    table: Table, older_than_ms: int | None, retain_last: int | None
) -> tuple[TableMetadata, TableMetadata]:
    """Choose and remove the expired snapshots, retrying on fresh metadata when a ref moved meanwhile.

    Returns the metadata the successful commit was based on and the metadata after it (the same when nothing
    expires). A catalog call without an answer is decided from the reloaded table: the chosen snapshots gone means
    it landed (whoever removed them, what only they referenced is unreferenced now); otherwise they are chosen
    again. When the table cannot be reloaded, nothing is deleted and the error says so.
    """
    last_error: Exception | None = None
    for _ in range(COMMIT_ATTEMPTS):
        before = table.metadata
        choice = choose_expiration(table, older_than_ms=older_than_ms, retain_last=retain_last)
        if not choice.snapshot_ids and not choice.ref_names:
            return before, before
        requirements: tuple[TableRequirement, ...] = (
            AssertTableUUID(uuid=before.table_uuid),
            *(AssertRefSnapshotId(ref=name, snapshot_id=ref.snapshot_id) for name, ref in before.refs.items()),
        )
        updates: list[TableUpdate] = [RemoveSnapshotRefUpdate(ref_name=name) for name in choice.ref_names]
        if choice.snapshot_ids:
            updates.append(RemoveSnapshotsUpdate(snapshot_ids=choice.snapshot_ids))
            expired_ids = set(choice.snapshot_ids)
            updates += [
                RemovePartitionStatisticsUpdate(snapshot_id=snapshot_id)
                for snapshot_id in sorted({s.snapshot_id for s in before.partition_statistics} & expired_ids)
            ]
            updates += _expired_log_update(before, choice.snapshot_ids)
        try:
            response = table.catalog.commit_table(table, requirements, tuple(updates))
        except CommitFailedException as error:
            last_error = error
            table.refresh()
            continue
        except Exception as error:
            last_error = error
            if _expiration_landed(table, choice, error):
                return before, table.metadata
            continue
        table.metadata = response.metadata
        table.metadata_location = response.metadata_location
        return before, table.metadata
    raise EngineError(
        f"expiring snapshots of {'.'.join(table.name())} failed {COMMIT_ATTEMPTS} times (refs kept moving or the "
        f"catalog did not answer); no snapshot was expired and no file deleted; last error: {last_error}"
    )


def _expired_log_update(metadata: TableMetadata, expired_ids: list[int]) -> list[TableUpdate]:
    """Record the time of the last log entry the expiry removes, as ``EXPIRED_LOG_PROPERTY`` (module doc, commit)."""
    expired = set(expired_ids)
    times = [entry.timestamp_ms for entry in metadata.snapshot_log if entry.snapshot_id in expired]
    if not times:
        return []
    recorded = metadata.properties.get(EXPIRED_LOG_PROPERTY)
    through = max(*times, int(recorded) if recorded and recorded.isdigit() else 0)
    return [SetPropertiesUpdate(updates={EXPIRED_LOG_PROPERTY: str(through)})]


def _expiration_landed(table: Table, choice: ExpirationChoice, error: Exception) -> bool:
    """Whether the snapshots and refs are gone from the reloaded table (``commit.outcome``'s status check)."""
    expired_ids = choice.snapshot_ids
    name = ".".join(table.name())
    log.warning("expiring snapshots of %s: the catalog did not answer (%s); reloading to decide", name, error)
    try:
        reload_with_retries(table, StatusCheck.of(table.metadata.properties))
    except ReloadFailedError as reload_error:
        raise EngineError(
            f"expiring {len(expired_ids)} snapshot(s) of table {name}: outcome unknown ({type(error).__name__}, "
            f"then the reload failed: {type(reload_error.__cause__).__name__}); no file deleted; files only they "
            "referenced are orphans for remove-orphan-files if it landed; run expire-snapshots again"
        ) from error
    return not any(table.metadata.snapshot_by_id(snapshot_id) is not None for snapshot_id in expired_ids) and not any(
        name in table.metadata.refs for name in choice.ref_names
    )


def files_to_clean(
    table: Table,
    before: TableMetadata,
    snapshots_before: list[Snapshot],
    snapshots_after: list[Snapshot],
    *,
    after: TableMetadata | None,
    known: Mapping[str, ManifestContents] | None = None,
) -> ExpiredFiles:
    """Files referenced only by the snapshots that are gone after the expiration (Java's ReachableFileCleanup);
    manifests in ``known`` (``read_whole``) are not read again."""
    after_ids = {snapshot.snapshot_id for snapshot in snapshots_after}
    expired = [snapshot for snapshot in snapshots_before if snapshot.snapshot_id not in after_ids]
    manifest_lists = frozenset(s.manifest_list for s in expired if s.manifest_list)
    candidate_manifests = manifests_of(expired, table.io)
    retained_manifests = manifests_of(snapshots_after, table.io) if candidate_manifests else {}
    manifests_to_delete = {path: m for path, m in candidate_manifests.items() if path not in retained_manifests}
    content: dict[str, DataFileContent] = {}
    if manifests_to_delete:
        content = live_content_files(manifests_to_delete.values(), table.io, known)
        still_live = live_content_files(retained_manifests.values(), table.io, known)
        content = {path: kind for path, kind in content.items() if path not in still_live}
    statistics_after = (
        {s.statistics_path for s in [*after.statistics, *after.partition_statistics]}
        if after is not None
        else {
            s.statistics_path for s in [*before.statistics, *before.partition_statistics] if s.snapshot_id in after_ids
        }
    )
    statistics_before = {s.statistics_path for s in [*before.statistics, *before.partition_statistics]}
    return ExpiredFiles(
        manifest_lists=manifest_lists,
        manifests=frozenset(manifests_to_delete),
        data_files=frozenset(p for p, kind in content.items() if kind == DataFileContent.DATA),
        position_delete_files=frozenset(p for p, kind in content.items() if kind == DataFileContent.POSITION_DELETES),
        equality_delete_files=frozenset(p for p, kind in content.items() if kind == DataFileContent.EQUALITY_DELETES),
        statistics_files=frozenset(statistics_before - statistics_after),
    )


def _ancestors(metadata: TableMetadata, snapshot_id: int) -> list[Snapshot]:
    """The snapshot and its ancestors, newest first, while the metadata still holds them."""
    chain: list[Snapshot] = []
    current = metadata.snapshot_by_id(snapshot_id)
    while current is not None:
        chain.append(current)
        parent_id = current.parent_snapshot_id
        current = metadata.snapshot_by_id(parent_id) if parent_id is not None else None
    return chain
