"""Driver-side scan planning: from a snapshot's manifests to packed ``ScanTask`` values.

Modules in the order a plan is built:

1. ``manifest_entries``: live manifest entries with the v3 deletion-vector fields, sequence numbers inherited.
2. ``manifest_pruning``: manifests by partition summaries, data files by partition tuple and column metrics.
3. ``delete_index``: exactly the delete files that apply to each data file (sequence numbers, partitions, paths),
   with ``equality_delete_bounds`` leaving out equality deletes whose statistics cannot meet the data file's.
4. ``splitting``: row-group-aligned slices of large files, bin-packed into tasks by weight.
5. ``scan_planner``: ``plan_scan`` ties them together and returns a ``ScanPlan``.
"""

from spark_jobs.engine.planning.scan_planner import ScanPlan, plan_scan

__all__ = ["ScanPlan", "plan_scan"]
