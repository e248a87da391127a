"""Read a scan's manifests on the Spark executors: Iceberg Java's distributed planning, for ``file_selection``.

``SparkManifestReader`` is the ``RemoteManifestReader`` the planner uses when the planning mode says distributed
(``planning.planning_mode``):

1. One Spark task per manifest (``parallelize`` with a slice each). Each closes over the entry filter (schema, row
   filter, partition specs), the partition types, whether to decode with DuckDB (the manifests' total size decides,
   as locally), and the table's FileIO properties: storage credentials ride in the closure as they do for scans,
   never on a command line or in a log.
2. Each task decodes its manifest into columns (DuckDB's avro extension where the executor has it, else pyiceberg),
   keeps the surviving entries (``file_selection.surviving_entries``: the same code a local plan runs) and returns
   them as Arrow IPC bytes with the manifest's count of data files.
3. The driver collects the results and puts them back in manifest order: the survivors a local read gives, so the
   same tasks. The engine must already be on the executors (``job_support.engine_on_executors``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyiceberg.io import load_file_io
from pyiceberg.manifest import ManifestFile
from pyiceberg.table import Table
from pyiceberg.types import IcebergType, StructType
from pyspark.sql import SparkSession

from spark_jobs.engine.planning.entry_filter import EntryFilter
from spark_jobs.engine.planning.file_selection import surviving_entries
from spark_jobs.engine.shared.storage import file_io_properties
from spark_jobs.engine.table.manifest_columns import ManifestColumns, decode_manifest, use_duckdb_for
from spark_jobs.spark.scan import read_parallelism

log = logging.getLogger(__name__)


class SparkManifestReader:
    """Reads manifests on the executors of ``spark`` for planning scans (module doc)."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    @property
    def parallelism(self) -> int:
        """Spark's task slots: how many manifests the cluster reads at once."""
        return read_parallelism(self._spark)

    def survivors(
        self,
        table: Table,
        manifests: Sequence[ManifestFile],
        entry_filter: EntryFilter,
        partition_types: dict[int, StructType],
        *,
        deletes: bool,
        with_statistics: bool,
    ) -> list[tuple[ManifestColumns, int]]:
        """Per manifest, in order: its surviving entries with the columns planning needs, and its data files."""
        if not manifests:
            return []
        kind = "delete" if deletes else "data"
        table_name = ".".join(table.name())
        log.info("planning %s: reading %d %s manifests on the executors", table_name, len(manifests), kind)
        job = _ManifestJob(
            entry_filter=entry_filter,
            partition_types=partition_types,
            io_properties=file_io_properties(table.io.properties),
            location=table.metadata.location,
            deletes=deletes,
            with_statistics=with_statistics,
            use_duckdb=use_duckdb_for(manifests),
        )
        context = self._spark.sparkContext
        context.setJobDescription(f"Planning {kind} for {table_name} ({len(manifests)} manifests)")
        try:
            indexed = list(enumerate(manifests))
            results = context.parallelize(indexed, len(indexed)).mapPartitions(job.run).collect()
        finally:
            context.setJobDescription(None)  # type: ignore[arg-type]
        ordered = sorted(results, key=lambda result: result[0])
        return [(_columns_from_ipc(*result[1:5]), result[5]) for result in ordered]


class _ManifestJob:
    """What each planning task runs: decode its manifest, keep the survivors, return them as Arrow IPC."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    def run(self, items: Iterable[tuple[int, ManifestFile]]) -> Iterator[tuple[Any, ...]]:
        settings = self.settings
        io = load_file_io(settings["io_properties"], settings["location"])
        for index, manifest in items:
            partition_type = settings["partition_types"][manifest.partition_spec_id]
            columns = decode_manifest(manifest, io, partition_type, use_duckdb=settings["use_duckdb"])
            kept, data_files = surviving_entries(
                columns,
                settings["entry_filter"],
                deletes=settings["deletes"],
                with_statistics=settings["with_statistics"],
            )
            yield index, _ipc_bytes(kept.table), kept.manifest_path, kept.spec_id, kept.partition_types, data_files


def _ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _columns_from_ipc(
    data: bytes, manifest_path: str, spec_id: int, partition_types: Sequence[IcebergType]
) -> ManifestColumns:
    table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    return ManifestColumns(manifest_path, spec_id, table, tuple(partition_types))
