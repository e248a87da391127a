"""Turn a format v3 table's position delete files, or its equality delete files, into deletion vectors.

A table upgraded from v2 keeps the position delete files written before; a table written with equality deletes
keeps them until a compaction (the v4 proposal asks that they become deletion vectors). Both conversions give each
affected data file one deletion vector holding every row the converted deletes remove from it, so every reader
returns the same rows before and after:

1. Plan the current snapshot's scan without a filter (``planning.scan_planner``: the spec's rules attach to each
   live data file exactly the deletes that apply; a data file with a deletion vector ignores position delete files).
   ``where`` selects partitions: a data file is converted when its partition may match.
2. The data files to convert: for ``position``, those with position delete files attached (a file with a
   deletion vector has none attached: its vector already stands for them); for ``equality``, those with equality
   deletes attached.
3. Per data file, the rows that survive the folded deletes are read with their ``_pos`` (``position``: the position
   deletes only; ``equality``: every delete, its vector and position deletes too); the new deletion vector holds
   every other position of the file. Its data sequence number is the newest among the folded deletes', so it
   applies to the file as they did (its vector names that one file).
4. Removed in the same ``replace`` commit: each converted file's old deletion vector; every delete file of the
   converted kind (position: Parquet position deletes; equality: equality deletes) whose every target is converted
   (a file that applies to nothing in a selected partition too). A delete file that still applies to an
   unconverted data file (another partition ``where`` left out) stays.
5. The commit is validated from the planned snapshot: a converted data file removed meanwhile, or a new delete for
   it, fails it cleanly (its Puffin files are deleted); delete files committed meanwhile are left alone.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from pyiceberg.expressions import BooleanExpression
from pyiceberg.manifest import DataFileContent, FileFormat, ManifestContent
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation, Snapshot
from pyiceberg.typedef import Record

from spark_jobs.engine.commit.committer import CommitResult, commit_change
from spark_jobs.engine.commit.producer import delete_quietly
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.maintenance.reachable_files import read_whole
from spark_jobs.engine.planning.manifest_pruning import ManifestPruner
from spark_jobs.engine.planning.scan_context import ROW_POSITION
from spark_jobs.engine.planning.scan_planner import bind_row_filter, plan_scan
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.read.session import build_scan_context
from spark_jobs.engine.read.task_scan import read_slice
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_entries import read_live_entries
from spark_jobs.engine.write.deletion_vector_files import DeletionVectorTarget, write_deletion_vectors
from spark_jobs.engine.write.file_entries import WrittenFile, to_data_file
from spark_jobs.engine.write.write_context import WriteContext

KINDS = ("position", "equality")
JOB_PROPERTY = "airflow-iceberg-provider.job"
_FIRST_VECTOR_FORMAT = 3


@dataclass(frozen=True)
class ConvertedFile:
    """A data file that gets a new deletion vector: its slices (with the deletes to fold) and partition."""

    path: str
    record_count: int
    spec_id: int
    partition: tuple[Any, ...]
    slices: tuple[DataFileSlice, ...]

    @property
    def sequence_number(self) -> int:
        """The newest data sequence number of the folded deletes (step 3)."""
        first = self.slices[0]
        numbers = [d.data_sequence_number for d in first.position_deletes + first.equality_deletes]
        if first.deletion_vector is not None:
            numbers.append(first.deletion_vector.data_sequence_number)
        return max(numbers)


@dataclass(frozen=True)
class VectorConversionPlan:
    """What a conversion of one kind changes, planned on one snapshot."""

    table_name: str
    snapshot_id: int | None
    kind: str
    files: tuple[ConvertedFile, ...] = ()
    removed_delete_files: tuple[str, ...] = ()  # position or equality delete files removed (step 4)
    replaced_vectors: tuple[tuple[str, int], ...] = ()  # converted files' old vectors (Puffin path, offset)
    kept_delete_files: tuple[str, ...] = ()  # of the converted kind, still applying to unconverted data files

    def as_dict(self) -> dict[str, Any]:
        """The plan for the job's JSON line."""
        return {
            "kind": self.kind,
            "data_files_converted": len(self.files),
            "delete_files_removed": len(self.removed_delete_files),
            "deletion_vectors_replaced": len(self.replaced_vectors),
            "delete_files_kept": len(self.kept_delete_files),
        }

    def describe(self) -> str:
        """The plan in words."""
        head = f"plan: {self.kind} deletes of {self.table_name} at snapshot {self.snapshot_id} into deletion vectors"
        if not self.files and not self.removed_delete_files:
            return f"{head}: nothing to convert"
        kept = (
            f"; {len(self.kept_delete_files)} stay (they apply to data files outside --where)"
            if self.kept_delete_files
            else ""
        )
        return (
            f"{head}: {len(self.files)} data files get a deletion vector ({len(self.replaced_vectors)} replacing "
            f"their current one); {len(self.removed_delete_files)} {self.kind} delete files removed{kept}"
        )


