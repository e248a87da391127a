"""What an ingest commits, decided on the driver; ``engine.jobs.ingest_job`` runs the job around it (its rows on
Spark: ``spark_jobs.spark.ingest``).

1. ``options``: the modes (append, overwrite, upsert, delete), their options and the combinations refused.
2. ``table_setup``: the table created from the source's schema when allowed (format v2, layout), and the source's
   schema checked against the table (delete mode: key columns only).
3. ``live_files``: the table's live data files a mode touches, each a whole-file ``DataFileSlice`` (partition and
   deletes attached by the read planner): the files that may hold a batch's keys (pruned by the keys' range), the
   files an overwrite filter may match with the context reading the rows it keeps (``unmatched_rows``: every row
   the filter is not true on, NULL and NaN included), the files in the partitions a dynamic overwrite replaces; and
   the scan context that reads key columns with row positions.
4. ``changes``: the ``SnapshotChange`` of each mode, with the commit settings every ingest adds.
5. ``result``: the counters gathered on the way and the job's final JSON object.
"""
