"""Plan a rewrite of a snapshot's data files by Iceberg Java's rules (``BinPackRewriteFilePlanner``).

Sort and z-order rewrites plan the same way (Java's ``SparkShufflingDataRewritePlanner`` is the bin-pack planner with
a ``compression-factor`` applied to the expected output file count, ``sizing``).

1. Candidates: the snapshot's data files that may match ``where``, each with the deletes that apply
   (``candidates``).
2. Partitions: files of the table's current spec are grouped by their partition tuple; files of any other spec
   all go to one group keyed by an all-null tuple of the current spec (their rows may span several current
   partitions, so they are rewritten together, as Java does; a current-spec file whose partition values are all
   null shares that key, as in Java's ``StructLikeMap``). Partitions keep the order their first file was seen.
3. Files per partition (skipped with ``rewrite-all``): a file is taken when its size is below
   ``min-file-size-bytes`` or above ``max-file-size-bytes``, when at least ``delete-file-threshold`` delete files
   apply to it, or when the rows its file-scoped deletes remove are at least ``delete-ratio-threshold`` of its rows.
4. Packing: ``ListPacker(max-file-group-size-bytes, lookback=1, largest_bin_first=False)`` by file size.
5. Groups (filter skipped with ``rewrite-all``, as Java 1.10 does) are kept when they have enough input files
   (more than one and at least ``min-input-files``), enough content (more than one file and more bytes than the
   target), too much content (more bytes than ``max-file-size-bytes``), or a file with too many deletes or too
   high a delete ratio.
6. Each kept group gets a global index (from 1, in plan order), an index within its partition, its input size,
   the expected output file count and the input split size (``sizing``). Groups are then ordered by
   ``rewrite-job-order`` (a stable sort on input bytes or file count; ``none`` keeps plan order). With partial
   progress, groups are committed ``ceil(groups / max-commits)`` at a time, in that order.
7. The output spec is ``output-spec-id`` (default: the current spec), which must be one of the table's specs; files
   are still grouped by the current spec's partitions, as Java does.
8. The delete files that apply only to files of the plan (``dangling_deletes``, over all live data files, not only
   the filtered ones) are named, for the commit to remove.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from spark_jobs.engine.compaction.bin_packing import ListPacker
from spark_jobs.engine.compaction.candidates import RewriteCandidate, list_candidates
from spark_jobs.engine.compaction.dangling_deletes import DeleteKey, DeleteUsage
from spark_jobs.engine.compaction.options import RewriteOptions
from spark_jobs.engine.compaction.sizing import expected_output_files, input_split_size, write_max_file_size
from spark_jobs.engine.compaction.strategy import BINPACK_STRATEGY, RewriteStrategy
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.metrics import ScanMetrics

PartitionValues = tuple[Any, ...]


@dataclass(frozen=True)
class FileGroup:
    """Files of one partition rewritten together into ``expected_output_files`` files."""

    global_index: int
    partition_index: int
    partition: PartitionValues  # in the output (current) spec; all None for files of other specs
    files: tuple[RewriteCandidate, ...]
    expected_output_files: int
    input_split_size: int

    @property
    def input_bytes(self) -> int:
        """Total size of the group's data files."""
        return sum(candidate.length for candidate in self.files)

    @property
    def input_rows(self) -> int:
        """Rows in the group's data files, deleted ones included."""
        return sum(candidate.record_count for candidate in self.files)

    @property
    def delete_files(self) -> set[str]:
        """Paths of the delete files that apply to any file of the group."""
        paths: set[str] = set()
        for candidate in self.files:
            deletes = candidate.deletes
            paths.update(d.path for d in deletes.position_deletes)
            paths.update(d.path for d in deletes.equality_deletes)
            if deletes.deletion_vector is not None:
                paths.add(deletes.deletion_vector.path)
        return paths


