"""The driver side of a rewrite: one ``replace`` snapshot per batch of rewritten groups, validated from the start.

1. ``replace_change``: the groups' data files removed, the new files added with the STARTING snapshot's data
   sequence number (equality deletes committed after the start have higher sequence numbers, so they still apply
   to the rewritten rows; older deletes, already folded in, do not), and the delete files of
   ``plan.freed_delete_files`` removed once every planned data file they apply to is replaced (with partial
   progress: by this batch or an earlier one); a deletion vector is removed by its own entry (Puffin file and
   offset), so the vectors of data files not replaced stay live in the same Puffin file.
2. Conflict rules (``commit.conflicts``): data appended meanwhile never conflicts; position deletes added meanwhile
   that may apply to a replaced file, or a replaced file removed meanwhile, make the commit fail.
3. ``commit_group_rewrites``: validates the commits since the start on fresh metadata before the first attempt
   (the committer validates again after each lost race), then commits through ``commit.committer``. A failure
   before the commit deletes every file the batch wrote; the committer deletes them when its commit certainly did
   not land, and keeps them when the outcome is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation

from spark_jobs.engine.commit.committer import CommitError, CommitResult, commit_change
from spark_jobs.engine.commit.conflicts import validate_concurrent_commits
from spark_jobs.engine.commit.producer import delete_quietly
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.compaction.dangling_deletes import DeleteKey, delete_keys
from spark_jobs.engine.compaction.planner import FileGroup, RewritePlan
from spark_jobs.engine.shared.errors import EngineError
from spark_jobs.engine.write.file_entries import WrittenFile, to_data_file

# Snapshot summary properties a compaction commit records (Java records the same rewrite counts in its results).
REWRITTEN_GROUPS_PROPERTY = "airflow-iceberg-provider.rewritten-file-groups"
JOB_PROPERTY = "airflow-iceberg-provider.job"


@dataclass(frozen=True)
class GroupRewrite:
    """One file group and the data files its tasks wrote (descriptions from ``write.file_entries``)."""

    group: FileGroup
    written: tuple[WrittenFile, ...]

    @property
    def replaced_paths(self) -> set[str]:
        """The group's data files, which the commit removes."""
        return {candidate.path for candidate in self.group.files}


def removable_delete_locations(plan: RewritePlan, replaced_paths: Iterable[str]) -> set[str]:
    """Freed delete file locations whose every planned data file is among ``replaced_paths``."""
    keys = removable_delete_keys(plan, replaced_paths)
    return {location for location, offset in keys if offset is None}


def removable_delete_keys(plan: RewritePlan, replaced_paths: Iterable[str]) -> set[DeleteKey]:
    """Freed delete files (a deletion vector by location and offset) whose every data file is in ``replaced_paths``."""
    replaced = set(replaced_paths)
    data_files_by_key: dict[DeleteKey, set[str]] = {key: set() for key in plan.freed_delete_files}
    for group in plan.groups:
        for candidate in group.files:
            for key in delete_keys(candidate):
                if key in data_files_by_key:
                    data_files_by_key[key].add(candidate.path)
    return {key for key, data_files in data_files_by_key.items() if data_files <= replaced}


def starting_sequence_number(table: Table, plan: RewritePlan) -> int:
    """The data sequence number of the snapshot the plan was made on."""
    snapshot = table.metadata.snapshot_by_id(plan.snapshot_id) if plan.snapshot_id is not None else None
    if snapshot is None:
        raise CommitError(
            f"table {plan.table_name}: snapshot {plan.snapshot_id} the rewrite was planned on is no longer in the "
            "table's metadata; nothing committed"
        )
    return snapshot.sequence_number or 0  # None only in format v1, whose sequence numbers are all 0


def replace_change(
    table: Table, plan: RewritePlan, rewrites: list[GroupRewrite], removed_deletes: set[DeleteKey] | set[str]
) -> SnapshotChange:
    """The ``replace`` change of one batch of rewritten groups (module doc, steps 1 and 2).

    ``removed_deletes`` are delete keys (location, offset); plain locations are accepted too.
    """
    keys = {key if isinstance(key, tuple) else (key, None) for key in removed_deletes}
    return SnapshotChange(
        Operation.REPLACE,
        added_data_files=[to_data_file(item) for rewrite in rewrites for item in rewrite.written],
        removed_data_file_paths=set().union(*(rewrite.replaced_paths for rewrite in rewrites)),
        removed_delete_file_paths={location for location, offset in keys if offset is None},
        removed_deletion_vectors={(location, offset) for location, offset in keys if offset is not None},
        data_sequence_number=starting_sequence_number(table, plan),
        summary_properties={
            JOB_PROPERTY: "compact",
            REWRITTEN_GROUPS_PROPERTY: ",".join(str(rewrite.group.global_index) for rewrite in rewrites),
        },
        no_new_data_in_partitions=set(),
        no_new_deletes_for_removed_files=True,
    )


def commit_group_rewrites(
    table: Table, plan: RewritePlan, rewrites: list[GroupRewrite], *, replaced_before: Iterable[str] = ()
) -> tuple[CommitResult, set[DeleteKey]]:
    """Commit one batch (module doc, step 3); returns the result and the delete files it removed (delete keys).

    ``replaced_before`` names data files earlier batches of the same plan already replaced.
    """
    written = [item.file_path for rewrite in rewrites for item in rewrite.written]
    try:
        replaced = set(replaced_before).union(*(rewrite.replaced_paths for rewrite in rewrites))
        already_removed = removable_delete_keys(plan, replaced_before)
        removed_deletes = removable_delete_keys(plan, replaced) - already_removed
        change = replace_change(table, plan, rewrites, removed_deletes)
        table.refresh()
        validate_concurrent_commits(table, change, plan.snapshot_id)
    except BaseException as error:
        left = delete_quietly(table, written)
        if left:
            raise CommitError(
                f"rewrite of table {plan.table_name} not committed ({error}); these written files could not be "
                f"deleted: {', '.join(left)}"
            ) from error
        raise
    return commit_change(table, change, starting_snapshot_id=plan.snapshot_id, job="compact"), removed_deletes


class NothingCommittedError(EngineError):
    """Every commit of a partial-progress rewrite failed; the table is unchanged."""
