"""Driver-side scan planning: from a snapshot's manifests to packed ``ScanTask`` values.

Modules in the order a plan is built:

1. ``manifest_pruning``: manifests by partition summaries, data files by partition tuple and column metrics (the
   entries come from ``table.manifest_cache``).
2. ``delete_index``: exactly the delete files that apply to each data file (sequence numbers, partitions, paths),
   with ``equality_delete_bounds`` leaving out equality deletes whose statistics cannot meet the data file's.
3. ``splitting``: row-group-aligned slices of large files, bin-packed into tasks by weight.
4. ``scan_planner``: ``plan_scan`` ties them together and returns a ``ScanPlan``.
5. ``scan_tasks``: what a plan hands to executors: data file slices, each with the delete file descriptors that
   apply to it, packed into ``ScanTask`` values.
6. ``scan_context``: what every task of a scan shares (read schema, output fields, filter, FileIO); the per-file
   reader takes it whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_jobs.engine.planning.scan_planner import ScanPlan, plan_scan

__all__ = ["ScanPlan", "plan_scan"]


def __getattr__(name: str) -> Any:
    """``plan_scan`` and ``ScanPlan``, imported on first use: executors import this package's task and context
    modules, and should not pay in every Python worker for the driver's planner."""
    if name in __all__:
        from spark_jobs.engine.planning import scan_planner

        return getattr(scan_planner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
