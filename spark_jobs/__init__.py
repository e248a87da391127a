"""The Spark side, never importing Airflow: the spark-submit entry points, the ``engine`` and its ``spark`` adapters."""
