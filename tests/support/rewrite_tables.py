"""Tables for rewrite tests: many small data files in two partitions, with position and equality deletes.

Built with the project's own writers and committer (as the ingest job writes them); rows are read back through the
merge-on-read reader and compared with the order-independent checksum of the conformance corpus.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.manifest import ManifestContent
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.compaction import RewritePlan
from spark_jobs.engine.compaction.planner import FileGroup
from spark_jobs.engine.compaction.range_partitioning import sample_size_per_task
from spark_jobs.engine.compaction.rewrite_commit import GroupRewrite
from spark_jobs.engine.compaction.rewrite_tasks import plan_rewrite_tasks, rewrite_contexts, rewrite_task
from spark_jobs.engine.compaction.shuffle_tasks import (
    key_scan_context,
    needs_sampling,
    route_task,
    sample_task,
    wave_ranges,
    write_output,
)
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_entries import read_live_entries
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import (
    WriteContext,
    write_data,
    write_equality_delete_rows,
    write_position_delete_rows,
)
from tests.support.conformance import table_checksum

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "category", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))
ROWS_PER_FILE = 20


def rows(ids: list[int], category: str) -> pa.Table:
    """Rows with the given ids in one category."""
    return pa.table({"id": pa.array(ids, pa.int64()), "category": [category] * len(ids)})


def build_events(sql_catalog) -> Table:
    """Format v2, partitioned by category: 6 appends of one 20-row file each to 'a' and 'b' (ids 0..239)."""
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.events", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    for index in range(12):
        category = "ab"[index % 2]
        append(table, rows(list(range(index * ROWS_PER_FILE, (index + 1) * ROWS_PER_FILE)), category), f"a{index}")
    return table


def append(table: Table, data: pa.Table, tag: str) -> list:
    """Commit ``data`` as new data files; their DataFile entries."""
    files = [to_data_file(item) for item in write_data(data, WriteContext.for_table(table), tag)]
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    return files


def live_data_files(table: Table) -> list:
    """The data files (with rows) of the current snapshot, in scan order."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    return [
        entry.data_file
        for manifest in snapshot.manifests(table.io)
        if manifest.content == ManifestContent.DATA
        for entry in read_live_entries(manifest, table.io)
        if entry.data_file.record_count > 0
    ]


def position_delete_change(table: Table, ids_to_delete: set[int], tag: str) -> SnapshotChange:
    """A delete change: position delete files (one per data file) for the rows with these ids."""
    context = WriteContext.for_table(table)
    written, required = [], set()
    for data_file in live_data_files(table):
        ids = pq.read_table(data_file.file_path.removeprefix("file://")).column("id").to_pylist()
        positions = [pos for pos, value in enumerate(ids) if value in ids_to_delete]
        if positions:
            required.add(data_file.file_path)
            deletes = pa.table({"file_path": [data_file.file_path] * len(positions), "pos": positions})
            written += write_position_delete_rows(
                deletes, context, data_file.spec_id, tuple(data_file.partition), f"{tag}-{len(written)}"
            )
    return SnapshotChange(
        Operation.DELETE,
        added_delete_files=[to_data_file(item) for item in written],
        no_new_data_in_partitions=None,
        required_data_file_paths=required,
    )


def upsert_change(table: Table, ids_by_category: dict[str, list[int]], tag: str) -> SnapshotChange:
    """An upsert as the ingest job commits it: position deletes for the rows with these ids, and the new rows."""
    change = position_delete_change(table, {i for ids in ids_by_category.values() for i in ids}, tag)
    context = WriteContext.for_table(table)
    for category, ids in ids_by_category.items():
        change.added_data_files += [to_data_file(item) for item in write_data(rows(ids, category), context, f"{tag}-n")]
    change.operation = Operation.OVERWRITE
    return change


def equality_delete_change(table: Table, ids_by_category: dict[str, list[int]], tag: str) -> SnapshotChange:
    """A delete change: one equality delete file on ``id`` per category partition."""
    context = WriteContext.for_table(table)
    written = []
    for category, ids in ids_by_category.items():
        written += write_equality_delete_rows(
            pa.table({"id": pa.array(ids, pa.int64())}),
            context,
            key_names=["id"],
            spec_id=table.spec().spec_id,
            partition_values=(category,),
            task_tag=f"{tag}-{category}",
        )
    return SnapshotChange(
        Operation.DELETE,
        added_delete_files=[to_data_file(item) for item in written],
        no_new_data_in_partitions=None,
    )


def read_rows(table: Table) -> pa.Table:
    """The table's current rows through the merge-on-read reader."""
    return open_read_session(table.catalog, table.catalog.load_table(table.name())).to_arrow()


def ids_and_checksum(table: Table) -> tuple[list[int], str]:
    """Sorted ids and the order-independent checksum of every column."""
    data = read_rows(table)
    return sorted(data.column("id").to_pylist()), table_checksum(data, data.column_names)[0]


def rewrite_locally(table: Table, plan: RewritePlan, groups: list[FileGroup] | None = None) -> list[GroupRewrite]:
    """Run the rewrite tasks of ``groups`` (default: all) in this process, as executors would; commit nothing."""
    groups = list(plan.groups if groups is None else groups)
    tasks = plan_rewrite_tasks(table, groups)
    contexts = rewrite_contexts(table, plan, tasks)
    written: dict[int, list] = {group.global_index: [] for group in groups}
    metrics = ScanMetrics()
    for task in tasks:
        written[task.group_index] += rewrite_task(task, contexts, metrics)
    return [GroupRewrite(group, tuple(written[group.global_index])) for group in groups]


def shuffle_rewrite_locally(
    table: Table, plan: RewritePlan, groups: list[FileGroup] | None = None
) -> list[GroupRewrite]:
    """A sort or z-order rewrite of ``groups`` in this process: sample, bounds, route, shuffle by key, write."""
    groups = list(plan.groups if groups is None else groups)
    strategy = plan.strategy
    keys = strategy.keys
    assert keys is not None
    tasks = plan_rewrite_tasks(table, groups)
    contexts = rewrite_contexts(table, plan, tasks)
    metrics = ScanMetrics()
    sampling = key_scan_context(contexts, keys)
    samples: dict[int, list] = {}
    for task in tasks:
        group = next(g for g in groups if g.global_index == task.group_index)
        if needs_sampling(group, strategy.shuffle_partitions_per_file):
            size = sample_size_per_task(group.expected_output_files * strategy.shuffle_partitions_per_file, len(tasks))
            samples.setdefault(task.group_index, []).append(sample_task(task, sampling, keys, size, metrics))
    ranges = {r.group_index: r for r in wave_ranges(groups, samples, keys, strategy.shuffle_partitions_per_file)}
    routed = sorted(
        (item for task in tasks for item in route_task(task, contexts, keys, ranges[task.group_index], metrics)),
        key=lambda item: item[0],
    )
    written: dict[int, list] = {group.global_index: [] for group in groups}
    for output, chunks in itertools.groupby(routed, key=lambda item: item[0][0]):
        group_index = next(
            r.group_index for r in ranges.values() if r.first_output <= output < r.first_output + r.outputs
        )
        written[group_index] += write_output(list(chunks), contexts, keys, f"g{group_index}-o{output}")
    return [GroupRewrite(group, tuple(written[group.global_index])) for group in groups]


def exists(path: str) -> bool:
    """Whether a file:// or plain local path exists."""
    return Path(path.removeprefix("file://")).exists()
