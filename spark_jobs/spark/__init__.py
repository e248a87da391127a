"""The Spark adapters: the only package of ``spark_jobs`` (besides the entry points and ``job_support``) that
imports pyspark. Each adapter runs the engine's work on Spark and keeps Spark's types at its edge.

- ``types``: Spark <-> Arrow type conversion, in one place.
- ``filters``: Spark filters pushed to the data source, translated to Iceberg expressions when exact.
- ``source``: the ``iceberg_mor`` Python data source (planning on the driver, ``read.task_scan`` on executors).
- ``scan``: a planned read as a DataFrame through ``mapInArrow``, counters gathered with an accumulator if asked.
- ``write``: executors write data and delete files with ``mapInArrow``; the table's key columns with positions.
- ``ingest``: the Spark work of the ingest modes (row checks, writes, key positions) around what ``engine.ingest``
  decides to commit.
- ``compact``: a bin-pack rewrite plan run on the executors, ``replace`` commits on the driver in batches.
- ``driver_read``: a read small enough for one Spark task run and written by the job's driver, without Spark.
- ``output_location``: whether a read's output is local, and the staging location beside it (no pyspark).
"""
