"""Write merge-on-read delete files: position deletes (file_path, pos) and equality deletes (key columns).

- Position deletes: one file per partition, rows sorted by (file_path, pos) as the spec requires; the schema is the
  spec's reserved fields ``file_path`` (2147483546) and ``pos`` (2147483545); bounds of ``file_path`` are kept whole
  so readers can tell which data files a file touches. A file whose rows all name one data file records it as
  ``referenced_data_file``.
- Equality deletes: the key columns of the table schema (their field ids), the ids listed in ``equality_ids``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.write.arrow_schema import conform_to_schema
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.parquet_files import FileTarget, write_files

FILE_PATH_FIELD_ID = 2147483546
POS_FIELD_ID = 2147483545
POSITION_DELETE_SCHEMA = Schema(
    NestedField(FILE_PATH_FIELD_ID, "file_path", StringType(), required=True),
    NestedField(POS_FIELD_ID, "pos", LongType(), required=True),
)
# Whole bounds for file_path (the default metrics mode truncates strings to 16 characters).
_POSITION_DELETE_METRICS = {"write.metadata.metrics.column.file_path": "full"}


def write_position_deletes(positions: pa.Table, target: FileTarget) -> list[WrittenFile]:
    """Write ``positions`` (columns file_path, pos) of one partition sorted by (file_path, pos)."""
    if positions.num_rows == 0:
        return []
    ordered = conform_to_schema(positions.select(["file_path", "pos"]), POSITION_DELETE_SCHEMA)
    ordered = ordered.take(pc.sort_indices(ordered, sort_keys=[("file_path", "ascending"), ("pos", "ascending")]))
    distinct_paths = pc.unique(ordered.column("file_path"))
    referenced = distinct_paths[0].as_py() if len(distinct_paths) == 1 else None
    delete_target = FileTarget(
        io=target.io,
        new_path=target.new_path,
        schema=POSITION_DELETE_SCHEMA,
        properties={**target.properties, **_POSITION_DELETE_METRICS},
        spec_id=target.spec_id,
        partition_values=target.partition_values,
        content=DataFileContent.POSITION_DELETES,
        referenced_data_file=referenced,
    )
    return write_files(ordered, delete_target)


def write_equality_deletes(
    keys: pa.Table, table_schema: Schema, key_names: list[str], target: FileTarget
) -> list[WrittenFile]:
    """Write the distinct key rows ``keys`` (columns ``key_names``) as equality deletes on their field ids."""
    if keys.num_rows == 0:
        return []
    key_schema = table_schema.select(*key_names)
    rows = conform_to_schema(keys.select(key_names), key_schema)
    rows = rows.group_by(key_names, use_threads=False).aggregate([]).select(key_names)
    rows = conform_to_schema(rows, key_schema)
    delete_target = FileTarget(
        io=target.io,
        new_path=target.new_path,
        schema=key_schema,
        properties=target.properties,
        spec_id=target.spec_id,
        partition_values=target.partition_values,
        content=DataFileContent.EQUALITY_DELETES,
        equality_ids=tuple(table_schema.find_field(name).field_id for name in key_names),
    )
    return write_files(rows, delete_target)
