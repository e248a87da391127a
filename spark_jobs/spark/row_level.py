"""Row-level deletes by key (upsert and delete): four strategies, one picked from a table by what the job knows.

| delete mode | table format | keys decide the partition | strategy                      | reads the table |
|-------------|--------------|---------------------------|-------------------------------|-----------------|
| position    | v2           | any                       | ``PositionDeleteFiles``       | yes             |
| position    | v3           | any                       | ``DeletionVectors``           | yes             |
| equality    | any          | yes                       | ``EqualityDeletesByPartition``| no              |
| equality    | any          | no                        | ``EqualityDeletesWhereFound`` | yes             |

Each takes the same ``KeyMatch`` (the batch's keys, the live files that may hold them, the scan of their key
columns) and returns ``RowLevelDeletes``: the delete files written, the rows deleted, and what the commit must
check (the data files named must still be live) or replace (the deletion vectors and file-scoped position delete
files the new vectors supersede). A strategy that reads the table keeps the matched rows cached when an upsert
keeps their ``_row_id`` (v3, position mode); the caller unpersists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import pyarrow as pa
from pyiceberg.table import Table
from pyspark.sql import DataFrame, SparkSession

from spark_jobs.engine.ingest.live_files import key_scan_context, keys_decide_partition, partitions_of
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.write_context import WriteContext
from spark_jobs.spark.write import (
    ORDINAL_COLUMN,
    key_positions,
    write_deletion_vectors,
    write_equality_deletes,
    write_position_deletes,
)


@dataclass(frozen=True)
class KeyMatch:
    """What every strategy starts from: the batch's distinct keys and the live files that may hold them."""

    spark: SparkSession
    table: Table
    context: WriteContext
    key: list[str]
    batch_keys: DataFrame  # the batch's distinct keys, in the table's key types
    files: list[DataFileSlice]  # live data files that may hold a batch key, their deletes attached
    shipped_keys: pa.Table | None  # the keys collected on the driver (then the key scan filters by them)
    keeps_row_ids: bool  # an upsert on v3 by position: the matched rows' _row_id are kept

    def matched_positions(self) -> tuple[DataFrame, list[tuple[int, tuple[object, ...]]]]:
        """The table rows whose key is in the batch (file_path, pos, partition ordinal, keys, and _row_id when
        kept), and the partitions the ordinals index."""
        partitions = partitions_of(self.files)
        ordinal = {partition: index for index, partition in enumerate(partitions)}
        files_with_ordinals = [(f, ordinal[(f.spec_id, f.partition)]) for f in self.files]
        scan = key_scan_context(self.table, self.key, self.files, with_row_id=self.keeps_row_ids)
        positions = key_positions(self.spark, files_with_ordinals, scan, self.shipped_keys)
        if self.shipped_keys is not None:
            return positions, partitions
        return positions.join(self.batch_keys, on=self.key, how="left_semi"), partitions


@dataclass
class RowLevelDeletes:
    """A strategy's outcome: its delete files, the rows deleted (``None``: unknown, equality deletes by key), the
    data files the commit requires live, what it replaces, and the cached matched rows (if kept)."""

    written: list[WrittenFile]
    rows_deleted: int | None
    required: set[str] = field(default_factory=set)
    replaced_vectors: set[tuple[str, int]] = field(default_factory=set)
    replaced_position_deletes: set[str] = field(default_factory=set)
    matched_rows: DataFrame | None = None


class RowLevelStrategy(Protocol):
    """Writes the deletes of one row-level ingest (module doc)."""

    reads_table: ClassVar[bool]

    def write_deletes(self, match: KeyMatch) -> RowLevelDeletes:
        """The delete files for the batch's keys, and what the commit needs to know of them."""
        ...


