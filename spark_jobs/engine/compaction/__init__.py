"""Compaction: which data files a rewrite takes, in which groups, into how many files, in which order.

Modules in the order a plan is built (Iceberg Java's ``RewriteDataFiles``; bin-pack, sort and z-order plan alike):

1. ``options``: the rewrite's options, Java's names, defaults and checks.
2. ``candidates``: the snapshot's data files that may match the filter, each with the deletes that apply.
3. ``bin_packing``: Java's ``BinPacking.ListPacker``.
4. ``sizing``: expected output file count (the remainder rule), split size, the writer's max file size.
5. ``dangling_deletes``: which delete files apply only to the files a rewrite replaces.
6. ``planner``: ``plan_rewrite`` groups by partition, chooses files, packs, keeps groups, returns a ``RewritePlan``.
7. ``strategy``: bin-pack, sort or z-order (``sort_order_parsing`` reads ``--sort-order``), with each one's options.

How a sort or z-order rewrite orders rows: ``zorder`` (Java's z-order byte forms and interleaving), ``sort_keys``
(key columns pyarrow sorts as Spark does), ``range_partitioning`` (Spark's ``RangePartitioner``) and
``shuffle_tasks`` (the executor steps: sample, route rows to ranges, write each range sorted).
The executor side of every strategy starts in ``rewrite_tasks``; ``rewrite_commit`` commits every strategy alike.
"""

from spark_jobs.engine.compaction.options import RewriteOptions
from spark_jobs.engine.compaction.planner import FileGroup, RewritePlan, plan_rewrite

__all__ = ["FileGroup", "RewriteOptions", "RewritePlan", "plan_rewrite"]
