"""The files a table's metadata references that must exist, for tests that check none went missing."""

from __future__ import annotations

from pyiceberg.table import Table

from spark_jobs.engine.maintenance.reachable_files import live_content_files, manifests_of, metadata_file_locations


def files_that_must_exist(table: Table) -> set[str]:
    """The current and logged metadata files, statistics files, and every snapshot's manifest list, manifests and
    live data and delete files, as the metadata spells them.

    Left out: files only DELETED manifest entries name (expiry may have removed them) and the Hadoop version hint
    (only a Hadoop catalog writes one).
    """
    metadata = table.metadata
    manifests = manifests_of(metadata.snapshots, table.io)
    locations = metadata_file_locations(metadata, table.metadata_location)
    locations = {location for location in locations if not location.endswith("/version-hint.text")}
    locations |= {snapshot.manifest_list for snapshot in metadata.snapshots} | set(manifests)
    locations |= set(live_content_files(manifests.values(), table.io))
    return locations