class PositionDeleteFiles:
    """v2, position mode: the matched positions as position delete files, one set per partition, in one Spark job;
    each file says which data files it names and how many positions it holds."""

    reads_table: ClassVar[bool] = True

    def write_deletes(self, match: KeyMatch) -> RowLevelDeletes:
        """Position delete files for the matched rows."""
        matched, partitions = match.matched_positions()
        deletes = write_position_deletes(matched, match.context, partitions)
        return RowLevelDeletes(
            written=deletes,
            rows_deleted=sum(item.record_count for item in deletes),
            required={path for item in deletes for path in item.deleted_from_data_files},
        )


class DeletionVectors:
    """v3, position mode: one deletion vector per data file, merged with what its current deletes remove; the old
    vectors and the file-scoped position delete files of those data files are replaced (as Iceberg Java does)."""

    reads_table: ClassVar[bool] = True

    def write_deletes(self, match: KeyMatch) -> RowLevelDeletes:
        """Deletion vectors for the matched rows (the matched rows stay cached for the row ids an upsert keeps)."""
        matched, partitions = match.matched_positions()
        matched = matched.cache()
        rows_deleted = matched.count()
        live = {f.path: f for f in match.files}
        vectors = write_deletion_vectors(matched, match.context, partitions, live)
        required = {item.referenced_data_file for item in vectors if item.referenced_data_file is not None}
        return RowLevelDeletes(
            written=vectors,
            rows_deleted=rows_deleted,
            required=required,
            replaced_vectors={
                (dv.path, dv.content_offset) for path in required if (dv := live[path].deletion_vector) is not None
            },
            # The new vectors hold their positions too: file-scoped position delete files (of a table written
            # before it became v3) go; those naming other data files stay.
            replaced_position_deletes={
                delete_file.path
                for path in required
                for delete_file in live[path].position_deletes
                if delete_file.referenced_data_file == path
            },
            matched_rows=matched,
        )


class EqualityDeletesByPartition:
    """Equality mode where the spec's source columns are keys: the batch's keys, split by the partition they
    decide; the table is not read, so the rows deleted are unknown."""

    reads_table: ClassVar[bool] = False

    def write_deletes(self, match: KeyMatch) -> RowLevelDeletes:
        """Equality delete files of the batch's keys."""
        return RowLevelDeletes(
            written=write_equality_deletes(match.batch_keys, match.context, match.key, None), rows_deleted=None
        )


class EqualityDeletesWhereFound:
    """Equality mode where the keys do not decide the partition: the keys found by reading the table, written to
    the partitions they were found in."""

    reads_table: ClassVar[bool] = True

    def write_deletes(self, match: KeyMatch) -> RowLevelDeletes:
        """Equality delete files of the matched keys, per partition found."""
        matched, partitions = match.matched_positions()
        matched = matched.cache()
        rows_deleted = matched.count()
        keys = matched.select(*match.key, ORDINAL_COLUMN)
        written = write_equality_deletes(keys, match.context, match.key, partitions)
        return RowLevelDeletes(written=written, rows_deleted=rows_deleted, matched_rows=matched)


# (delete mode, deletion vectors: format v3, keys decide the partition) -> the strategy (module doc's table).
STRATEGIES: dict[tuple[str, bool, bool], type[RowLevelStrategy]] = {
    ("position", False, False): PositionDeleteFiles,
    ("position", False, True): PositionDeleteFiles,
    ("position", True, False): DeletionVectors,
    ("position", True, True): DeletionVectors,
    ("equality", False, True): EqualityDeletesByPartition,
    ("equality", True, True): EqualityDeletesByPartition,
    ("equality", False, False): EqualityDeletesWhereFound,
    ("equality", True, False): EqualityDeletesWhereFound,
}


def choose_strategy(table: Table, delete_mode: str, key: list[str], files: list[DataFileSlice]) -> RowLevelStrategy:
    """The strategy for this table, delete mode and key (module doc); position mode never asks about partitions."""
    deletion_vectors = table.metadata.format_version >= 3
    decides_partition = delete_mode == "equality" and keys_decide_partition(table, key, files)
    return STRATEGIES[(delete_mode, deletion_vectors, decides_partition)]()