@dataclass
class VectorConversionOutcome:
    """What the conversion committed."""

    commit: CommitResult | None = None
    deletion_vectors_written: int = 0
    positions_written: int = 0
    puffin_files: list[str] = field(default_factory=list)


def plan_vector_conversion(
    table: Table, kind: str, *, where: BooleanExpression | str | None = None
) -> VectorConversionPlan:
    """Plan the conversion of ``kind`` deletes (module doc, steps 1, 2 and 4)."""
    name = ".".join(table.name())
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    if table.metadata.format_version < _FIRST_VECTOR_FORMAT:
        raise UserInputError(
            f"table {name} is format v{table.metadata.format_version}: deletion vectors need format v3 "
            "(upgrade the table with format-version=3 first)"
        )
    snapshot = table.current_snapshot()
    if snapshot is None:
        return VectorConversionPlan(name, None, kind)
    read_whole([snapshot], table.io, name)  # a manifest missing or damaged refuses the plan, cached or not
    schema = table.schema()
    row_filter, _ = bind_row_filter(table, schema, where, True)
    pruner = ManifestPruner(table.specs(), schema, row_filter, True)
    plan = plan_scan(table, snapshot, split_size=1 << 62)
    by_path: dict[str, list[DataFileSlice]] = {}
    for task in plan.tasks:
        for data_file in task.slices:
            by_path.setdefault(data_file.path, []).append(data_file)
    targets: dict[str, set[str]] = {}  # delete file of the kind -> data files it applies to
    chosen: list[ConvertedFile] = []
    for path, slices in by_path.items():
        first = slices[0]
        deletes = _of_kind(first, kind)
        for delete_path in deletes:
            targets.setdefault(delete_path, set()).add(path)
        if deletes and pruner.partition_may_match(_partition_record(first)):
            folded = slices if kind == "equality" else [replace(s, equality_deletes=()) for s in slices]
            chosen.append(ConvertedFile(path, first.record_count, first.spec_id, first.partition, tuple(folded)))
    converted = {f.path for f in chosen}
    removed, kept = [], []
    for delete_path, entry_partition_matches in _delete_files_of_kind(table, snapshot, kind, pruner):
        applies_to = targets.get(delete_path, set())
        if applies_to <= converted and (applies_to or entry_partition_matches):
            removed.append(delete_path)
        elif applies_to:
            kept.append(delete_path)
    vectors = tuple(
        (f.slices[0].deletion_vector.path, f.slices[0].deletion_vector.content_offset)
        for f in chosen
        if f.slices[0].deletion_vector is not None
    )
    return VectorConversionPlan(
        name, snapshot.snapshot_id, kind, tuple(chosen), tuple(sorted(removed)), vectors, tuple(sorted(kept))
    )


