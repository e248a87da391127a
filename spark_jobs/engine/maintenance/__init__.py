"""Table maintenance on the driver: expire snapshots and remove orphan files, deleting through the table's FileIO.

1. ``reachable_files``: what the metadata references (manifest lists, manifests, content, metadata and statistics
   files), with locations in one normal form.
2. ``expire_snapshots``: Java's snapshot retention rules, a pyiceberg commit, then Java's reachable-file cleanup.
3. ``orphan_files``: list the table location, subtract what is reachable, keep what is old enough.
4. ``file_removal``: parallel deletes that report per file instead of stopping at the first failure.
"""

from spark_jobs.engine.maintenance.expire_snapshots import ExpirationResult, expire_snapshots, snapshots_to_expire
from spark_jobs.engine.maintenance.orphan_files import OrphanResult, remove_orphan_files

__all__ = ["ExpirationResult", "OrphanResult", "expire_snapshots", "remove_orphan_files", "snapshots_to_expire"]
