"""The snapshot each ingest mode commits, from the files the executors wrote (plain dicts, ``write.file_entries``).

1. ``append_change``: the new data files (``None`` when the source was empty: nothing to commit).
2. ``overwrite_change``: the new data files and the live files they replace. Dynamic overwrite keeps the replaced
   partitions free of concurrent new data; overwrite by filter keeps every partition free.
3. ``row_level_change``: delete files (position or equality) and, for an upsert, the new data files; its operation
   follows what it adds. A position-mode delete stays valid when data was appended meanwhile (its deletes name
   their rows); anything else refuses new data anywhere. The data files its position deletes point at must stay
   live. On v3 its deletion vectors replace the data files' old ones in the same commit (and their file-scoped
   position delete files, left by a table written as v2: the vectors merge their positions), and a concurrent
   delete for those data files is a conflict (two vectors for one file would each miss the other's rows).
4. ``for_commit``: what every ingest commit carries: the idempotency key, the mode in the summary, and a schema
   change committed atomically with the data.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update import AddSchemaUpdate, AssertCurrentSchemaId, SetCurrentSchemaUpdate

from spark_jobs.engine.commit.snapshot_change import PartitionKey, SnapshotChange
from spark_jobs.engine.ingest.options import IngestOptions
from spark_jobs.engine.write.file_entries import WrittenFile, to_data_file
from spark_jobs.engine.write.schema_check import SchemaCheck

MODE_PROPERTY = "airflow-iceberg-provider.ingest-mode"
DATA_CONTENT = 0


def written_partitions(written: Sequence[WrittenFile]) -> set[PartitionKey]:
    """The (spec id, partition values) the written files fall in."""
    return {item.partition_key for item in written}


def append_change(written: Sequence[WrittenFile]) -> SnapshotChange | None:
    """Append the written data files; nothing when there are none."""
    if not written:
        return None
    return SnapshotChange(Operation.APPEND, added_data_files=[to_data_file(item) for item in written])


def overwrite_change(
    written: Sequence[WrittenFile], removed_paths: set[str], kept_free: set[PartitionKey] | None
) -> SnapshotChange | None:
    """Replace ``removed_paths`` by the written files; ``kept_free``: partitions no concurrent data may land in."""
    if not written and not removed_paths:
        return None
    return SnapshotChange(
        Operation.OVERWRITE,
        added_data_files=[to_data_file(item) for item in written],
        removed_data_file_paths=set(removed_paths),
        no_new_data_in_partitions=kept_free,
    )


def row_level_change(
    written: Sequence[WrittenFile],
    options: IngestOptions,
    required_paths: set[str],
    *,
    replaced_vectors: set[tuple[str, int]] | None = None,
    replaced_position_deletes: set[str] | None = None,
    deletion_vectors: bool = False,
) -> SnapshotChange | None:
    """Upsert or delete by key: the delete files and new data written, validated as the module doc says.

    With ``deletion_vectors`` (v3), ``replaced_vectors`` (Puffin path, offset) are the data files' old vectors and
    ``replaced_position_deletes`` their file-scoped position delete files, which the new vectors merge: both are
    removed in the same commit, and no concurrent delete may land for ``required_paths``.
    """
    data = [to_data_file(item) for item in written if item.content == DATA_CONTENT]
    deletes = [to_data_file(item) for item in written if item.content != DATA_CONTENT]
    if not data and not deletes:
        return None
    pure_position_delete = options.mode == "delete" and options.delete_mode == "position"
    return SnapshotChange(
        Operation.OVERWRITE if data and deletes else (Operation.APPEND if data else Operation.DELETE),
        added_data_files=data,
        added_delete_files=deletes,
        no_new_data_in_partitions=set() if pure_position_delete else None,
        required_data_file_paths=required_paths,
        removed_deletion_vectors=set(replaced_vectors or ()),
        removed_delete_file_paths=set(replaced_position_deletes or ()),
        no_new_deletes_for_data_files=set(required_paths) if deletion_vectors else set(),
    )


def for_commit(change: SnapshotChange, table: Table, options: IngestOptions, checked: SchemaCheck) -> SnapshotChange:
    """``change`` with the idempotency key, the mode in the summary, and the schema change when the schema evolves."""
    change.idempotency_key = options.idempotency_key
    change.summary_properties[MODE_PROPERTY] = options.mode
    if checked.evolves:
        change.extra_updates = (AddSchemaUpdate(schema_=checked.schema), SetCurrentSchemaUpdate(schema_id=-1))
        change.extra_requirements = (AssertCurrentSchemaId(current_schema_id=table.metadata.current_schema_id),)
    return change
