"""A merge-on-read read: opened and planned on the driver, run per scan task wherever the task lands.

1. ``session``: ``open_read_session`` loads the table, picks the snapshot, chooses the columns, plans the scan and
   builds the read schema; ``build_scan_context`` is the one place a ``ScanContext`` is made for a table (reads
   and compaction); the ``ReadSession`` holds the tasks and the context.
2. ``task_scan``: ``read_task`` runs one scan task (on an executor, or in-process): deletes loaded, each data file
   read by ``parquet.opener``, Arrow record batches out.
"""
