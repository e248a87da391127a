"""Compaction planning: which data files a bin-pack rewrite takes, in which groups, into how many files.

Modules in the order a plan is built (Iceberg Java's ``RewriteDataFiles`` with the bin-pack strategy):

1. ``options``: the rewrite's options, Java's names, defaults and checks.
2. ``candidates``: the snapshot's data files that may match the filter, each with the deletes that apply.
3. ``bin_packing``: Java's ``BinPacking.ListPacker``.
4. ``sizing``: expected output file count (the remainder rule), split size, the writer's max file size.
5. ``dangling_deletes``: which delete files apply only to the files a rewrite replaces.
6. ``planner``: ``plan_rewrite`` groups by partition, chooses files, packs, keeps groups, returns a ``RewritePlan``.
"""

from spark_jobs.engine.compaction.options import RewriteOptions
from spark_jobs.engine.compaction.planner import FileGroup, RewritePlan, plan_rewrite

__all__ = ["FileGroup", "RewriteOptions", "RewritePlan", "plan_rewrite"]
