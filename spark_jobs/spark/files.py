"""Ingest sources and read outputs on any storage: Spark's own readers where its JVM can, pyarrow on the executors
where it cannot (an object store on a Spark without a Hadoop connector for it, such as the one pip installs).

Route of a URI (``hadoop_uri``): local and HDFS paths, and object-store URIs whose scheme has a Hadoop file system
on the JVM's classpath (``s3a://`` with hadoop-aws; ``s3://`` is read as ``s3a://`` when only S3A is there), go to
Spark's DataFrame reader and writer, with the cluster's own configuration. Any other object-store URI goes through
pyarrow with the catalog's storage properties (``engine.shared.storage``):

1. Sources (``read_source``): the driver lists the files; one Spark task per group of files reads them on the
   executors. Parquet files are read with pyarrow (the first file's schema, as Spark takes it; other files' columns
   matched by name, missing ones null). CSV and JSON files are read as lines (compression by file extension) and
   parsed by Spark's own CSV and JSON parsers (``DataFrameReader.csv/json`` over a Dataset of lines), so types and
   header handling are Spark's. Partition directories (``key=value``) are not turned into columns on this route.
2. Outputs (``write_output``): each Spark task writes its rows to one file ``part-<task>-<job id>.<ext>`` (Parquet
   with pyarrow; CSV as the lines Spark's ``to_csv`` makes, after a header). A retried task rewrites the same
   object. When every task succeeded, files that were there before (``--mode overwrite``) are deleted and
   ``_SUCCESS`` is written; when a task fails, this job's files are deleted and the old output is left as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from spark_jobs.engine.jobs.export_location import existing_files
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.storage import file_system, is_object_store, list_files, storage_error
from spark_jobs.spark.types import arrow_schema_of, spark_arrow_schema_of, spark_schema_of

_S3_SCHEMES = ("s3", "s3n")
_READ_CHUNK_BYTES = 8 * 1024 * 1024
_BATCH_ROWS = 65_536
_WRITTEN_SCHEMA = "path string, rows long"
# What ``mapInArrow`` runs on each partition: Arrow batches in, Arrow batches out.
ArrowMapper = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
_EXTENSIONS = {"parquet": "parquet", "csv": "csv"}


def hadoop_uri(spark: SparkSession, uri: str) -> str | None:
    """``uri`` as Spark's own readers should take it, or None when the JVM has no file system for its scheme."""
    if not is_object_store(uri):
        return uri
    scheme = urlparse(uri).scheme.lower()
    candidates = [scheme, "s3a"] if scheme in _S3_SCHEMES else [scheme]
    jvm: Any = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    for candidate in candidates:
        try:
            jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(candidate, conf)
        except Exception:  # py4j's error for a missing scheme or a connector class not on the classpath
            continue
        return candidate + uri[len(scheme) :]
    return None


def read_source(
    spark: SparkSession,
    uri: str,
    source_format: str,
    properties: Mapping[str, str],
    options: Mapping[str, str],
    *,
    schema: StructType | None = None,
) -> DataFrame:
    """The rows of the files at ``uri`` (parquet, csv or json) with Spark reader ``options`` (e.g. CSV header), and
    CSV or JSON parsed with ``schema`` when given (else Spark infers one as ``options`` say)."""
    spark_uri = hadoop_uri(spark, uri)
    if spark_uri is not None:
        read = spark.read.format(source_format).options(**options)
        return (read.schema(schema) if schema is not None else read).load(spark_uri)
    files = list_files(uri, properties)
    paths = _paths_frame(spark, [f.path for f in files])
    if source_format == "parquet":
        return _read_parquet(paths, uri, files[0].path, dict(properties))
    lines = paths.mapInArrow(_line_reader(uri, dict(properties)), "value string")
    jvm: Any = spark._jvm
    encoder = jvm.org.apache.spark.sql.Encoders.STRING()
    dataset = getattr(lines._jdf, "as")(encoder)
    reader = spark._jsparkSession.read()
    if schema is not None:
        reader = reader.schema(spark._jsparkSession.parseDataType(schema.json()))
    for key, value in options.items():
        reader = reader.option(key, value)
    parsed = reader.csv(dataset) if source_format == "csv" else reader.json(dataset)
    return DataFrame(parsed, spark)


