"""Airflow provider for Apache Iceberg pipelines that run as PySpark jobs (ingest, merge-on-read reads, compaction).

This package holds the Airflow side only: hooks, operators, sensors and triggers that build spark-submit command
lines for the ``spark_jobs`` entry points and read back their final JSON line. It never runs on Spark executors.
"""

__version__ = "0.1.0"
