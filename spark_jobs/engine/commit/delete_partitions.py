"""A commit never adds a delete file scoped to a data file of another partition (Iceberg Java 1.12 fails such scans).

A deletion vector, or a position delete file that names one data file (``referenced_data_file``), must carry that
data file's partition spec id and partition tuple (apache/iceberg#16957). Before the first attempt of a commit:

1. Collect the change's added delete files that name one data file (deletion vectors always do).
2. Find each named data file among the data files the change adds, then among the live data files of the branch
   head (manifests as columns through the process cache, which planning filled; only the matching paths become
   Python values).
3. A different spec id or partition tuple raises ``CorruptFileError`` naming both files; a named data file that is
   not live is left to conflict validation (``conflicts``), which fails the commit when it was removed meanwhile.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.manifest import DataFile, DataFileContent, ManifestContent
from pyiceberg.table import Table

from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.planning.delete_index import (
    PartitionKey,
    check_same_partition,
    file_scope,
    partition_key,
    partition_keys,
)
from spark_jobs.engine.table.manifest_cache import manifest_columns
from spark_jobs.engine.table.manifest_columns import partition_type_resolver


def check_delete_partitions(table: Table, change: SnapshotChange, branch: str) -> None:
    """Raise CorruptFileError when an added delete file names a data file of another partition (module doc)."""
    scoped = [(delete_file, target) for delete_file in change.added_delete_files if (target := _target(delete_file))]
    if not scoped:
        return
    partitions = {data_file.file_path: partition_key(data_file) for data_file in change.added_data_files}
    wanted = {target for _, target in scoped} - set(partitions)
    if wanted:
        partitions.update(_live_partitions(table, branch, wanted))
    for delete_file, target in scoped:
        if target in partitions:
            check_same_partition(delete_file.file_path, partition_key(delete_file), target, partitions[target])


def _target(delete_file: DataFile) -> str | None:
    """The one data file a position delete file or deletion vector names, if any."""
    return file_scope(delete_file) if delete_file.content == DataFileContent.POSITION_DELETES else None


def _live_partitions(table: Table, branch: str, paths: set[str]) -> dict[str, PartitionKey]:
    """(spec id, partition) of each live data file at the head of ``branch`` whose path is in ``paths``."""
    head = table.metadata.snapshot_by_name(branch)
    if head is None:
        return {}
    manifests = [m for m in head.manifests(table.io) if m.content == ManifestContent.DATA]
    wanted = pa.array(sorted(paths), pa.string())
    found: dict[str, PartitionKey] = {}
    for columns in manifest_columns(manifests, table.io, partition_type_resolver(table)):
        file_paths = columns.column("file_path")
        rows = np.flatnonzero(pc.is_in(file_paths, value_set=wanted).to_numpy(zero_copy_only=False))
        if not len(rows):
            continue
        codes, _ = columns.partition_groups
        keys = partition_keys(columns)
        for row in rows.tolist():
            found[file_paths[row].as_py()] = keys[codes[row]]
    return found
