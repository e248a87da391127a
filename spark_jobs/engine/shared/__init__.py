"""Types every layer of the engine shares; nothing here imports another engine package.

- ``errors``: the engine's domain exceptions (``UserInputError`` becomes exit code 2).
- ``metrics``: ``ScanMetrics``, the counters every pruning and delete stage adds to.
- ``bounded_cache``: the process-wide least-recently-used caches, bounded in bytes.
- ``row_predicate``: the protocol late materialization asks which rows survive (row-filter conjuncts and equality
  delete sets), and their kinds.
- ``deleted_positions``: a data file's deleted row positions and where they came from (what ``deletes`` loads and
  the Parquet reader drops).
- ``integer_setting``: one parser for integer settings, naming the setting in its error.
"""
