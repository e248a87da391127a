"""Table access on the driver: the table, its snapshots and its manifests, through pyiceberg.

1. ``catalog``: a catalog from pyiceberg's configuration by name, and a table from it, with clear errors.
2. ``snapshots``: the snapshot to read (current, id, branch or tag, or as of a time) and its schema.
3. ``manifest_entries``: live manifest entries with the v3 deletion-vector fields, sequence numbers inherited
   (read by planning, commit validation, compaction and maintenance).
4. ``manifest_cache``: manifest lists and entries kept per process, bounded in bytes, so a repeated scan plans
   without reading metadata files again.
5. ``properties``: the table properties the engine reads beyond pyiceberg's, and integer properties parsed one way.
"""
