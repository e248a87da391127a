"""Rewrite a table's position delete files into fewer, as Iceberg Java's ``rewrite_position_delete_files`` does.

Java's ``BinPackRewritePositionDeletePlanner`` and ``SparkRewritePositionDeleteRunner``:

1. Candidates: the current snapshot's position delete files (not deletion vectors) in partitions that may match
   ``where``, grouped by partition (spec and partition values).
2. Per partition, as the data file rewrite: files outside ``[min-file-size-bytes, max-file-size-bytes]`` are taken
   (all with ``rewrite-all``), packed in order into groups of at most ``max-file-group-size-bytes``, and a group is
   kept when it has enough files (more than one and at least ``min-input-files``), enough content (more than one
   file and more than the target) or too much content (more than the max). Sizes default from
   ``write.delete.target-file-size-bytes`` (64 MiB). Groups are ordered by ``rewrite-job-order``.
3. Each group's positions are read, those naming a data file that is no longer live in the partition are dropped,
   and the rest are written sorted by (file_path, pos), duplicates once, into files rolled at the writer max size.
   A group left with no position is replaced by nothing.
4. Also removed: position delete files of the candidates that apply to no live data file (``dangling``), whatever
   their size.
5. One ``replace`` snapshot (or one per batch with partial progress) removes the old files and adds the new ones,
   each new file with the newest data sequence number of the files its group replaces, so it applies to exactly
   the data files they applied to. A concurrent commit that removed one of the old files fails it cleanly (with
   partial progress, that batch only: the others still commit).

On a format v3 table, row-level deletes are deletion vectors, which are already one per data file and need no
rewrite; Java rewrites only v2 position delete files left from before the upgrade (into deletion vectors).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.expressions import BooleanExpression
from pyiceberg.manifest import DataFileContent, FileFormat, ManifestContent, ManifestEntry
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation

from spark_jobs.engine.commit.committer import CommitResult, commit_change
from spark_jobs.engine.commit.producer import delete_quietly
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.compaction.bin_packing import ListPacker
from spark_jobs.engine.compaction.dangling_deletes import find_dangling_deletes
from spark_jobs.engine.compaction.options import (
    check_partial_progress,
    check_rewrite_job_order,
    check_sizes,
    require_option,
)
from spark_jobs.engine.compaction.planner import order_by_job_order
from spark_jobs.engine.maintenance.reachable_files import read_whole
from spark_jobs.engine.planning.delete_index import PartitionKey, partition_key
from spark_jobs.engine.planning.manifest_pruning import ManifestPruner
from spark_jobs.engine.planning.scan_planner import bind_row_filter
from spark_jobs.engine.shared.errors import EngineError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_entries import read_live_entries
from spark_jobs.engine.write.file_entries import WrittenFile, to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_position_delete_rows

DELETE_TARGET_SIZE_PROPERTY = "write.delete.target-file-size-bytes"
DEFAULT_DELETE_TARGET_SIZE = 64 * 1024 * 1024
JOB_PROPERTY = "airflow-iceberg-provider.job"


class NothingCommittedError(EngineError):
    """Every batch of a partial-progress rewrite failed; the table is unchanged."""


@dataclass(frozen=True)
class PositionDeleteRewriteOptions:
    """Java's options of ``rewrite_position_delete_files`` (names in snake case), checked as Java checks them."""

    target_file_size_bytes: int
    min_file_size_bytes: int
    max_file_size_bytes: int
    min_input_files: int = 5
    max_file_group_size_bytes: int = 100 * 1024 * 1024 * 1024
    rewrite_all: bool = False
    rewrite_job_order: str = "none"
    partial_progress_enabled: bool = False
    partial_progress_max_commits: int = 10

    def __post_init__(self) -> None:
        check_sizes(self.target_file_size_bytes, self.min_file_size_bytes, self.max_file_size_bytes)
        require_option(self.min_input_files > 0, "min-input-files", self.min_input_files, "must be > 0")
        require_option(
            self.max_file_group_size_bytes > 0,
            "max-file-group-size-bytes",
            self.max_file_group_size_bytes,
            "must be > 0",
        )
        check_partial_progress(self.partial_progress_enabled, self.partial_progress_max_commits)
        check_rewrite_job_order(self.rewrite_job_order)

    @classmethod
    def resolve(cls, table_properties: dict[str, str], **given: Any) -> PositionDeleteRewriteOptions:
        """Explicit values (None: not given), else the table's delete target size and Java's defaults."""
        target = given.pop("target_file_size_bytes", None)
        if target is None:
            target = int(table_properties.get(DELETE_TARGET_SIZE_PROPERTY, DEFAULT_DELETE_TARGET_SIZE))
        minimum = given.pop("min_file_size_bytes", None)
        maximum = given.pop("max_file_size_bytes", None)
        return cls(
            target,
            int(target * 0.75) if minimum is None else minimum,
            int(target * 1.8) if maximum is None else maximum,
            **{name: value for name, value in given.items() if value is not None},
        )

    @property
    def write_max_file_size(self) -> int:
        """Where the writer rolls a file: halfway between the target and the max (Java's ``writeMaxFileSize``)."""
        return int(self.target_file_size_bytes + (self.max_file_size_bytes - self.target_file_size_bytes) * 0.5)

    def as_dict(self) -> dict[str, Any]:
        """Options under Java's names."""
        named = {}
        for key, value in self.__dict__.items():
            name = key.replace("_", "-")
            if key.startswith("partial_progress_"):
                name = "partial-progress." + key.removeprefix("partial_progress_").replace("_", "-")
            named[name] = value
        return named


