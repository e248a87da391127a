"""A read job small enough for one Spark task, run in the driver process: no SparkContext, no Python worker.

Spark runs a read of one split (Iceberg's ``read.split.target-size``, 128 MiB by default) as one Python task on
one core, after seconds of fixed cost: the SparkContext and session start, the DataFrame is planned, code is
generated, and a Python worker boots and imports the engine again. The read job's driver has already imported the
engine and planned the read, so for such a read it reads and writes the rows itself:

The driver is the in-process implementation of the executor seam (``InProcessExecutor``; Spark's is
``spark/executor.py``), chosen by the job's placement (``engine/jobs/placement.py``):

1. Before planning (``spark_needed_before_planning``, once the table is loaded; the read job starts Spark before
   anything else when its arguments rule this route out): a read without a row filter of a snapshot whose files
   (``total-files-size`` of its summary) exceed the limit is planned over the limit too, so Spark starts at once,
   beside the planning, as for every large read.
2. After planning (``why_not_in_driver``): the route is taken for Parquet output on a local file system, with a
   compression codec pyarrow writes, when the planned bytes (``planned_bytes``: the data file slices, and each
   delete file or deletion vector once) are at most the limit (``--driver-max-bytes``; 0 turns the route off).
   Otherwise Spark runs the read, as it always did.
3. ``write_in_driver`` writes into a hidden staging directory beside the output, as Spark's route does: one file
   ``part-00000-<id>-c000.<codec>.parquet``, streamed as the slices complete (``read_tasks_in_process``), in the
   Arrow types Spark's route hands its writer (``spark.types``) with every column nullable (Spark writes files so),
   then ``_SUCCESS``. An empty result is one file with the schema, as Spark writes it.
4. The output is checked again (mode ``error``: still absent; ``overwrite``: deleted), the staging directory is
   renamed to the output (one rename), and on any failure the staging directory is deleted.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from spark_jobs.engine.jobs.executor import ExportTarget, ResultT, TaskFold, TaskResults, TaskRun, TaskT, fold_session
from spark_jobs.engine.jobs.export_location import local_path, staging_location
from spark_jobs.engine.jobs.placement import planned_bytes, spark_needed_before_planning
from spark_jobs.engine.read.session import ReadSession
from spark_jobs.engine.read.task_scan import read_tasks_in_process
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.spark.ansi import ANSI_CONF, ansi_default
from spark_jobs.spark.types import conform_batch, spark_arrow_schema_of

log = logging.getLogger(__name__)
job_log = logging.getLogger("spark_jobs.read")  # the read job's lines
# Re-exported: the read job's driver route in one place (their home is the engine's placement).
__all__ = ["InProcessExecutor", "planned_bytes", "spark_needed_before_planning", "why_not_in_driver", "write_in_driver"]

# Spark's ``spark.sql.parquet.compression.codec`` values pyarrow writes -> (pyarrow's name, Spark's file suffix).
PARQUET_CODECS = {
    "none": ("none", ""),
    "uncompressed": ("none", ""),
    "snappy": ("snappy", ".snappy"),
    "gzip": ("gzip", ".gz"),
    "zstd": ("zstd", ".zstd"),
    "brotli": ("brotli", ".br"),
    "lz4_raw": ("lz4", ".lz4raw"),
}
SPARK_PARQUET_CODEC_CONF = "spark.sql.parquet.compression.codec"
DEFAULT_SPARK_PARQUET_CODEC = "snappy"


def why_not_in_driver(session: ReadSession, output: str, output_format: str, max_bytes: int, codec: str) -> str | None:
    """Why Spark must run this read (one line for the log), or None when the driver writes it (module doc, 2)."""
    if max_bytes <= 0:
        return "--driver-max-bytes is 0"
    if output_format != "parquet":
        return f"{output_format} output is written by Spark's own writer"
    if local_path(output) is None:
        return f"--output {output} is not on a local file system"
    if codec.lower() not in PARQUET_CODECS:
        return f"{SPARK_PARQUET_CODEC_CONF}={codec} is not a codec pyarrow writes"
    size = planned_bytes(session.tasks)
    if size > max_bytes:
        return f"the plan reads {size} bytes, more than --driver-max-bytes {max_bytes}"
    return None


def submitted_parquet_codec() -> str:
    """``spark.sql.parquet.compression.codec`` as spark-submit set it (Spark's default when unset)."""
    return submitted_setting(SPARK_PARQUET_CODEC_CONF, DEFAULT_SPARK_PARQUET_CODEC)


def submitted_ansi_mode() -> bool:
    """Spark SQL's ANSI mode as spark-submit set it (default: this Spark's, on from Spark 4), for driver folds."""
    import pyspark

    return submitted_setting(ANSI_CONF, ansi_default(pyspark.__version__)).lower() == "true"


def submitted_setting(key: str, default: str) -> str:
    """A Spark setting as spark-submit (or a running session) set it, else ``default``.

    Looked up only when this process already talks to a JVM (spark-submit's gateway, or a running session), so the
    driver route never starts one for it.
    """
    from pyspark import SparkConf, SparkContext

    if SparkContext._gateway is None and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return default
    SparkContext._ensure_initialized()
    active = SparkContext._active_spark_context
    conf = active.getConf() if active is not None else SparkConf()
    return str(conf.get(key, default) or default)


def write_in_driver(session: ReadSession, output: str, mode: str, codec: str) -> int:
    """Read ``session`` in this process and write its rows at ``output`` as Parquet (module doc, 3-4); the rows."""
    target = local_path(output)
    if target is None:
        raise ValueError(f"--output {output} is not a local path")
    compression, suffix = PARQUET_CODECS[codec.lower()]
    staging = target.parent / Path(staging_location(str(target))).name
    schema = _nullable_schema(spark_arrow_schema_of(session.output_schema))
    try:
        staging.mkdir(parents=True)
        part = staging / f"part-00000-{uuid.uuid4()}-c000{suffix}.parquet"
        rows = 0
        with pq.ParquetWriter(part, schema, compression=compression) as writer:
            for batch in read_tasks_in_process(session.tasks, session.context, session.metrics):
                if batch.num_rows:
                    writer.write_batch(pa.RecordBatch.from_arrays(conform_batch(batch, schema).columns, schema=schema))
                    rows += batch.num_rows
        (staging / "_SUCCESS").touch()
        if target.exists() or target.is_symlink():
            if mode == "error":
                raise UserInputError(f"--output {output} was created by someone else while this job ran")
            _delete(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(target)
    except BaseException:
        _delete_staging(staging)
        raise
    return rows


def _nullable_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field nullable at every depth (map keys excepted), as Spark writes files."""
    return pa.schema([pa.field(f.name, _nullable_type(f.type), nullable=True) for f in schema])


def _nullable_type(arrow_type: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(arrow_type):
        return pa.struct([pa.field(f.name, _nullable_type(f.type), nullable=True) for f in arrow_type])
    if pa.types.is_large_list(arrow_type):
        return pa.large_list(pa.field(arrow_type.value_field.name, _nullable_type(arrow_type.value_type)))
    if pa.types.is_list(arrow_type):
        return pa.list_(pa.field(arrow_type.value_field.name, _nullable_type(arrow_type.value_type)))
    if pa.types.is_map(arrow_type):
        return pa.map_(arrow_type.key_field, pa.field(arrow_type.item_field.name, _nullable_type(arrow_type.item_type)))
    return arrow_type


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _delete_staging(staging: Path) -> None:
    try:
        if staging.exists():
            shutil.rmtree(staging)
    except OSError as error:  # the job's own failure is what the caller reports; this one is logged
        log.warning("could not delete the staging directory %s (left behind): %s", staging, error)


class InProcessExecutor:
    """Tasks run by this process, one after another (the read job's driver route, and the Python API without a
    Spark session). ``parquet_codec`` and ``ansi`` default to what spark-submit set (``submitted_*``)."""

    ran_in: Literal["driver"] = "driver"

    def __init__(self, *, parquet_codec: str | None = None, ansi: bool | None = None, max_bytes: int = 0) -> None:
        self._parquet_codec = parquet_codec
        self._ansi = ansi
        self.max_bytes = max_bytes

    @property
    def parquet_codec(self) -> str:
        """The Parquet codec of exports (looked up once, when first needed)."""
        if self._parquet_codec is None:
            self._parquet_codec = submitted_parquet_codec()
        return self._parquet_codec

    def parallelism(self) -> None:
        """No slots to fill: the table's split size plans the tasks."""
        return None

    def run_tasks(self, tasks: Sequence[TaskT], run: TaskRun[TaskT, ResultT], description: str) -> TaskResults[ResultT]:
        """Every task run here, in plan order; the n-th is tagged ``driver-t<n>`` (the files it writes say so)."""
        metrics = ScanMetrics()
        results = [run(task, metrics, f"driver-t{index}") for index, task in enumerate(tasks)]
        return results, metrics.as_dict()

    def fold_tasks(
        self, session: ReadSession, fold: TaskFold, description: str
    ) -> tuple[list[list[Any]], dict[str, int]]:
        """Every task folded here, in plan order."""
        return fold_session(self, session, fold, description)

    def count_rows(self, session: ReadSession) -> int:
        """The rows read here (counters into ``session.metrics``)."""
        return sum(batch.num_rows for batch in read_tasks_in_process(session.tasks, session.context, session.metrics))

    def write_export(self, session: ReadSession, target: ExportTarget) -> dict[str, int]:
        """``write_in_driver`` (module doc, 3-4); every counter is already in ``session.metrics``."""
        job_log.info(
            "read and write to %s (parquet, %s) in the driver: the plan reads %d bytes, at most --driver-max-bytes %d,"
            " so no Spark session is started ...",
            target.output,
            self.parquet_codec,
            planned_bytes(session.tasks),
            self.max_bytes,
        )
        write_in_driver(session, target.output, target.mode, self.parquet_codec)
        return {}

    def ansi_mode(self) -> bool:
        """Spark SQL's ANSI mode as spark-submit set it (or as given)."""
        if self._ansi is None:
            self._ansi = submitted_ansi_mode()
        return self._ansi

    def export_refusal(self, session: ReadSession, target: ExportTarget, max_bytes: int) -> str | None:
        """Why this process does not write the export (``why_not_in_driver``), or None."""
        return why_not_in_driver(session, target.output, target.output_format, max_bytes, self.parquet_codec)

    def manifest_reader(self) -> None:
        """This process reads every manifest itself."""
        return None
