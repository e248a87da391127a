"""The per-file Parquet reader: one access plan refined by pruning stages, then late materialization.

Modules in the order a file flows through them: ``footer_cache`` (footer with a size hint, LRU) ->
``file_columns`` (leaf columns by field id, bounds made comparable) -> ``access_plan`` (per row group: skip / scan /
row selection) -> ``predicates`` (the bound filter as a tree; might/must match) -> ``row_group_filter``
(statistics) -> ``bloom_filter`` -> ``page_index`` (with ``thrift_compact``) -> ``row_group_reader`` (decode
columns on demand, projected to the read schema by field id with ``schema_projection``) -> ``row_filter`` (late
materialization) -> ``rejected_rows_cache`` (the rows an equality delete set matched, per row group, for the next
scan) -> ``row_selection`` (keep surviving rows) -> ``read_ahead`` (plain path decoding on helper threads) ->
``opener`` (``read_data_file``, the orchestration). ``name_mapping`` gives field ids to files written without them.
"""