@dataclass(frozen=True)
class DeleteFileGroup:
    """Position delete files of one partition rewritten together."""

    global_index: int
    partition_index: int
    partition: PartitionKey
    files: tuple[ManifestEntry, ...]

    @property
    def input_bytes(self) -> int:
        """Size of the group's delete files."""
        return sum(entry.data_file.file_size_in_bytes for entry in self.files)

    @property
    def max_data_sequence_number(self) -> int:
        """The newest data sequence number among the group's files: what the new files are committed with."""
        return max(entry.sequence_number or 0 for entry in self.files)


@dataclass(frozen=True)
class PositionDeleteRewritePlan:
    """The groups to rewrite and the dangling files to drop, planned on one snapshot."""

    table_name: str
    snapshot_id: int | None
    format_version: int
    options: PositionDeleteRewriteOptions
    candidate_files: int
    groups: tuple[DeleteFileGroup, ...] = ()
    dangling: tuple[str, ...] = ()  # candidate files (not in a group) that apply to no live data file
    deletion_vectors: int = 0  # live DVs of the snapshot (v3), which need no rewrite

    @property
    def groups_per_commit(self) -> int:
        """All groups in one commit, or ``ceil(groups / max-commits)`` with partial progress."""
        if not self.options.partial_progress_enabled:
            return max(len(self.groups), 1)
        return max(-(-len(self.groups) // self.options.partial_progress_max_commits), 1)

    def as_dict(self) -> dict[str, Any]:
        """The plan for the job's JSON line."""
        return {
            "table": self.table_name,
            "snapshot_id": self.snapshot_id,
            "format_version": self.format_version,
            "options": self.options.as_dict(),
            "candidate_delete_files": self.candidate_files,
            "file_groups": len(self.groups),
            "rewritten_delete_files": sum(len(group.files) for group in self.groups),
            "rewritten_bytes": sum(group.input_bytes for group in self.groups),
            "dangling_delete_files": len(self.dangling),
            "deletion_vectors": self.deletion_vectors,
            "groups": [
                {
                    "global_index": group.global_index,
                    "partition_index": group.partition_index,
                    "spec_id": group.partition[0],
                    "partition": list(group.partition[1]),
                    "input_files": len(group.files),
                    "input_bytes": group.input_bytes,
                }
                for group in self.groups
            ],
        }

    def describe(self) -> str:
        """The plan in words."""
        head = f"plan: rewrite position deletes of {self.table_name} at snapshot {self.snapshot_id}"
        if self.format_version >= 3 and not self.candidate_files:
            return (
                f"{head}: format v{self.format_version} table; its {self.deletion_vectors} deletion vectors are one "
                "per data file already and need no rewrite; nothing to do"
            )
        if not self.groups and not self.dangling:
            return f"{head}: nothing to rewrite ({self.candidate_files} position delete files, none selected)"
        lines = [
            f"{head}: {sum(len(g.files) for g in self.groups)} position delete files "
            f"({sum(g.input_bytes for g in self.groups)} bytes) in {len(self.groups)} groups, positions of removed "
            f"data files dropped; {len(self.dangling)} more files that apply to no live data file removed"
        ]
        for group in self.groups:
            lines.append(
                f"  group {group.global_index} (spec {group.partition[0]}, partition {list(group.partition[1])}): "
                f"{len(group.files)} files, {group.input_bytes} bytes"
            )
        return "\n".join(lines)


@dataclass
class PositionDeleteRewriteOutcome:
    """What the rewrite committed."""

    commits: list[CommitResult] = field(default_factory=list)
    rewritten_files: int = 0
    added_files: int = 0
    rewritten_bytes: int = 0
    added_bytes: int = 0
    positions_read: int = 0
    positions_written: int = 0
    positions_dropped: int = 0  # naming data files no longer live
    dangling_files_removed: int = 0
    failures: list[str] = field(default_factory=list)  # batches that failed (partial progress)


def plan_position_delete_rewrite(
    table: Table, options: PositionDeleteRewriteOptions, *, where: BooleanExpression | str | None = None
) -> PositionDeleteRewritePlan:
    """Plan the rewrite (module doc, steps 1, 2 and 4)."""
    name = ".".join(table.name())
    snapshot = table.current_snapshot()
    version = table.metadata.format_version
    if snapshot is None:
        return PositionDeleteRewritePlan(name, None, version, options, 0)
    read_whole([snapshot], table.io, name)  # a manifest missing or damaged refuses the plan, cached or not
    schema = table.schema()
    row_filter, _ = bind_row_filter(table, schema, where, True)
    pruner = ManifestPruner(table.specs(), schema, row_filter, True)
    candidates: list[ManifestEntry] = []
    deletion_vectors = 0
    for manifest in snapshot.manifests(table.io):
        if manifest.content != ManifestContent.DELETES or not pruner.manifest_may_match(manifest):
            continue
        for entry in read_live_entries(manifest, table.io):
            delete_file = entry.data_file
            if delete_file.content != DataFileContent.POSITION_DELETES or not pruner.partition_may_match(delete_file):
                continue
            if delete_file.file_format == FileFormat.PUFFIN:
                deletion_vectors += 1
            else:
                candidates.append(entry)
    by_partition: dict[PartitionKey, list[ManifestEntry]] = {}
    for entry in candidates:
        by_partition.setdefault(partition_key(entry.data_file), []).append(entry)
    groups: list[DeleteFileGroup] = []
    for partition, entries in by_partition.items():
        for index, files in enumerate(_plan_partition(entries, options), start=1):
            groups.append(DeleteFileGroup(len(groups) + 1, index, partition, tuple(files)))
    groups = order_by_job_order(groups, options.rewrite_job_order)
    grouped = {entry.data_file.file_path for group in groups for entry in group.files}
    candidate_paths = {entry.data_file.file_path for entry in candidates}
    dangling = find_dangling_deletes(table, snapshot).locations
    extra = tuple(sorted((dangling & candidate_paths) - grouped))
    return PositionDeleteRewritePlan(
        name, snapshot.snapshot_id, version, options, len(candidates), tuple(groups), extra, deletion_vectors
    )


def _plan_partition(entries: list[ManifestEntry], options: PositionDeleteRewriteOptions) -> list[list[ManifestEntry]]:
    """Java's planFileGroups for one partition: choose by size, pack, keep the groups worth rewriting."""

    def size(entry: ManifestEntry) -> int:
        return entry.data_file.file_size_in_bytes

    chosen = (
        entries
        if options.rewrite_all
        else [e for e in entries if size(e) < options.min_file_size_bytes or size(e) > options.max_file_size_bytes]
    )
    packed = ListPacker[ManifestEntry](options.max_file_group_size_bytes, 1, False).pack(chosen, size)
    if options.rewrite_all:
        return packed
    return [
        group
        for group in packed
        if (len(group) > 1 and len(group) >= options.min_input_files)
        or (len(group) > 1 and sum(map(size, group)) > options.target_file_size_bytes)
        or sum(map(size, group)) > options.max_file_size_bytes
    ]


def live_data_files_by_partition(table: Table) -> dict[PartitionKey, set[str]]:
    """The current snapshot's live data file paths per partition."""
    from spark_jobs.engine.compaction.candidates import list_candidates

    live: dict[PartitionKey, set[str]] = {}
    for candidate in list_candidates(table, table.current_snapshot(), metrics=ScanMetrics()):
        live.setdefault(candidate.partition_key, set()).add(candidate.path)
    return live


def rewrite_group(
    table: Table, group: DeleteFileGroup, live_paths: set[str], context: WriteContext, tag: str
) -> tuple[list[WrittenFile], int, int]:
    """Read, filter, dedupe, sort and write one group's positions (step 3): written files, positions read, kept."""
    parts = [_read_positions(table, entry.data_file.file_path) for entry in group.files]
    positions = (
        pa.concat_tables(parts)
        if parts
        else pa.table({"file_path": pa.array([], pa.string()), "pos": pa.array([], pa.int64())})
    )
    read = positions.num_rows
    live = positions.filter(
        pc.is_in(positions.column("file_path"), value_set=pa.array(sorted(live_paths), pa.string()))
    )
    kept = live.group_by(["file_path", "pos"], use_threads=False).aggregate([])
    spec_id, partition_values = group.partition
    written = write_position_delete_rows(kept, context, spec_id, tuple(partition_values), tag) if kept.num_rows else []
    return written, read, kept.num_rows


def rewrite_position_deletes(table: Table, plan: PositionDeleteRewritePlan) -> PositionDeleteRewriteOutcome:
    """Rewrite and commit the plan (module doc, steps 3-5), on the driver."""
    outcome = PositionDeleteRewriteOutcome()
    if not plan.groups and not plan.dangling:
        return outcome
    live = live_data_files_by_partition(table)
    context = WriteContext.for_table(table)
    target = {"write.target-file-size-bytes": str(plan.options.write_max_file_size)}
    context = dataclasses.replace(context, properties={**context.properties, **target})
    batches = [
        list(plan.groups[start : start + plan.groups_per_commit])
        for start in range(0, len(plan.groups), plan.groups_per_commit)
    ] or [[]]
    for number, batch in enumerate(batches):
        dangling = set(plan.dangling) if number == 0 else set()
        try:
            _rewrite_batch(table, plan, batch, dangling=dangling, live=live, context=context, outcome=outcome)
        except Exception as error:
            if not plan.options.partial_progress_enabled:
                raise
            outcome.failures.append(f"groups {[group.global_index for group in batch]}: {error}")
    if outcome.failures and not outcome.commits:
        raise NothingCommittedError(
            f"no commit of the position delete rewrite of {plan.table_name} succeeded; last: {outcome.failures[-1]}"
        )
    return outcome


def _rewrite_batch(
    table: Table,
    plan: PositionDeleteRewritePlan,
    batch: list[DeleteFileGroup],
    *,
    dangling: set[str],
    live: dict[PartitionKey, set[str]],
    context: WriteContext,
    outcome: PositionDeleteRewriteOutcome,
) -> None:
    written: list[WrittenFile] = []
    sequence_numbers: dict[str, int] = {}
    read = kept = 0
    try:
        for group in batch:
            files, group_read, group_kept = rewrite_group(
                table, group, live.get(group.partition, set()), context, f"pd{group.global_index}"
            )
            written += files
            read += group_read
            kept += group_kept
            for item in files:
                sequence_numbers[item.file_path] = group.max_data_sequence_number
    except BaseException:
        delete_quietly(table, [item.file_path for item in written])
        raise
    removed = {entry.data_file.file_path for group in batch for entry in group.files} | dangling
    change = SnapshotChange(
        Operation.REPLACE,
        added_delete_files=[to_data_file(item) for item in written],
        removed_delete_file_paths=removed,
        data_sequence_numbers=sequence_numbers,
        summary_properties={JOB_PROPERTY: "rewrite-position-deletes"},
    )
    result = commit_change(table, change, starting_snapshot_id=plan.snapshot_id)
    outcome.commits.append(result)
    outcome.rewritten_files += sum(len(group.files) for group in batch)
    outcome.rewritten_bytes += sum(group.input_bytes for group in batch)
    outcome.added_files += len(written)
    outcome.added_bytes += sum(item.file_size_in_bytes for item in written)
    outcome.positions_read += read
    outcome.positions_written += kept
    outcome.positions_dropped += read - kept
    outcome.dangling_files_removed += len(dangling)


def _read_positions(table: Table, path: str) -> pa.Table:
    """The (file_path, pos) rows of one position delete file."""
    with table.io.new_input(path).open() as stream:
        rows = pq.read_table(stream, columns=["file_path", "pos"])
    return rows.cast(pa.schema([pa.field("file_path", pa.string()), pa.field("pos", pa.int64())]))
