"""The Spark side: spark-submit entry points (``read.py`` ...) and the ``engine`` they run. Never imports Airflow."""
