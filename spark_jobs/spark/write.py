"""Spark side of writes: executors write data and delete files with ``mapInArrow``; the driver gets plain dicts.

- ``write_dataframe``: every Spark partition writes its rows as data files (split by the table's partition spec,
  sorted, rolled), returning one pickled file description per row.
- ``key_positions``: a DataFrame of (file_path, pos, partition ordinal, key columns[, _row_id]) of the live rows of
  the given data files, read by the per-task scan every read runs (one Spark task per data file). Joined with a
  batch's keys it gives the positions to delete (and on v3 the row ids an upsert's new rows keep).
- ``write_position_deletes`` / ``write_equality_deletes``: executors write one partition's deletes per group.
"""

from __future__ import annotations

import contextlib
import itertools
import pickle
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import GeographyType, GeometryType, IcebergType
from pyiceberg.types import ListType as IcebergList
from pyiceberg.types import MapType as IcebergMap
from pyiceberg.types import StructType as IcebergStruct
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import ArrayType, BinaryType, DataType, MapType, StructType

from spark_jobs.engine.ingest.batch_keys import rows_with_keys
from spark_jobs.engine.jobs.executor import write_files
from spark_jobs.engine.parquet.key_bloom_probe import KeyBloomProbe
from spark_jobs.engine.planning.metrics_filter import sorted_key_values
from spark_jobs.engine.planning.scan_context import ROW_ID, ROW_POSITION, ScanContext
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.planning.splitting import (
    DEFAULT_LOOKBACK,
    DEFAULT_OPEN_FILE_COST,
    DEFAULT_SPLIT_SIZE,
    pack_weights,
    slice_weight,
)
from spark_jobs.engine.read.task_scan import read_slice
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.write.background_write import BackgroundWrite
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.parquet_source import ParquetSource, SourceRun, read_source_task
from spark_jobs.engine.write.task_files import RequiredNulls, TaskFiles, files_without_nulls, written_or_nulls
from spark_jobs.engine.write.write_context import (
    WriteContext,
    write_data_stream,
    write_equality_delete_rows,
    write_position_delete_rows,
)
from spark_jobs.spark.executor import SparkExecutor, task_attempt_tag
from spark_jobs.spark.types import estimated_row_bytes

_ARROW_UDF: Any  # Spark 4.1+: scalar iterator Arrow UDFs (flat columns to Python); before, writes use mapInArrow
_SCALAR_ITER: Any
try:
    from pyspark.sql.functions import ArrowUDFType, arrow_udf

    _ARROW_UDF, _SCALAR_ITER = arrow_udf, ArrowUDFType.SCALAR_ITER
except ImportError:  # pragma: no cover - Spark before 4.1
    _ARROW_UDF = _SCALAR_ITER = None

FILE_COLUMN = "file"
ORDINAL_COLUMN = "_partition_ordinal"
ARROW_BATCH_ROWS_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"
# The rows of each Arrow batch a write's mapInArrow receives, when the session leaves Spark's default of 10,000:
# about this many bytes of rows (by Spark's estimate of a row's size), within the bounds below. Fewer, larger
# batches cost less per row on both sides of the hand-over; the bounds keep a batch of wide rows small.
_ARROW_BATCH_BYTES = 8 << 20
_ARROW_BATCH_ROWS_MIN = 10_000
_ARROW_BATCH_ROWS_MAX = 131_072


def _collect_files(frame: DataFrame) -> list[WrittenFile]:
    return [pickle.loads(row[FILE_COLUMN]) for row in frame.collect()]


def _file_batch(described: Sequence[WrittenFile | RequiredNulls]) -> pa.RecordBatch:
    payloads = [pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL) for item in described]
    return pa.RecordBatch.from_arrays([pa.array(payloads, type=pa.binary())], names=[FILE_COLUMN])


def write_dataframe(frame: DataFrame, context: WriteContext) -> list[WrittenFile]:
    """Write ``frame`` (columns named as the table's) as data files on the executors; their descriptions.

    Each Spark partition streams into rolling writers (at most a row group per table partition in memory), except
    for a table with a sort order, whose task gathers its rows to sort them (``write_data_stream``). Nulls in a
    column the table requires raise ``RequiredColumnNullsError`` with the rows counted over every task
    (``engine/write/task_files.py``).
    """

    def write_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        first = next(batches, None)
        if first is None:
            return
        written = written_or_nulls(
            lambda: write_data_stream(itertools.chain([first], batches), context, task_attempt_tag(), first.schema)
        )
        if written:
            yield _file_batch(written)

    with arrow_batch_rows(frame):
        if _ARROW_UDF is not None and frame.columns:
            described = _written_through_arrow_udf(frame, context)
        else:
            described = _collect_task_files(frame.mapInArrow(write_partition, f"{FILE_COLUMN} binary"))
    return files_without_nulls(described)


