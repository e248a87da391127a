"""Select the data files of a snapshot a scan reads, each with the deletes that apply, from its manifests.

1. Manifests: every manifest of the snapshot is counted; data and delete manifests whose partition summaries rule
   the filter out are skipped, and delete manifests older than every data manifest still read
   (``ManifestPruner.select_manifests``).
2. Where to read them: in this process, or on the executors through a ``RemoteManifestReader`` (the Spark one is
   ``spark.distributed_planning``), by the planning modes (``planning_mode``).
3. Delete manifests first: their entries that survive the partition filter are kept as columns.
4. Data manifests: their entries that survive the partition and metrics filters (``entry_filter``) are kept with
   the columns planning needs (their statistics too when equality deletes may apply).
5. The delete entries go into the delete index; when the filters left data files out, the position deletes and
   deletion vectors of those files are left out first (``delete_prefilter``).
6. ``planned_files.gather`` attaches the deletes and returns the files as columns.

Read locally, manifests are decoded a few at a time on threads and cached (``manifest_cache.manifest_columns``),
and consecutive small manifests are filtered as one batch (``manifest_batches``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import BooleanExpression
from pyiceberg.manifest import ManifestFile
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.types import StructType

from spark_jobs.engine.planning.delete_index import DeleteFileIndex
from spark_jobs.engine.planning.delete_prefilter import rows_that_may_apply
from spark_jobs.engine.planning.entry_filter import EntryFilter, survivors
from spark_jobs.engine.planning.manifest_batches import batched_manifests
from spark_jobs.engine.planning.manifest_pruning import ManifestPruner
from spark_jobs.engine.planning.planned_files import PlannedFiles, gather
from spark_jobs.engine.planning.planning_mode import PlanningMode, plan_locally, planning_modes
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_cache import DECODE_THREADS, cached_manifests, manifest_columns
from spark_jobs.engine.table.manifest_columns import (
    CONTENT_EQUALITY_DELETES,
    ManifestColumns,
    partition_type_resolver,
)


class RemoteManifestReader(Protocol):
    """Reads manifests somewhere else (Spark executors) and returns what survives the entry filter."""

    @property
    def parallelism(self) -> int:
        """How many manifests it reads at once."""
        ...

    def survivors(
        self,
        table: Table,
        manifests: Sequence[ManifestFile],
        entry_filter: EntryFilter,
        partition_types: dict[int, StructType],
        *,
        deletes: bool,
        with_statistics: bool,
    ) -> list[tuple[ManifestColumns, int]]:
        """Per manifest, in order: its surviving entries (data files, or delete files when ``deletes``) with the
        columns planning needs, and how many data files it held."""
        ...


def select_files(
    table: Table,
    snapshot: Snapshot,
    *,
    schema: Schema,
    row_filter: BooleanExpression,
    case_sensitive: bool,
    metrics: ScanMetrics,
    remote: RemoteManifestReader | None = None,
    planning_mode: PlanningMode | None = None,
    key_sets: Mapping[int, np.ndarray] | None = None,
) -> PlannedFiles:
    """The snapshot's data files that may hold rows matching ``row_filter``, with their deletes (module doc)."""
    specs = table.specs()
    pruner = ManifestPruner(specs, schema, row_filter, case_sensitive)
    data_manifests, delete_manifests = pruner.select_manifests(cached_manifests(snapshot, table.io), metrics)
    entry_filter = EntryFilter(specs, schema, row_filter, case_sensitive, key_sets)
    partition_type_of = partition_type_resolver(table)
    data_mode, delete_mode = planning_modes(table.properties, planning_mode)
    remote_parallelism = remote.parallelism if remote is not None else 0

    def local(manifests: Sequence[ManifestFile], mode: PlanningMode, *, needs_local: bool) -> bool:
        return remote is None or plan_locally(
            mode,
            manifests,
            remote_parallelism=remote_parallelism,
            local_parallelism=DECODE_THREADS,
            needs_local=needs_local,
        )

    delete_index = DeleteFileIndex(specs, table.schema())
    may_hold_equality_deletes = _may_hold_equality_deletes(snapshot, delete_manifests)
    delete_chunks = _survivors(
        table,
        delete_manifests,
        entry_filter,
        partition_type_of,
        remote if not local(delete_manifests, delete_mode, needs_local=may_hold_equality_deletes) else None,
        deletes=True,
        with_statistics=True,
    )
    needs_statistics = any((chunk.numpy("content") == CONTENT_EQUALITY_DELETES).any() for chunk, _ in delete_chunks)
    data_chunks = _survivors(
        table,
        data_manifests,
        entry_filter,
        partition_type_of,
        remote if not local(data_manifests, data_mode, needs_local=needs_statistics) else None,
        deletes=False,
        with_statistics=needs_statistics,
    )
    pruned = 0
    for chunk, data_files in data_chunks:
        metrics.data_files_total += data_files
        pruned += data_files - chunk.num_rows
    metrics.data_files_pruned += pruned
    data_paths = _paths([chunk for chunk, _ in data_chunks]) if pruned and delete_chunks else None
    for chunk, _ in delete_chunks:
        rows = rows_that_may_apply(chunk, data_paths) if data_paths is not None else range(chunk.num_rows)
        delete_index.add_columns(chunk, rows)
    return gather([chunk for chunk, _ in data_chunks], specs, delete_index, metrics)


def _survivors(
    table: Table,
    manifests: Sequence[ManifestFile],
    entry_filter: EntryFilter,
    partition_type_of: Callable[[int], StructType],
    remote: RemoteManifestReader | None,
    *,
    deletes: bool,
    with_statistics: bool,
) -> list[tuple[ManifestColumns, int]]:
    """Each manifest's surviving entries and its count of data files, read here or by ``remote``."""
    if not manifests:
        return []
    if remote is not None:
        partition_types = {m.partition_spec_id: partition_type_of(m.partition_spec_id) for m in manifests}
        return remote.survivors(
            table, manifests, entry_filter, partition_types, deletes=deletes, with_statistics=with_statistics
        )
    return [
        surviving_entries(batch, entry_filter, deletes=deletes, with_statistics=with_statistics)
        for batch, _ in batched_manifests(manifest_columns(manifests, table.io, partition_type_of))
    ]


def surviving_entries(
    columns: ManifestColumns, entry_filter: EntryFilter, *, deletes: bool, with_statistics: bool
) -> tuple[ManifestColumns, int]:
    """One manifest's surviving data (or delete) entries and its count of data files (steps 3 and 4)."""
    verdicts = entry_filter.verdicts(columns)
    rows = verdicts.delete_rows if deletes else verdicts.data_rows
    return survivors(columns, rows, with_statistics=with_statistics), verdicts.data_files


def _paths(chunks: Sequence[ManifestColumns]) -> pa.Array:
    """The file paths of the surviving data files of every chunk, as one array."""
    arrays = [chunk.column("file_path") for chunk in chunks if chunk.num_rows]
    return pa.concat_arrays(arrays) if arrays else pa.array([], pa.string())


def _may_hold_equality_deletes(snapshot: Snapshot, delete_manifests: Sequence[ManifestFile]) -> bool:
    """Whether the snapshot may hold equality deletes: its summary's ``total-equality-deletes``, when it has one."""
    if not delete_manifests:
        return False
    summary = snapshot.summary
    total = summary.get("total-equality-deletes") if summary is not None else None
    try:
        return total is None or int(total) > 0
    except ValueError:
        return True
