"""The engine behind every Spark job: plan an Iceberg scan, read Parquet with pruning, apply deletes, write, commit.

It imports pyiceberg, pyarrow and numpy, never Airflow and never pyspark (the Spark adapters are
``spark_jobs.spark``); executors import it too, so it stays light. Its root holds only subpackages, listed in the
order data flows through them; each imports only from the ones listed before it (``shared`` from none):

1. ``shared``: errors, scan metrics, the bounded process caches, row predicates and deleted positions.
2. ``table``: catalog, snapshot choice, manifest entries and their process cache, table properties.
3. ``planning``: prune manifests and data files, attach the deletes that apply (``planning.delete_index``), split
   and pack into ``planning.scan_tasks.ScanTask`` values.
4. ``parquet``: per data file, one access plan pruned in stages (range, statistics, bloom filter, page index),
   then late materialization of the projected columns, projected to the read schema by field id.
5. ``deletes``: deleted positions (position delete files or a deletion vector) and equality delete sets.
6. ``read``: a read session (table, snapshot, columns, plan, context) and the per-task scan that yields Arrow
   record batches; ``shared.metrics`` counts every stage.
7. ``write``: data and delete files written with Arrow (partitioned, sorted, rolled, with Iceberg metrics).
8. ``commit``: one atomic snapshot from the files a job wrote, safely under concurrent writers.
9. ``ingest``: what an ingest commits: the table, the live files a mode touches, the snapshot change, the result.
10. ``compaction``: Iceberg Java's bin-pack rewrite plan, rewrite tasks and ``replace`` commits.
11. ``maintenance``: snapshot expiration and orphan file removal.
"""
