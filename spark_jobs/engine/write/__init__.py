"""Writing Iceberg data and delete files with Arrow, on executors; the driver commits what they return.

1. ``arrow_schema``: conform incoming Arrow data to the table schema (by name; missing columns as nulls) and carry
   field ids into the Parquet schema.
2. ``partitioning``: partition values of every row per the partition spec (identity, bucket, truncate,
   year/month/day/hour) and the split of a table into one slice per partition.
3. ``sorting``: rows ordered by the table's sort order.
4. ``parquet_files``: Parquet files rolled at ``write.target-file-size-bytes`` (zstd, page index, bloom filters from
   ``write.parquet.bloom-filter-enabled.column.<name>``) with Iceberg column metrics.
5. ``delete_files``: position delete files (file_path, pos sorted) and equality delete files (key columns);
   ``deletion_vector_files``: v3 deletion vectors, one Puffin blob per data file, merged with its current deletes.
6. ``write_context``: the picklable description of one write that executors run ``write_data`` with; results are
   plain dicts.
7. ``file_entries``: those dicts (data and delete file metadata, executors -> driver) and back to ``DataFile`` for
   the commit.
"""