def unreadable_parquet_source(uri: str, properties: Mapping[str, str]) -> str | None:
    """Why the first Parquet file at ``uri`` whose footer pyarrow cannot read is unreadable (naming it), or None.

    For a failed read by Spark's own Parquet reader whose error names no file (Spark 3.5's "corrupted file: the
    footer index is not within the file"): one footer read per file, on the failure path only.
    """
    filesystem, _ = file_system(uri, properties)
    for source_file in list_files(uri, properties):
        try:
            with filesystem.open_input_file(source_file.path) as stream:
                pq.read_metadata(stream)
        except (OSError, pa.ArrowInvalid) as error:
            return f"cannot read source file {source_file.uri}: {error}"
    return None


def _paths_frame(spark: SparkSession, paths: list[str]) -> DataFrame:
    """One row per file path, spread over up to the default parallelism of partitions (one task per partition)."""
    slices = max(1, min(len(paths), spark.sparkContext.defaultParallelism))
    rows = spark.sparkContext.parallelize([(path,) for path in paths], slices)
    return spark.createDataFrame(rows, "path string")


def _read_parquet(paths: DataFrame, uri: str, first_path: str, properties: dict[str, str]) -> DataFrame:
    """Parquet files read by pyarrow on the executors, in the first file's schema."""
    filesystem, _ = file_system(uri, properties)
    try:
        with filesystem.open_input_file(first_path) as stream:
            file_schema = pq.read_schema(stream)
    except OSError as error:
        raise storage_error(error, uri, properties) from error
    except pa.ArrowInvalid as error:
        raise UserInputError(f"cannot read source {uri} (parquet): {first_path}: {error}") from error
    plain = pa.schema([pa.field(f.name, f.type, f.nullable) for f in file_schema])
    try:
        spark_schema = spark_schema_of(plain)
    except (TypeError, NotImplementedError) as error:
        raise UserInputError(f"cannot read source {uri} (parquet): {error}") from error
    target = spark_arrow_schema_of(plain)

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        filesystem, _ = file_system(uri, properties)
        for batch in batches:
            for path in batch.column("path").to_pylist():
                with filesystem.open_input_file(path) as stream:
                    for record_batch in pq.ParquetFile(stream).iter_batches(batch_size=_BATCH_ROWS):
                        yield _conform(record_batch, target)

    return paths.mapInArrow(read, spark_schema)


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns by name (missing ones null), cast to its types."""
    columns = []
    for field in schema:
        index = batch.schema.get_field_index(field.name)
        column = batch.column(index) if index >= 0 else pa.nulls(batch.num_rows, field.type)
        columns.append(column if column.type == field.type else column.cast(field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _line_reader(uri: str, properties: dict[str, str]) -> ArrowMapper:
    """A mapInArrow function: file paths in, their text lines out (compressed files by extension)."""

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        filesystem, _ = file_system(uri, properties)
        for batch in batches:
            for path in batch.column("path").to_pylist():
                yield from _lines(filesystem, path)

    return read


def _lines(filesystem: fs.FileSystem, path: str) -> Iterator[pa.RecordBatch]:
    """The lines of one text file in batches (``\\n`` or ``\\r\\n`` ends a line; UTF-8)."""
    remainder = b""
    with filesystem.open_input_stream(path, compression="detect") as stream:
        while True:
            chunk = stream.read(_READ_CHUNK_BYTES)
            if not chunk:
                break
            pieces = (remainder + chunk).split(b"\n")
            remainder = pieces.pop()
            if pieces:
                yield _line_batch(pieces)
    if remainder:
        yield _line_batch([remainder])


def _line_batch(lines: list[bytes]) -> pa.RecordBatch:
    stripped = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    return pa.RecordBatch.from_arrays([pa.array(stripped, pa.binary()).cast(pa.string())], names=["value"])


def write_output(frame: DataFrame, uri: str, output_format: str, mode: str, properties: Mapping[str, str]) -> None:
    """Write ``frame`` at ``uri`` as parquet or csv (with a header); ``mode`` is ``error`` or ``overwrite``."""
    spark_uri = hadoop_uri(frame.sparkSession, uri)
    if spark_uri is not None:
        writer = frame.write.mode("overwrite" if mode == "overwrite" else "errorifexists")
        if output_format == "csv":
            writer = writer.option("header", "true")
        writer.format(output_format).save(spark_uri)
        return
    properties = dict(properties)
    filesystem, root = file_system(uri, properties)
    root = root.rstrip("/")
    try:
        existing = existing_files(filesystem, root)
        if existing and mode != "overwrite":
            raise UserInputError(f"--output {uri} already exists; pass --mode overwrite to replace it")
        job_id = uuid.uuid4().hex[:16]
        written = _write_tasks(frame, uri, root, output_format, job_id=job_id, properties=properties)
        if not written:
            _write_empty(filesystem, root, output_format, job_id, frame)
        for path in existing:
            filesystem.delete_file(path)
        with filesystem.open_output_stream(f"{root}/_SUCCESS") as stream:
            stream.write(b"")
    except OSError as error:
        raise storage_error(error, uri, properties) from error


def _write_tasks(
    frame: DataFrame, uri: str, root: str, output_format: str, *, job_id: str, properties: dict[str, str]
) -> list[str]:
    """Each Spark task writes its rows to one file; returns the files written (this job's files go if one fails)."""
    from pyspark.sql import functions

    extension = _EXTENSIONS[output_format]
    if output_format == "csv":
        header = ",".join(_csv_field(name) for name in frame.columns)
        row = functions.struct(*[functions.col(f"`{name}`") for name in frame.columns])
        frame = frame.select(functions.to_csv(row).alias("value"))
        schema = None
    else:
        header = ""
        schema = arrow_schema_of(frame.schema)

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context else 0
        path = f"{root}/part-{partition:05d}-{job_id}.{extension}"
        filesystem, _ = file_system(uri, properties)
        rows = 0
        sink: pa.NativeFile | None = None
        writer: pq.ParquetWriter | None = None  # Parquet; CSV lines go to the sink itself
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                if sink is None:
                    sink = filesystem.open_output_stream(path)
                    if schema is not None:
                        writer = pq.ParquetWriter(sink, schema, compression="snappy")
                    else:
                        sink.write(header.encode() + b"\n")
                if writer is not None:
                    writer.write_batch(pa.RecordBatch.from_arrays(batch.columns, schema=schema))
                else:
                    sink.write(("\n".join(batch.column(0).to_pylist()) + "\n").encode())
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
            if sink is not None:
                sink.close()
        if rows:
            yield pa.RecordBatch.from_pydict({"path": [path], "rows": [rows]})

    try:
        return [row.path for row in frame.mapInArrow(write, _WRITTEN_SCHEMA).collect()]
    except Exception:
        filesystem, _ = file_system(uri, properties)
        for path in existing_files(filesystem, root):
            if job_id in path.rsplit("/", 1)[-1]:
                filesystem.delete_file(path)
        raise


def _write_empty(filesystem: fs.FileSystem, root: str, output_format: str, job_id: str, frame: DataFrame) -> None:
    """One file with no rows (Parquet with the schema, CSV with the header), as Spark writes for an empty result."""
    path = f"{root}/part-00000-{job_id}.{_EXTENSIONS[output_format]}"
    with filesystem.open_output_stream(path) as stream:
        if output_format == "csv":
            stream.write((",".join(_csv_field(name) for name in frame.columns) + "\n").encode())
        else:
            pq.write_table(arrow_schema_of(frame.schema).empty_table(), stream)


def _csv_field(text: str) -> str:
    """A CSV header field, quoted when it holds a delimiter, quote or line break."""
    if any(ch in text for ch in ',"\n\r') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text
