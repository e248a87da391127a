"""The executor side of a rewrite: a file group's files read through the merge-on-read reader and written anew.

1. ``plan_rewrite_tasks``: each group's files become whole-file slices with the deletes the planner attached, split
   on row-group boundaries and packed into tasks of the group's input split size with no open-file cost (as Java
   reads a group), so each task writes about one output file. Tasks never mix groups.
2. ``rewrite_contexts``: the scan context reads every column of the table's current schema (plus the columns only
   equality deletes name, e.g. of a dropped column), and on v3 each row's lineage (``_row_id`` and
   ``_last_updated_sequence_number``, stored or inherited), which the written files store, as Iceberg Java's rewrite
   does: rows moved by a rewrite keep their ids and sequence numbers (spec: "Row Lineage"). The write context writes
   the current schema (plus the lineage columns on v3) with the plan's output spec (``output-spec-id``) and the
   table's sort order (a sort or z-order rewrite sorts rows itself and marks files with its own order's id), rolling
   files at the plan's writer max file size (Java's ``writeMaxFileSize``).
3. ``rewrite_task`` (on an executor): the task's surviving rows (position deletes, deletion vectors and equality
   deletes applied), split by the output spec's partitions, sorted by the table's sort order, written; returns the
   written files as plain dicts (``write.file_entries``). The rows stream: each batch the reader yields goes to a
   rolling writer of its partition, so a task holds about one row group per partition, not a whole output file.
   A table with a sort order is the exception: its task's rows are gathered and sorted before they are written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.table import Table, TableProperties

from spark_jobs.engine.compaction.planner import FileGroup, RewritePlan
from spark_jobs.engine.planning.scan_context import ScanContext, row_lineage_fields, with_row_lineage
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.planning.splitting import SplitSettings, pack_slices, split_data_file
from spark_jobs.engine.read.session import build_scan_context
from spark_jobs.engine.read.task_scan import read_slices
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.write_context import WriteContext, write_data_stream


@dataclass(frozen=True)
class RewriteTask:
    """One executor task: slices of one group's files whose surviving rows become about one output file."""

    group_index: int  # the group's global index in the plan
    task_index: int  # within the group
    slices: tuple[DataFileSlice, ...]

    @property
    def input_bytes(self) -> int:
        """Bytes of data file slices this task reads."""
        return sum(data_file_slice.length for data_file_slice in self.slices)


@dataclass(frozen=True)
class RewriteContexts:
    """What every rewrite task of one plan reads with and writes with (both picklable)."""

    scan: ScanContext
    write: WriteContext


def plan_rewrite_tasks(table: Table, groups: tuple[FileGroup, ...] | list[FileGroup]) -> list[RewriteTask]:
    """The tasks of ``groups``: per group, its files split and packed at the group's input split size."""
    tasks: list[RewriteTask] = []
    for group in groups:
        settings = SplitSettings.from_table_properties(
            table.properties, split_size=group.input_split_size, open_file_cost=0
        )
        slices = [
            piece
            for candidate in group.files
            for piece in split_data_file(candidate.as_slice(table), group.input_split_size)
        ]
        for index, scan_task in enumerate(pack_slices(slices, settings)):
            tasks.append(RewriteTask(group.global_index, index, scan_task.slices))
    return tasks


def rewrite_contexts(table: Table, plan: RewritePlan, tasks: list[RewriteTask]) -> RewriteContexts:
    """The scan and write contexts of a rewrite of ``table`` (module doc, step 2)."""
    schema = table.schema()
    lineage = row_lineage_fields(table)
    files = [data_file for task in tasks for data_file in task.slices]
    scan = build_scan_context(table, schema, [*schema.fields, *lineage], files)
    write = WriteContext.for_table(table, with_row_lineage(schema) if lineage else None)
    properties = {**write.properties, TableProperties.WRITE_TARGET_FILE_SIZE_BYTES: str(plan.write_max_file_size)}
    write = dataclasses.replace(write, properties=properties, default_spec_id=plan.output_spec_id)
    if plan.strategy.is_shuffling:  # rows arrive sorted by the strategy's keys; files carry its sort order id
        write = dataclasses.replace(write, sort_order_json=None, sort_order_id=plan.strategy.output_sort_order_id)
    return RewriteContexts(scan=scan, write=write)


def read_task_batches(task: RewriteTask, context: ScanContext, metrics: ScanMetrics) -> Iterator[pa.RecordBatch]:
    """The surviving rows of the task's slices, deletes applied, batch by batch in the scan's output schema."""
    yield from read_slices(task.slices, context, metrics)


def rewrite_task(
    task: RewriteTask, contexts: RewriteContexts, metrics: ScanMetrics, attempt_tag: str = "driver"
) -> list[WrittenFile]:
    """Stream the task's rows into data files (module doc, step 3); the written files' descriptions."""
    batches = read_task_batches(task, contexts.scan, metrics)
    tag = f"g{task.group_index}-t{task.task_index}-{attempt_tag}"
    return write_data_stream(batches, contexts.write, tag, contexts.scan.output_schema)
