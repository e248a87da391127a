"""The per-file Parquet reader: one access plan refined by pruning stages, then late materialization.

Modules in the order a file flows through them: ``footer_cache`` (footer with a size hint, LRU) ->
``file_columns`` (leaf columns by field id) -> ``access_plan`` (per row group: skip / scan / row selection) ->
``predicates`` (the bound filter as a tree) -> ``row_group_filter`` (statistics) -> ``bloom_filter`` ->
``page_index`` (with ``thrift_compact``) -> ``row_filter`` + ``row_group_reader`` (late materialization) ->
``opener`` (``read_data_file``, the orchestration).
"""
