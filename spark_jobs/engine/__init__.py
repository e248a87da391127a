"""The engine behind every Spark job: plan an Iceberg scan, read Parquet with pruning, apply deletes, write, commit.

It imports pyiceberg, pyarrow and numpy, never Airflow, and never pyspark outside ``spark_source``; executors
import it too, so it stays light. A read flows through the modules in this order:

1. ``catalog`` / ``snapshots``: load the table through pyiceberg's configuration, choose the snapshot.
2. ``planning``: prune manifests and data files, attach the deletes that apply (``planning.delete_index``), split
   and pack into ``tasks.ScanTask`` values.
3. ``parquet``: per data file, one access plan pruned in stages (range, statistics, bloom filter, page index),
   then late materialization of the projected columns.
4. ``deletes``: deleted positions (position delete files or a deletion vector) and equality delete sets.
5. ``scan``: runs a task end to end and yields Arrow record batches; ``metrics`` counts every stage.
"""
