"""Leave out, before indexing, the position deletes and deletion vectors of data files the scan does not read.

Indexing a delete file builds a Python record for it; a filtered scan of a table with many delete files would
build one for every delete file of the snapshot although few apply to the files it reads. Iceberg Java's rule for
a delete file scoped to one data file (``ContentFileUtil.isFileScoped``) makes most of them decidable on columns:

1. A position delete file or deletion vector names its one data file by ``referenced_data_file``, or by equal lower
   and upper bounds of its ``file_path`` column (``delete_index.file_scope``'s rule).
2. Those whose one data file is not among the scan's surviving data files cannot apply: their rows are left out.
3. Every other delete file (equality deletes, position deletes that may hold several files) is kept, in order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_jobs.engine.planning.delete_index import DELETE_FILE_PATH_FIELD_ID
from spark_jobs.engine.table.manifest_columns import CONTENT_POSITION_DELETES, ManifestColumns


def rows_that_may_apply(deletes: ManifestColumns, data_paths: pa.Array) -> np.ndarray:
    """The rows of ``deletes`` (delete entries with their statistics) that may apply to a file of ``data_paths``."""
    is_position = deletes.numpy("content") == CONTENT_POSITION_DELETES
    if not is_position.any():
        return np.arange(deletes.num_rows)
    target = _scoped_path(deletes)
    scoped = target.is_valid().to_numpy(zero_copy_only=False)
    read = pc.is_in(target, value_set=data_paths.cast(pa.binary())).fill_null(False).to_numpy(zero_copy_only=False)
    keep = ~is_position | ~scoped | read
    return np.flatnonzero(keep)


def _scoped_path(deletes: ManifestColumns) -> pa.Array:
    """Each entry's one data file as bytes (null when it may hold several): step 1."""
    referenced = deletes.column("referenced_data_file").cast(pa.binary())
    key = pa.scalar(DELETE_FILE_PATH_FIELD_ID, pa.int32())
    lower = pc.map_lookup(deletes.column("lower_bounds"), key, "first")
    upper = pc.map_lookup(deletes.column("upper_bounds"), key, "first")
    bounded = pc.if_else(pc.equal(lower, upper).fill_null(False), lower, pa.scalar(None, pa.binary()))
    return pc.coalesce(referenced, bounded)
