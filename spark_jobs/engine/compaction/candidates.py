"""The files a rewrite may take: a snapshot's live data files that may match the filter, each with its deletes.

As Java's planner does with ``table.newScan().filter(where).ignoreResiduals().planFiles()``:

1. Manifests and data files are pruned with the ``where`` filter (partition summaries, partition tuples, column
   metrics) by ``planning.ManifestPruner``; a file that may hold a matching row is taken whole.
2. Every live delete file of the surviving delete manifests goes into ``planning.DeleteFileIndex``, which attaches
   to each data file exactly the deletes that apply (sequence numbers, partitions, paths, equality statistics).
3. Files keep manifest order, which is the order the bin packer sees them in.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyiceberg.expressions import BooleanExpression
from pyiceberg.manifest import DataFile, ManifestEntry
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from spark_jobs.engine.planning.delete_index import AppliedDeletes, DeleteFileIndex
from spark_jobs.engine.planning.manifest_pruning import ManifestPruner
from spark_jobs.engine.planning.scan_planner import bind_row_filter, whole_file_slice
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_cache import cached_manifests


@dataclass(frozen=True)
class RewriteCandidate:
    """One live data file with the deletes that apply to it, as the planner weighs it."""

    entry: ManifestEntry
    deletes: AppliedDeletes

    @property
    def data_file(self) -> DataFile:
        """The manifest's data file record (kept for the commit that replaces it)."""
        return self.entry.data_file

    @property
    def path(self) -> str:
        """The data file's location."""
        return self.entry.data_file.file_path

    @property
    def length(self) -> int:
        """The file's size in bytes: the weight Java's planner uses (``ContentScanTask.length`` of a whole file)."""
        return self.entry.data_file.file_size_in_bytes

    @property
    def record_count(self) -> int:
        """Rows in the data file, deleted ones included."""
        return self.entry.data_file.record_count

    @property
    def delete_file_count(self) -> int:
        """How many delete files apply (position, deletion vector and equality), as Java's ``task.deletes().size()``."""
        deletes = self.deletes
        return len(deletes.position_deletes) + len(deletes.equality_deletes) + (deletes.deletion_vector is not None)

    @property
    def known_deleted_records(self) -> int:
        """Rows deleted by file-scoped deletes (DVs, position deletes naming only this file), at most the row count.

        Java's ``tooHighDeleteRatio`` counts only deletes for which ``ContentFileUtil.isFileScoped`` holds: their
        whole record count deletes rows of this one file. Equality deletes and partition-wide position deletes are
        not counted.
        """
        deletes = self.deletes
        scoped = sum(d.record_count for d in deletes.position_deletes if d.referenced_data_file is not None)
        if deletes.deletion_vector is not None:
            scoped += deletes.deletion_vector.cardinality
        return min(scoped, self.record_count)

    def as_slice(self, table: Table) -> DataFileSlice:
        """The whole file as a read slice with its deletes, for a rewrite through the merge-on-read reader."""
        return whole_file_slice(self.entry, table.specs()[self.entry.data_file.spec_id], self.deletes)


def list_candidates(
    table: Table,
    snapshot: Snapshot | None,
    where: BooleanExpression | str | None = None,
    *,
    case_sensitive: bool = True,
    metrics: ScanMetrics | None = None,
) -> list[RewriteCandidate]:
    """The data files of ``snapshot`` that may hold rows matching ``where`` (all without it), with their deletes."""
    if snapshot is None:
        return []
    schema = table.schema()
    row_filter, _ = bind_row_filter(table, schema, where, case_sensitive)
    specs = table.specs()
    pruner = ManifestPruner(specs, schema, row_filter, case_sensitive)
    entries = pruner.select_entries(cached_manifests(snapshot, table.io), table.io, metrics or ScanMetrics())
    delete_index = DeleteFileIndex(specs, schema)
    for delete_entry in entries.delete_entries:
        delete_index.add(delete_entry)
    return [RewriteCandidate(entry, delete_index.for_data_file(entry)) for entry in entries.data_entries]
