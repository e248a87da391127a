"""A read's rows written by Spark's own writer through a hidden staging directory, with the Hadoop FileSystem.

1. With mode ``error``, refuse an output that exists.
2. Write the result to a hidden staging directory beside the output (``.<name>.staging-<id>``; Spark and Hive
   readers skip names starting with ``.``).
3. Check the output again (mode ``error``: it must still be absent; mode ``overwrite``: delete it), then rename the
   staging directory to the output (one rename on HDFS and local file systems; a copy on object stores), through
   the Spark session's Hadoop FileSystem.
4. On any failure, delete the staging directory (a failure to do so is logged with its location) and leave the
   output as it was.

An object store that Spark's JVM has no file system for (the Spark this package installs has no S3 connector) is
written by pyarrow on the executors instead (``spark/files.py``).
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.engine.jobs.export_location import staging_location
from spark_jobs.engine.shared.errors import UserInputError

log = logging.getLogger("spark_jobs.read")


def write_with_hadoop(frame: DataFrame, output: str, *, output_format: str, mode: str, options: dict[str, str]) -> None:
    """Write ``frame`` to ``output`` through a staging directory (module doc); ``mode`` is error or overwrite."""
    spark = frame.sparkSession
    target = _hadoop_path(spark, output)
    file_system = target.getFileSystem(spark._jsc.hadoopConfiguration())
    if mode == "error" and file_system.exists(target):
        raise UserInputError(f"--output {output} already exists; pass --mode overwrite to replace it")
    staging = _hadoop_path(spark, staging_location(output))
    try:
        writer = frame.write.mode("errorifexists").format(output_format)
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save(staging.toString())
        if file_system.exists(target):
            if mode == "error":
                raise UserInputError(f"--output {output} was created by someone else while this job ran")
            if not file_system.delete(target, True):
                raise OSError(f"could not delete the existing --output {output} to replace it")
        parent = target.getParent()
        if parent is not None and not file_system.exists(parent):
            file_system.mkdirs(parent)
        if not file_system.rename(staging, target):
            raise OSError(f"could not move the result from {staging.toString()} to --output {output}")
    except BaseException:
        _delete_staging(file_system, staging)
        raise


def _hadoop_path(spark: SparkSession, location: str) -> Any:
    return spark._jvm.org.apache.hadoop.fs.Path(location)  # type: ignore[union-attr]


def _delete_staging(file_system: Any, staging: Any) -> None:
    try:
        if file_system.exists(staging) and not file_system.delete(staging, True):
            log.warning("could not delete the staging directory %s", staging.toString())
    except Exception as error:  # the job's own failure is what the caller reports; this one is logged
        log.warning("could not delete the staging directory %s (left behind): %s", staging.toString(), error)
