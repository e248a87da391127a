"""Commits: one atomic Iceberg snapshot from the files a job wrote, safely under concurrent writers.

pyiceberg 0.12 commits data files only; this package adds what writes need, on top of its metadata model, manifest
writers and catalog commit:

1. ``manifest_writers``: v2 and v3 manifests of either content, DATA or DELETES, with the spec's field types
   (pyiceberg writes DATA only, and equality_ids as longs); ``row_lineage``: the v3 manifest list and the row ids
   a v3 commit assigns; ``format_v3``: which tables we write, and v3 metadata through pyiceberg's catalogs.
2. ``snapshot_change``: what one commit does: operation, files added (data and delete), files removed, the data
   sequence number of added entries, summary properties, what a concurrent change must not touch.
3. ``producer``: builds the manifests, manifest list, snapshot and catalog updates of a change on given metadata.
4. ``conflicts``: validation of the commits that landed since the change was planned.
5. ``idempotency``: a snapshot of the table's history that carries the same idempotency key.
6. ``committer``: asserts the branch head, retries a lost race when safe, and deletes every file a failed commit
   wrote.
"""
