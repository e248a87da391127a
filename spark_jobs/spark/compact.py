"""Compaction's rewrite on Spark: the engine's rewrite run (``engine/jobs/rewrite_run.py``: waves of groups,
``replace`` commits in batches, partial progress, files of retried tasks deleted) with Spark's executor for the
rewrite tasks and Spark's shuffle for sort and z-order waves (``spark/shuffle_rewrite.py``).
"""

from __future__ import annotations

import functools

from pyiceberg.table import Table
from pyspark.sql import SparkSession

from spark_jobs.engine.compaction.outcome import RewriteOutcome
from spark_jobs.engine.compaction.planner import RewritePlan
from spark_jobs.engine.compaction.rewrite_commit import commit_group_rewrites
from spark_jobs.engine.jobs import rewrite_run
from spark_jobs.engine.jobs.rewrite_run import RewriteRun
from spark_jobs.spark.executor import SparkExecutor
from spark_jobs.spark.shuffle_rewrite import run_shuffle_wave


def spark_rewrite_run(spark: SparkSession) -> RewriteRun:
    """The rewrite run on ``spark``: its executors, its shuffle, and this module's ``commit_group_rewrites``."""
    return RewriteRun(SparkExecutor(spark), functools.partial(run_shuffle_wave, spark), commit_group_rewrites)


def run_rewrite(spark: SparkSession, table: Table, plan: RewritePlan) -> RewriteOutcome:
    """Rewrite and commit every group of ``plan`` on ``spark`` (``rewrite_run.run_rewrite``); ``table`` is refreshed
    to the last commit."""
    return rewrite_run.run_rewrite(spark_rewrite_run(spark), table, plan)
