"""The files a rewrite may take: a snapshot's live data files that may match the filter, each with its deletes.

As Java's planner does with ``table.newScan().filter(where).ignoreResiduals().planFiles()``:

1. Manifests and data files are pruned with the ``where`` filter (partition summaries, partition values, column
   metrics) by the read planner's file selection (``planning.file_selection``, over manifest columns); a file that
   may hold a matching row is taken whole.
2. The delete index attaches to each data file exactly the deletes that apply (sequence numbers, partitions, paths,
   equality statistics).
3. Files keep manifest order, which is the order the bin packer sees them in; each is a whole-file read slice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyiceberg.expressions import BooleanExpression
from pyiceberg.manifest import ManifestEntry
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from spark_jobs.engine.planning.delete_index import AppliedDeletes, PartitionKey, partition_key_of
from spark_jobs.engine.planning.file_selection import select_files
from spark_jobs.engine.planning.scan_planner import bind_row_filter, whole_file_slice
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.metrics import ScanMetrics


@dataclass(frozen=True)
class RewriteCandidate:
    """One live data file, as a whole-file read slice with the deletes that apply to it, as the planner weighs it."""

    file: DataFileSlice

    @classmethod
    def of_entry(cls, entry: ManifestEntry, spec: PartitionSpec, deletes: AppliedDeletes) -> RewriteCandidate:
        """The candidate of a manifest entry with the deletes that apply to it."""
        return cls(whole_file_slice(entry, spec, deletes))

    @property
    def path(self) -> str:
        """The data file's location."""
        return self.file.path

    @property
    def length(self) -> int:
        """The file's size in bytes: the weight Java's planner uses (``ContentScanTask.length`` of a whole file)."""
        return self.file.file_size_in_bytes

    @property
    def record_count(self) -> int:
        """Rows in the data file, deleted ones included."""
        return self.file.record_count

    @property
    def partition_key(self) -> PartitionKey:
        """The (spec id, partition values) the file belongs to; NaN values compare equal."""
        return partition_key_of(self.file.spec_id, self.file.partition)

    @property
    def deletes(self) -> AppliedDeletes:
        """The delete files that apply to the file."""
        return AppliedDeletes(self.file.position_deletes, self.file.deletion_vector, self.file.equality_deletes)

    @property
    def delete_file_count(self) -> int:
        """How many delete files apply (position, deletion vector and equality), as Java's ``task.deletes().size()``."""
        data_file = self.file
        return (
            len(data_file.position_deletes) + len(data_file.equality_deletes) + (data_file.deletion_vector is not None)
        )

    @property
    def known_deleted_records(self) -> int:
        """Rows deleted by file-scoped deletes (DVs, position deletes naming only this file), at most the row count.

        Java's ``tooHighDeleteRatio`` counts only deletes for which ``ContentFileUtil.isFileScoped`` holds: their
        whole record count deletes rows of this one file. Equality deletes and partition-wide position deletes are
        not counted.
        """
        data_file = self.file
        scoped = sum(d.record_count for d in data_file.position_deletes if d.referenced_data_file is not None)
        if data_file.deletion_vector is not None:
            scoped += data_file.deletion_vector.cardinality
        return min(scoped, self.record_count)

    def as_slice(self, table: Table) -> DataFileSlice:
        """The whole file as a read slice with its deletes, for a rewrite through the merge-on-read reader."""
        return self.file


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
    files = select_files(
        table,
        snapshot,
        schema=schema,
        row_filter=row_filter,
        case_sensitive=case_sensitive,
        metrics=metrics or ScanMetrics(),
    )
    count = len(files)
    columns = files.slice_columns(np.arange(count), np.zeros(count, dtype=np.int64), files.file_sizes)
    return [RewriteCandidate(columns.slice_at(row)) for row in range(count)]
