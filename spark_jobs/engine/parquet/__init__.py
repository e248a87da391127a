"""The per-file Parquet reader: one access plan refined by pruning stages, then late materialization.

Modules in the order a file flows through them: ``footer_cache`` (footer with a size hint, LRU) ->
``file_columns`` (leaf columns by field id, bounds made comparable) -> ``access_plan`` (per row group: skip / scan /
row selection) -> ``predicates`` (the bound filter as a tree; might/must match) -> ``row_group_filter``
(statistics) -> ``bloom_filter`` -> ``page_index`` (with ``thrift_compact``) -> ``row_group_reader`` (decode and
project columns on demand) -> ``row_filter`` (late materialization) -> ``rejected_rows_cache`` (the rows an
equality delete set matched, per row group, for the next scan) -> ``row_selection`` (keep surviving rows) ->
``read_ahead`` (plain path decoding on helper threads) -> ``opener`` (``read_data_file``, the orchestration).
"""
