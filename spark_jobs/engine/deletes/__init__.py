"""Deletes on the executor side: which rows of a data file its delete files remove.

- ``position_deletes``: ``load_deleted_positions`` gives the sorted deleted positions of a data file, from its
  deletion vector (``deletion_vectors``) or else from its position delete files.
- ``equality_deletes``: ``load_equality_deletes`` gives one ``EqualityDeleteSet`` (a ``RowPredicate``) per set of
  equality field ids; late materialization asks it for a keep mask (and keeps the answer per row group, keyed by
  its ``cache_identity``: ``parquet.rejected_rows_cache``).
- ``pending_equality_deletes``: the same sets loading on helper threads while the data file decodes; the first keep
  mask waits for them.
- ``cache``: the process-wide bounded cache, so a delete file shared by many data files is read once.
- ``parquet_field_ids``: delete file columns found by Iceberg field id.
"""

from spark_jobs.engine.deletes.cache import DeleteFileCache, delete_file_cache
from spark_jobs.engine.deletes.deletion_vectors import decode_deletion_vector_blob, read_deletion_vector
from spark_jobs.engine.deletes.equality_deletes import EqualityDeleteSet, load_equality_deletes
from spark_jobs.engine.deletes.position_deletes import DeletedPositions, load_deleted_positions

__all__ = [
    "DeleteFileCache",
    "DeletedPositions",
    "EqualityDeleteSet",
    "decode_deletion_vector_blob",
    "delete_file_cache",
    "load_deleted_positions",
    "load_equality_deletes",
    "read_deletion_vector",
]