def convert_to_deletion_vectors(table: Table, plan: VectorConversionPlan) -> VectorConversionOutcome:
    """Write the plan's deletion vectors and commit (module doc, steps 3-5), on the driver."""
    outcome = VectorConversionOutcome()
    if not plan.files and not plan.removed_delete_files:
        return outcome
    context = WriteContext.for_table(table)
    by_sequence: dict[int, list[DeletionVectorTarget]] = {}
    for data_file in plan.files:
        deleted = _deleted_positions(table, data_file)
        if deleted.size:
            target = DeletionVectorTarget(data_file.path, data_file.spec_id, data_file.partition, deleted)
            by_sequence.setdefault(data_file.sequence_number, []).append(target)
            outcome.positions_written += int(deleted.size)
    written: list[WrittenFile] = []
    sequence_numbers: dict[str, int] = {}
    try:
        for index, (sequence_number, vectors) in enumerate(sorted(by_sequence.items())):
            location = context.locations.new_data_location(f"{context.write_id}-dv{index:05d}-deletes.puffin")
            items = write_deletion_vectors(vectors, table.io, functools.partial(str, location))
            written += items
            for item in items:
                sequence_numbers[item.file_path] = sequence_number
        outcome.puffin_files = sorted(sequence_numbers)
        converted = {f.path for f in plan.files}
        change = SnapshotChange(
            Operation.REPLACE,
            added_delete_files=[to_data_file(item) for item in written],
            removed_delete_file_paths=set(plan.removed_delete_files),
            removed_deletion_vectors=set(plan.replaced_vectors),
            data_sequence_numbers=sequence_numbers,
            required_data_file_paths=converted,
            no_new_deletes_for_data_files=converted,
            summary_properties={JOB_PROPERTY: f"convert-{plan.kind}-deletes"},
        )
    except BaseException:
        delete_quietly(table, list(dict.fromkeys(item.file_path for item in written)))
        raise
    outcome.commit = commit_change(table, change, starting_snapshot_id=plan.snapshot_id)
    outcome.deletion_vectors_written = len(written)
    return outcome


def _deleted_positions(table: Table, data_file: ConvertedFile) -> np.ndarray:
    """Every position of the data file its folded deletes remove: those its surviving rows do not hold (step 3)."""
    context = build_scan_context(table, table.schema(), [ROW_POSITION], list(data_file.slices))
    alive = [
        batch.column(0).to_numpy()
        for data_slice in data_file.slices
        for batch in read_slice(data_slice, context, ScanMetrics())
        if batch.num_rows
    ]
    surviving = np.concatenate(alive) if alive else np.empty(0, dtype=np.int64)
    return np.setdiff1d(np.arange(data_file.record_count, dtype=np.int64), surviving, assume_unique=True)


def _of_kind(data_file: DataFileSlice, kind: str) -> list[str]:
    """The paths of the deletes of ``kind`` attached to a data file."""
    if kind == "position":
        return [d.path for d in data_file.position_deletes]
    return [d.path for d in data_file.equality_deletes]


@dataclass(frozen=True)
class _PartitionOf:
    """What the pruner's partition test reads of a data file: its spec id and partition values."""

    spec_id: int
    partition: Record


def _partition_record(data_file: DataFileSlice) -> Any:
    """A data file's partition as the pruner takes it."""
    return _PartitionOf(data_file.spec_id, Record(*data_file.partition))


def _delete_files_of_kind(
    table: Table, snapshot: Snapshot, kind: str, pruner: ManifestPruner
) -> Iterable[tuple[str, bool]]:
    """(path, partition may match ``where``) of every live delete file of ``kind``: Parquet position deletes, or
    equality deletes."""
    wanted = DataFileContent.POSITION_DELETES if kind == "position" else DataFileContent.EQUALITY_DELETES
    seen = set()
    for manifest in snapshot.manifests(table.io):
        if manifest.content != ManifestContent.DELETES:
            continue
        for entry in read_live_entries(manifest, table.io):
            delete_file = entry.data_file
            if delete_file.content != wanted or delete_file.file_format == FileFormat.PUFFIN:
                continue
            if delete_file.file_path not in seen:
                seen.add(delete_file.file_path)
                yield delete_file.file_path, pruner.partition_may_match(delete_file)