def _collect_task_files(frame: DataFrame) -> TaskFiles:
    return [pickle.loads(row[FILE_COLUMN]) for row in frame.collect()]


def _written_through_arrow_udf(frame: DataFrame, context: WriteContext) -> TaskFiles:
    """``write_dataframe`` through an iterator Arrow UDF (Spark 4.1+): the rows reach Python as flat columns.

    ``mapInArrow`` wraps every row in a struct on the JVM side; a scalar iterator UDF hands the columns over as
    they are, for about a third less JVM work per row. The UDF must return one value per row: each batch's values
    are nulls, returned one batch late, and the last row of the task carries its pickled file descriptions. The
    task writes on a helper thread (``BackgroundWrite``) while it receives the next batch.
    """
    names = frame.columns

    def write_columns(column_batches: Iterator[Any]) -> Iterator[pa.Array]:
        tag = task_attempt_tag()
        background: BackgroundWrite[WrittenFile | RequiredNulls] = BackgroundWrite(
            lambda batches, schema: written_or_nulls(lambda: write_data_stream(batches, context, tag, schema))
        )
        held: list[int] = []  # rows of the batches whose (null) results are held back
        for columns in column_batches:
            arrays = list(columns) if isinstance(columns, tuple | list) else [columns]
            batch = pa.RecordBatch.from_arrays(arrays, names=names)
            background.put(batch)
            if batch.num_rows:
                for rows in held:
                    yield pa.nulls(rows, pa.binary())
                held = []
            held.append(batch.num_rows)
        written = background.finish()
        if not held:
            return
        payload = pickle.dumps(written, protocol=pickle.HIGHEST_PROTOCOL) if written else None
        last, rest = held[0], held[1:]  # the first held batch is the last one with rows (or all are empty)
        if last:
            yield pa.array([None] * (last - 1) + [payload], pa.binary())
        else:
            yield pa.nulls(0, pa.binary())
        for rows in rest:
            yield pa.nulls(rows, pa.binary())

    # Nondeterministic: evaluated exactly once per row (the filter below must not run the writes again).
    with warnings.catch_warnings():  # the UDF type is given, not read from type hints: one function for any columns
        warnings.simplefilter("ignore", UserWarning)
        udf = _ARROW_UDF(write_columns, "binary", _SCALAR_ITER).asNondeterministic()
    results = frame.select(udf(*[frame[name] for name in names]).alias(FILE_COLUMN))
    rows = results.where(F.col(FILE_COLUMN).isNotNull()).collect()
    return [item for row in rows for item in pickle.loads(row[FILE_COLUMN])]