@dataclass(frozen=True)
class RewritePlan:
    """The groups to rewrite, in order, with what they were planned from."""

    table_name: str
    snapshot_id: int | None
    output_spec_id: int  # the spec the rewritten files are written with
    partition_fields: tuple[str, ...]  # names of the current spec's partition fields (what groups are keyed by)
    options: RewriteOptions
    groups: tuple[FileGroup, ...]
    candidate_files: int  # data files that may match the filter, before any rule
    candidate_bytes: int
    write_max_file_size: int
    freed_delete_files: frozenset[DeleteKey]  # delete files (DVs: with blob offset) applying only to planned files
    freed_delete_locations: frozenset[str]  # locations all of whose entries are freed (a Puffin file: every DV)
    strategy: RewriteStrategy = BINPACK_STRATEGY

    @property
    def groups_per_commit(self) -> int:
        """Groups per commit: all of them, or ``ceil(groups / max-commits)`` with partial progress."""
        if not self.options.partial_progress_enabled:
            return max(len(self.groups), 1)
        return max(-(-len(self.groups) // self.options.partial_progress_max_commits), 1)

    @property
    def expected_commits(self) -> int:
        """How many commits the rewrite makes (0 when there is nothing to rewrite)."""
        return -(-len(self.groups) // self.groups_per_commit)

    def as_dict(self) -> dict[str, Any]:
        """The plan as the JSON the compact job prints (counts and sizes, no file lists)."""
        groups = [self._group_dict(group) for group in self.groups]
        return {
            "table": self.table_name,
            "snapshot_id": self.snapshot_id,
            "output_spec_id": self.output_spec_id,
            **self.strategy.as_dict(),
            "options": self.options.as_dict(),
            "candidate_data_files": self.candidate_files,
            "candidate_bytes": self.candidate_bytes,
            "file_groups": len(self.groups),
            "rewritten_data_files": sum(len(group.files) for group in self.groups),
            "rewritten_bytes": sum(group.input_bytes for group in self.groups),
            "rewritten_rows": sum(group.input_rows for group in self.groups),
            "delete_files": len(set().union(*(group.delete_files for group in self.groups))),
            "delete_files_freed": len(self.freed_delete_files),
            "expected_output_files": sum(group.expected_output_files for group in self.groups),
            "write_max_file_size": self.write_max_file_size,
            "groups_per_commit": self.groups_per_commit,
            "expected_commits": self.expected_commits,
            "groups": groups,
        }

    def _group_dict(self, group: FileGroup) -> dict[str, Any]:
        return {
            "global_index": group.global_index,
            "partition_index": group.partition_index,
            "partition": dict(zip(self.partition_fields, group.partition, strict=True)),
            "input_files": len(group.files),
            "input_bytes": group.input_bytes,
            "input_rows": group.input_rows,
            "delete_files": len(group.delete_files),
            "expected_output_files": group.expected_output_files,
            "input_split_size": group.input_split_size,
        }


def plan_rewrite(
    table: Table,
    snapshot: Snapshot | None,
    options: RewriteOptions,
    *,
    where: BooleanExpression | str | None = None,
    case_sensitive: bool = True,
    metrics: ScanMetrics | None = None,
    strategy: RewriteStrategy = BINPACK_STRATEGY,
) -> RewritePlan:
    """Plan the rewrite of ``snapshot`` (steps in the module docstring); None plans nothing (an empty table)."""
    candidates = list_candidates(table, snapshot, where, case_sensitive=case_sensitive, metrics=metrics)
    current_spec = table.spec()
    output_spec_id = resolve_output_spec_id(table, options)
    groups = order_groups(plan_groups(candidates, current_spec.spec_id, len(current_spec.fields), options), options)
    all_files = candidates if _filters_nothing(where) else list_candidates(table, snapshot, None)
    replaced = [candidate.path for group in groups for candidate in group.files]
    usage = DeleteUsage(all_files)
    return RewritePlan(
        table_name=".".join(table.name()),
        snapshot_id=snapshot.snapshot_id if snapshot is not None else None,
        output_spec_id=output_spec_id,
        partition_fields=tuple(field.name for field in current_spec.fields),
        options=options,
        groups=tuple(groups),
        candidate_files=len(candidates),
        candidate_bytes=sum(candidate.length for candidate in candidates),
        write_max_file_size=write_max_file_size(options),
        freed_delete_files=frozenset(usage.freed_by(replaced)),
        freed_delete_locations=frozenset(usage.freed_locations_by(replaced)),
        strategy=strategy,
    )


def resolve_output_spec_id(table: Table, options: RewriteOptions) -> int:
    """``output-spec-id``, or the current spec's id; a spec the table does not have is a UserInputError."""
    if options.output_spec_id is None:
        return table.spec().spec_id
    if options.output_spec_id not in table.specs():
        raise UserInputError(
            f"table {'.'.join(table.name())}: Cannot use output spec id {options.output_spec_id} because the table "
            f"does not contain a reference to this spec-id (spec ids: {sorted(table.specs())})"
        )
    return options.output_spec_id


_JOB_ORDER_KEYS: dict[str, tuple[Callable[[Any], int], bool]] = {
    "bytes-asc": (lambda group: group.input_bytes, False),
    "bytes-desc": (lambda group: group.input_bytes, True),
    "files-asc": (lambda group: len(group.files), False),
    "files-desc": (lambda group: len(group.files), True),
}
Group = TypeVar("Group")


def order_groups(groups: list[Group], options: RewriteOptions) -> list[Group]:
    """Groups in ``rewrite-job-order`` (Java's ``RewriteFileGroup.comparator``, a stable sort; none: as planned)."""
    return order_by_job_order(groups, options.rewrite_job_order)


def order_by_job_order(groups: list[Group], job_order: str) -> list[Group]:
    """Groups (with ``input_bytes`` and ``files``) ordered by a ``rewrite-job-order`` name, stably."""
    if job_order not in _JOB_ORDER_KEYS:
        return groups
    key, descending = _JOB_ORDER_KEYS[job_order]
    return sorted(groups, key=key, reverse=descending)


def _filters_nothing(where: BooleanExpression | str | None) -> bool:
    """True when ``where`` keeps every file (absent, blank or always true)."""
    if where is None:
        return True
    if isinstance(where, str):
        return not where.strip()
    return where == AlwaysTrue()


def plan_groups(
    candidates: Iterable[RewriteCandidate], output_spec_id: int, output_partition_width: int, options: RewriteOptions
) -> list[FileGroup]:
    """Steps 2 to 6: the kept file groups of all partitions, numbered, with their expected outputs."""
    groups: list[FileGroup] = []
    groups_in_partition: dict[PartitionValues, int] = {}
    for partition, files in group_by_partition(candidates, output_spec_id, output_partition_width).items():
        for files_of_group in plan_file_groups(files, options):
            input_size = sum(candidate.length for candidate in files_of_group)
            groups_in_partition[partition] = groups_in_partition.get(partition, 0) + 1
            groups.append(
                FileGroup(
                    global_index=len(groups) + 1,
                    partition_index=groups_in_partition[partition],
                    partition=partition,
                    files=tuple(files_of_group),
                    expected_output_files=expected_output_files(input_size, options),
                    input_split_size=input_split_size(input_size, options),
                )
            )
    return groups


def group_by_partition(
    candidates: Iterable[RewriteCandidate], output_spec_id: int, output_partition_width: int
) -> dict[PartitionValues, list[RewriteCandidate]]:
    """Files by partition of the output spec; files of other specs under one all-null key (step 2)."""
    other_specs_key: PartitionValues = (None,) * output_partition_width
    by_partition: dict[PartitionValues, list[RewriteCandidate]] = {}
    for candidate in candidates:
        spec_id, values = candidate.partition_key
        key = values if spec_id == output_spec_id else other_specs_key
        by_partition.setdefault(key, []).append(candidate)
    return by_partition


def plan_file_groups(files: list[RewriteCandidate], options: RewriteOptions) -> list[list[RewriteCandidate]]:
    """One partition's files chosen (step 3), packed (step 4) and the groups worth rewriting kept (step 5)."""
    chosen = files if options.rewrite_all else [f for f in files if is_rewrite_candidate(f, options)]
    packer: ListPacker[RewriteCandidate] = ListPacker(options.max_file_group_size_bytes, 1, False)
    groups = packer.pack(chosen, lambda candidate: candidate.length)
    if options.rewrite_all:
        return groups
    return [group for group in groups if is_group_worth_rewriting(group, options)]


def is_rewrite_candidate(candidate: RewriteCandidate, options: RewriteOptions) -> bool:
    """Java's ``filterFiles``: outside the size range, too many deletes, or too high a delete ratio."""
    return (
        outside_desired_file_size_range(candidate, options)
        or too_many_deletes(candidate, options)
        or too_high_delete_ratio(candidate, options)
    )


def is_group_worth_rewriting(group: list[RewriteCandidate], options: RewriteOptions) -> bool:
    """Java's ``filterFileGroups``: enough input files or content, too much content, or delete-ridden files."""
    input_size = sum(candidate.length for candidate in group)
    enough_input_files = len(group) > 1 and len(group) >= options.min_input_files
    enough_content = len(group) > 1 and input_size > options.target_file_size_bytes
    too_much_content = input_size > options.max_file_size_bytes
    return (
        enough_input_files
        or enough_content
        or too_much_content
        or any(too_many_deletes(candidate, options) for candidate in group)
        or any(too_high_delete_ratio(candidate, options) for candidate in group)
    )


def outside_desired_file_size_range(candidate: RewriteCandidate, options: RewriteOptions) -> bool:
    """Smaller than ``min-file-size-bytes`` or larger than ``max-file-size-bytes``."""
    return candidate.length < options.min_file_size_bytes or candidate.length > options.max_file_size_bytes


def too_many_deletes(candidate: RewriteCandidate, options: RewriteOptions) -> bool:
    """At least ``delete-file-threshold`` delete files apply."""
    return candidate.delete_file_count >= options.delete_file_threshold


def too_high_delete_ratio(candidate: RewriteCandidate, options: RewriteOptions) -> bool:
    """File-scoped deletes remove at least ``delete-ratio-threshold`` of the file's rows (no deletes: never)."""
    if candidate.delete_file_count == 0:
        return False
    if candidate.record_count == 0:
        return False  # Java divides 0.0 by 0 and NaN compares false
    return candidate.known_deleted_records / candidate.record_count >= options.delete_ratio_threshold
