"""The Spark side, never importing Airflow: the spark-submit entry points, the ``engine`` and its ``spark`` adapters."""

# pyiceberg's model completed for format v3 (the variant type, schemas kept as Java wrote them) before any module
# of the package parses Iceberg metadata, in every process that imports it: drivers and Python workers alike.
from spark_jobs.engine.shared import iceberg_model as _iceberg_model

_iceberg_model.register()