@contextlib.contextmanager
def arrow_batch_rows(frame: DataFrame) -> Iterator[int]:
    """Hand ``frame``'s rows to Python in batches sized for its row width, while the block runs; the batch rows.

    A session that sets ``spark.sql.execution.arrow.maxRecordsPerBatch`` itself keeps its setting. Otherwise the
    setting is raised for the block (Spark reads it when the action plans) and unset after it.
    """
    conf = frame.sparkSession.conf
    chosen = conf.get(ARROW_BATCH_ROWS_KEY, None)
    if chosen is not None:
        yield int(chosen)
        return
    row_bytes = max(1, estimated_row_bytes(frame.schema))
    rows = max(_ARROW_BATCH_ROWS_MIN, min(_ARROW_BATCH_ROWS_MAX, _ARROW_BATCH_BYTES // row_bytes))
    conf.set(ARROW_BATCH_ROWS_KEY, str(rows))
    try:
        yield rows
    finally:
        conf.unset(ARROW_BATCH_ROWS_KEY)


def write_parquet_source(spark: SparkSession, source: ParquetSource, context: WriteContext) -> list[WrittenFile]:
    """Write a planned Parquet source as data files, each task reading its row groups with pyarrow.

    The rows go from the source files to the writer in Arrow, in the task: no JVM decoding, no row conversion. The
    tasks run through the executor seam's ``write_files`` (one Spark task each).
    """
    schema = source.arrow_schema

    def write_source_task(task: tuple[SourceRun, ...], _metrics: ScanMetrics, attempt: str) -> list[WrittenFile]:
        return write_data_stream(read_source_task(task, context.io, schema), context, attempt, schema)

    description = f"write {len(source.tasks)} source task(s) into {context.table_location}"
    return write_files(SparkExecutor(spark), source.tasks, write_source_task, description)[0]


def key_positions(
    spark: SparkSession,
    files: Sequence[tuple[DataFileSlice, int]],
    context: ScanContext,
    batch_keys: pa.Table | None = None,
) -> DataFrame:
    """(file_path, pos, partition ordinal, key columns) of the live rows of ``files`` (each with its ordinal), and
    ``_row_id`` last when ``context`` reads it.

    With ``batch_keys`` (the batch's distinct keys) only the rows holding one of them: a file whose bloom filters
    prove it holds none of them is not read (``parquet.key_bloom_probe``), and the tasks filter with pyarrow, so
    only the matched positions reach the JVM.

    ``context`` reads the key columns and ``_pos`` (``engine.ingest.live_files.key_scan_context``); whole files are
    packed into Spark tasks as a read packs them (split size, open-file cost: a task of many small files, not a Spark
    task per file) and read through the executor seam's ``SparkExecutor.task_frame``, each file by the per-task scan
    every read runs, so the deletes attached to a file (position deletes, a deletion vector) drop their rows and
    ``_pos`` stays each row's position in the file.
    """
    metadata = {ROW_POSITION.name, ROW_ID.name}
    key_fields = [field for field in context.output_schema if field.name not in metadata]
    lineage = [field.name for field in context.output_schema if field.name == ROW_ID.name]
    output = pa.schema(
        [
            pa.field("file_path", pa.string()),
            pa.field("pos", pa.int64()),
            pa.field(ORDINAL_COLUMN, pa.int32()),
            *(pa.field(field.name, field.type) for field in key_fields),
            *(pa.field(name, pa.int64()) for name in lineage),
        ]
    )
    weights = [slice_weight(data_file, DEFAULT_OPEN_FILE_COST) for data_file, _ in files]
    bins = [[files[i] for i in rows] for rows in pack_weights(weights, DEFAULT_SPLIT_SIZE, DEFAULT_LOOKBACK)]
    key_schema = pa.schema([pa.field(field.name, field.type) for field in key_fields])
    # Broadcast, not closed over: a Python worker loads the keys once for all the tasks it runs.
    shipped = (
        None
        if batch_keys is None or not files
        else spark.sparkContext.broadcast(batch_keys.select(key_schema.names).cast(key_schema))
    )

    def read_keys(task: list[tuple[DataFileSlice, int]], metrics: ScanMetrics) -> Iterator[pa.RecordBatch]:
        keys = None if shipped is None else shipped.value
        probe = None if keys is None else key_bloom_probe(keys, context)
        for data_file, ordinal in task:
            if probe is not None and not probe.file_may_hold_keys(
                data_file.path, data_file.file_size_in_bytes, context.io, metrics
            ):
                continue
            yield from _key_rows(data_file, ordinal, keys, metrics)

    def _key_rows(
        data_file: DataFileSlice, ordinal: int, keys: pa.Table | None, metrics: ScanMetrics
    ) -> Iterator[pa.RecordBatch]:
        for rows in read_slice(data_file, context, metrics):
            count = rows.num_rows
            columns = [
                pa.repeat(pa.scalar(data_file.path, pa.string()), count),
                rows.column(ROW_POSITION.name),
                pa.repeat(pa.scalar(ordinal, pa.int32()), count),
                *(rows.column(field.name) for field in key_fields),
                *(rows.column(name) for name in lineage),
            ]
            out = pa.RecordBatch.from_arrays(columns, schema=output)
            if keys is None:
                yield out
                continue
            yield from rows_with_keys(out, keys).to_batches()

    return SparkExecutor(spark).task_frame(bins, read_keys, output)


def key_bloom_probe(keys: pa.Table, context: ScanContext) -> KeyBloomProbe:
    """The bloom-filter probe of the batch's keys, per key column by field id, values as the table holds them."""
    values: dict[int, list[Any]] = {}
    for name in keys.column_names:
        field = context.read_schema.find_field(name)
        sorted_values = sorted_key_values(keys.column(name).combine_chunks(), field.field_type)
        if sorted_values is not None:
            values[field.field_id] = sorted_values.tolist()
    return KeyBloomProbe(values)


def _rows_of(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """A task's batches as one table, or None when the task received no rows."""
    batch_list = list(batches)
    rows = pa.Table.from_batches(batch_list) if batch_list else None
    return rows if rows is not None and rows.num_rows else None


def write_position_deletes(
    matched: DataFrame, context: WriteContext, partitions: list[tuple[int, tuple[Any, ...]]]
) -> list[WrittenFile]:
    """Write the matched positions (file_path, pos, ordinal) as position delete files, one set per partition.

    Each written file also lists (``deleted_from_data_files``) the data files its positions name (the commit requires
    them to still be live), so the caller needs no Spark job of its own to find them or to count the positions.
    """

    def write_group(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = _rows_of(batches)
        if rows is None:
            return
        written: list[WrittenFile] = []
        for ordinal in sorted(set(rows.column(ORDINAL_COLUMN).to_pylist())):
            spec_id, partition_values = partitions[ordinal]
            group = rows.filter(pa.compute.equal(rows.column(ORDINAL_COLUMN), ordinal))
            group_files = write_position_delete_rows(
                group.select(["file_path", "pos"]),
                context,
                spec_id,
                partition_values,
                f"{task_attempt_tag()}-o{ordinal}",
            )
            deleted_from = sorted(pa.compute.unique(group.column("file_path")).to_pylist())
            written += [replace(item, deleted_from_data_files=tuple(deleted_from)) for item in group_files]
        yield _file_batch(written)

    grouped = matched.select("file_path", "pos", ORDINAL_COLUMN).repartition(ORDINAL_COLUMN)
    return _collect_files(grouped.mapInArrow(write_group, f"{FILE_COLUMN} binary"))


def write_deletion_vectors(
    matched: DataFrame,
    context: WriteContext,
    partitions: list[tuple[int, tuple[Any, ...]]],
    live_files: dict[str, Any],
) -> list[WrittenFile]:
    """Write the matched positions (file_path, pos, ordinal) as v3 deletion vectors: one Puffin file per task.

    Each data file's positions go to one task, where they are merged with what its current deletes remove
    (``live_files``: path -> ``DataFileSlice`` with its deletion vector or position deletes attached), so the new
    vector holds every deleted position of the file (``write.deletion_vector_files``).
    """
    from spark_jobs.engine.deletes.position_deletes import load_deleted_positions
    from spark_jobs.engine.write.deletion_vector_files import (
        DeletionVectorTarget,
        merged_positions,
    )
    from spark_jobs.engine.write.deletion_vector_files import (
        write_deletion_vectors as write_puffin,
    )

    def write_group(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = _rows_of(batches)
        if rows is None:
            return
        paths = rows.column("file_path").to_numpy(zero_copy_only=False)
        positions = rows.column("pos").to_numpy()
        ordinals = rows.column(ORDINAL_COLUMN).to_numpy()
        order = np.argsort(paths, kind="stable")
        targets = []
        for path, indexes in itertools.groupby(order, key=lambda i: paths[i]):
            chosen = np.fromiter(indexes, dtype=np.int64)
            existing = load_deleted_positions(live_files[path], io=context.io).positions
            spec_id, partition_values = partitions[int(ordinals[chosen[0]])]
            targets.append(
                DeletionVectorTarget(path, spec_id, partition_values, merged_positions(positions[chosen], existing))
            )
        tag = task_attempt_tag()
        counter = itertools.count()

        def new_path() -> str:
            return context.locations.new_data_location(f"{context.write_id}-{tag}-{next(counter):05d}-dv.puffin")

        yield _file_batch(write_puffin(targets, context.io, new_path))

    grouped = matched.select("file_path", "pos", ORDINAL_COLUMN).repartition("file_path")
    return _collect_files(grouped.mapInArrow(write_group, f"{FILE_COLUMN} binary"))


def write_equality_deletes(
    keys: DataFrame,
    context: WriteContext,
    key_names: list[str],
    partitions: list[tuple[int, tuple[Any, ...]]] | None,
) -> list[WrittenFile]:
    """Write distinct keys as equality delete files.

    With ``partitions`` (and an ordinal column in ``keys``) each key goes to the partition it was found in;
    without, keys are split by the default spec (its source columns must be among the keys).
    """

    def write_group(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from spark_jobs.engine.write.partitioning import split_by_partition

        rows = _rows_of(batches)
        if rows is None:
            return
        written: list[WrittenFile] = []
        tag = task_attempt_tag()
        if partitions is not None:
            for ordinal in sorted(set(rows.column(ORDINAL_COLUMN).to_pylist())):
                spec_id, partition_values = partitions[ordinal]
                group = rows.filter(pa.compute.equal(rows.column(ORDINAL_COLUMN), ordinal)).select(key_names)
                written += write_equality_delete_rows(
                    group,
                    context,
                    key_names=key_names,
                    spec_id=spec_id,
                    partition_values=partition_values,
                    task_tag=f"{tag}-o{ordinal}",
                )
        else:
            spec = context.spec()
            for index, (partition_values, group) in enumerate(split_by_partition(rows, context.schema, spec)):
                written += write_equality_delete_rows(
                    group,
                    context,
                    key_names=key_names,
                    spec_id=spec.spec_id,
                    partition_values=partition_values,
                    task_tag=f"{tag}-p{index}",
                )
        yield _file_batch(written)

    columns = key_names + ([ORDINAL_COLUMN] if partitions is not None else [])
    distinct = keys.select(*columns).distinct()
    if partitions is not None:
        distinct = distinct.repartition(ORDINAL_COLUMN)
    return _collect_files(distinct.mapInArrow(write_group, f"{FILE_COLUMN} binary"))


def conform_dataframe(frame: DataFrame, schema: Schema, spark_types: dict[str, Any]) -> DataFrame:
    """``frame`` with the schema's columns in order, in their Spark types; missing columns (and fields) as nulls.

    Struct fields are matched by name at every depth (inside lists and maps too), so a source struct may lack
    optional fields of the table's or hold them in another order; Spark's own struct cast goes by position. A
    column or struct field the source lacks that has a ``write-default`` is left out, for the writers to write
    the default in its exact type (``write.column_forms``); so is the cast of WKB binary to a geometry or
    geography column (Spark casts no binary to its geo types; the writers take WKB as it is).
    """
    columns = []
    for table_field in schema.fields:
        spark_type = spark_types[table_field.name]
        if table_field.name in frame.columns:
            source_type = frame.schema[table_field.name].dataType
            column = _conformed(F.col(f"`{table_field.name}`"), source_type, spark_type, table_field.field_type)
            columns.append(column.alias(table_field.name))
        elif table_field.write_default is None:
            columns.append(F.lit(None).cast(spark_type).alias(table_field.name))
    return frame.select(*columns)


def _conformed(column: Column, source: DataType, target: DataType, iceberg_type: IcebergType) -> Column:
    """``column`` (of Spark type ``source``) as ``target``, struct fields by name, absent fields null (or left out
    for the writers when they have a write default)."""
    if source == target or (isinstance(source, BinaryType) and isinstance(iceberg_type, GeometryType | GeographyType)):
        return column
    if isinstance(source, StructType) and isinstance(target, StructType) and isinstance(iceberg_type, IcebergStruct):
        present = {f.name: f.dataType for f in source.fields}
        table_fields = {f.name: f for f in iceberg_type.fields}
        fields = [
            (
                _conformed(column.getField(f.name), present[f.name], f.dataType, table_fields[f.name].field_type)
                if f.name in present
                else F.lit(None).cast(f.dataType)
            ).alias(f.name)
            for f in target.fields
            if f.name in present or table_fields[f.name].write_default is None
        ]
        if len(fields) < len(target.fields):  # a field left out for its default: the struct has fewer fields
            return F.when(column.isNotNull(), F.struct(*fields))
        return F.when(column.isNull(), F.lit(None).cast(target)).otherwise(F.struct(*fields))
    if isinstance(source, ArrayType) and isinstance(target, ArrayType) and isinstance(iceberg_type, IcebergList):
        element_type = iceberg_type.element_type
        return F.transform(
            column, lambda element: _conformed(element, source.elementType, target.elementType, element_type)
        )
    if isinstance(source, MapType) and isinstance(target, MapType) and isinstance(iceberg_type, IcebergMap):
        key_type, value_type = iceberg_type.key_type, iceberg_type.value_type
        if source.keyType != target.keyType:
            column = F.transform_keys(column, lambda key, _: _conformed(key, source.keyType, target.keyType, key_type))
        if source.valueType != target.valueType:
            column = F.transform_values(
                column, lambda _, value: _conformed(value, source.valueType, target.valueType, value_type)
            )
        return column
    return column.cast(target)
