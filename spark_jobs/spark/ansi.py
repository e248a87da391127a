"""Spark SQL's ANSI mode: whether overflow and invalid casts raise, per session and per Spark version."""

from __future__ import annotations

from pyspark.sql import SparkSession

ANSI_CONF = "spark.sql.ansi.enabled"


def ansi_enabled(spark: SparkSession) -> bool:
    """Whether the session runs Spark SQL's ANSI mode (Spark 4's default: on; 3.5's: off)."""
    return str(spark.conf.get(ANSI_CONF, ansi_default(spark.version))).lower() == "true"


def ansi_default(spark_version: str) -> str:
    """``spark.sql.ansi.enabled``'s default on that Spark version: ``true`` from Spark 4, ``false`` before."""
    return "true" if int(spark_version.split(".", maxsplit=1)[0]) >= 4 else "false"
