"""Rewrite a table's manifests into fewer, clustered by partition, as Iceberg Java's ``rewrite_manifests`` does.

Java's ``RewriteManifestsSparkAction``, for data manifests and then delete manifests of the current snapshot:

1. The manifests of the chosen spec (``--spec-id``, default the current spec) are the candidates. Their total size
   gives ``ceil(size / commit.manifest.target-size-bytes)`` new manifests (8 MiB by default); a single manifest that
   would stay a single manifest is left alone.
2. Their live entries (ADDED or EXISTING) are ordered by partition (or by the ``--sort-by`` partition fields, in
   that order), then cut into that many runs of about equal length; a partition is never split between two runs
   (Java's ``repartitionByRange`` keeps equal keys together). An unpartitioned spec is cut in entry order.
3. Each run becomes one manifest of the table's format (v2 or v3) written by the new snapshot, its entries EXISTING
   with their snapshot ids and sequence numbers unchanged, so every reader sees exactly the same files. On v3 each
   data file keeps its ``first_row_id`` (explicit, or inherited from its old manifest), so every row keeps its
   ``_row_id``; deletion vector entries keep their referenced data file, offset and size.
4. One ``replace`` snapshot swaps the old manifests for the new ones (``commit.committer``); if a concurrent commit
   replaced one of the old manifests meanwhile, the rewrite fails and deletes what it wrote. The summary carries
   Java's ``manifests-created``, ``manifests-replaced``, ``manifests-kept`` and ``entries-processed``. On v3 the
   manifest list assigns the new data manifests a ``first_row_id`` range sized by their existing rows, as Iceberg
   Java's v3 manifest list writer does (space kept for files without one, e.g. from before an upgrade to v3), so
   the snapshot's ``added-rows`` counts those rows and ``next-row-id`` moves past them; no row's id changes.

Afterwards a scan filtered on partition values prunes whole manifests by their partition summaries instead of reading
every manifest (each old manifest covered every partition its commit touched).
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestFile
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import Table, TableProperties
from pyiceberg.table.snapshots import Operation

from spark_jobs.engine.commit.committer import CommitResult, commit_change, require_writable_format
from spark_jobs.engine.commit.manifest_writers import write_entries
from spark_jobs.engine.commit.producer import delete_quietly
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.maintenance.reachable_files import read_whole
from spark_jobs.engine.shared.errors import UnsupportedFeatureError, UserInputError
from spark_jobs.engine.table.manifest_entries import partition_values, read_live_entries, read_manifest_list

MANIFEST_TARGET_SIZE_PROPERTY = "commit.manifest.target-size-bytes"
DEFAULT_MANIFEST_TARGET_SIZE = 8 * 1024 * 1024
JOB_PROPERTY = "airflow-iceberg-provider.job"
REWRITABLE_FORMAT_VERSIONS = (2, 3)


@dataclass(frozen=True)
class ContentRewrite:
    """The manifests of one content (data or deletes) to replace, and how many manifests take their place."""

    content: ManifestContent
    manifests: tuple[ManifestFile, ...]
    target_manifests: int

    @property
    def total_bytes(self) -> int:
        """Size of the manifests replaced."""
        return sum(manifest.manifest_length for manifest in self.manifests)


@dataclass(frozen=True)
class ManifestRewritePlan:
    """What a manifest rewrite replaces, planned on one snapshot."""

    table_name: str
    snapshot_id: int | None
    spec_id: int
    target_size_bytes: int
    sort_by: tuple[str, ...]
    manifests_total: int  # manifests of the snapshot, every spec and content
    rewrites: tuple[ContentRewrite, ...] = field(default_factory=tuple)

    @property
    def replaced(self) -> list[ManifestFile]:
        """Every manifest the rewrite replaces."""
        return [manifest for rewrite in self.rewrites for manifest in rewrite.manifests]

    def as_dict(self) -> dict[str, Any]:
        """The plan for the job's JSON line."""
        return {
            "spec_id": self.spec_id,
            "target_manifest_size_bytes": self.target_size_bytes,
            "sort_by": list(self.sort_by),
            "manifests_before": self.manifests_total,
            "manifests_replaced": len(self.replaced),
            "manifests_expected": self.manifests_total
            - len(self.replaced)
            + sum(rewrite.target_manifests for rewrite in self.rewrites),
            "replaced": {
                rewrite.content.name.lower(): {
                    "manifests": len(rewrite.manifests),
                    "bytes": rewrite.total_bytes,
                    "new_manifests": rewrite.target_manifests,
                }
                for rewrite in self.rewrites
            },
        }

    def describe(self) -> str:
        """The plan in words."""
        if not self.rewrites:
            return (
                f"plan: nothing to rewrite in {self.table_name} at snapshot {self.snapshot_id}: the manifests of spec "
                f"{self.spec_id} are already at most one per {self.target_size_bytes} bytes"
            )
        parts = [
            f"{len(rewrite.manifests)} {rewrite.content.name.lower()} manifests ({rewrite.total_bytes} bytes) into "
            f"{rewrite.target_manifests}"
            for rewrite in self.rewrites
        ]
        order = ", ".join(self.sort_by) if self.sort_by else "partition"
        return (
            f"plan: rewrite manifests of {self.table_name} at snapshot {self.snapshot_id}, spec {self.spec_id}, "
            f"clustered by {order}: {'; '.join(parts)}; one replace commit"
        )


def plan_manifest_rewrite(
    table: Table, *, spec_id: int | None = None, sort_by: list[str] | None = None
) -> ManifestRewritePlan:
    """Which manifests of the current snapshot to replace, and by how many (module doc, step 1)."""
    name = ".".join(table.name())
    spec_id = table.spec().spec_id if spec_id is None else spec_id
    if spec_id not in table.specs():
        raise UserInputError(f"table {name}: Invalid spec id {spec_id} (the table's spec ids: {sorted(table.specs())})")
    spec = table.specs()[spec_id]
    fields = [f.name for f in spec.fields]
    missing = [name_ for name_ in sort_by or [] if name_ not in fields]
    if missing:
        raise UserInputError(
            f"table {name}: Cannot set manifest sorting because specified field(s) {missing} were not found in "
            f"partition spec {spec_id} (fields: {fields})"
        )
    target = _target_size(table)
    snapshot = table.current_snapshot()
    if snapshot is None:
        return ManifestRewritePlan(name, None, spec_id, target, tuple(sort_by or ()), 0)
    read_whole([snapshot], table.io, name)  # a missing or damaged manifest fails the plan, a dry run's too
    manifests = read_manifest_list(snapshot, table.io)  # the v3 list schema: data manifests' first_row_id
    rewrites = []
    for content in (ManifestContent.DATA, ManifestContent.DELETES):
        matching = [m for m in manifests if m.content == content and m.partition_spec_id == spec_id]
        if not matching:
            continue
        count = math.ceil(sum(m.manifest_length for m in matching) / target)
        if count == 1 and len(matching) == 1:
            continue
        rewrites.append(ContentRewrite(content, tuple(matching), count))
    return ManifestRewritePlan(
        name, snapshot.snapshot_id, spec_id, target, tuple(sort_by or ()), len(manifests), tuple(rewrites)
    )


def rewrite_manifests(table: Table, plan: ManifestRewritePlan) -> CommitResult | None:
    """Write the clustered manifests and commit the swap (module doc, steps 2-4); None when nothing to rewrite."""
    if not plan.rewrites:
        return None
    if table.metadata.format_version not in REWRITABLE_FORMAT_VERSIONS:
        # v1 manifests carry no sequence numbers or content types to keep; not written by this engine.
        raise UnsupportedFeatureError(
            f"table {'.'.join(table.name())} is format v{table.metadata.format_version}: rewriting its manifests is "
            "supported for format v2 and v3 only"
        )
    require_writable_format(table)  # v3 features we do not write are refused before any manifest is written
    snapshot_id = table.metadata.new_snapshot_id()
    spec = table.specs()[plan.spec_id]
    added: list[ManifestFile] = []
    entries_processed = 0
    try:
        for rewrite in plan.rewrites:
            entries = [entry for manifest in rewrite.manifests for entry in read_live_entries(manifest, table.io)]
            entries_processed += len(entries)
            for run in cluster_entries(entries, spec, plan.sort_by, rewrite.target_manifests):
                added.append(_write_manifest(table, rewrite.content, plan.spec_id, run, snapshot_id))
    except BaseException:
        delete_quietly(table, [manifest.manifest_path for manifest in added])
        raise
    kept = plan.manifests_total - len(plan.replaced)
    change = SnapshotChange(
        Operation.REPLACE,
        replaced_manifest_paths={manifest.manifest_path for manifest in plan.replaced},
        added_manifests=added,
        snapshot_id=snapshot_id,
        summary_properties={
            JOB_PROPERTY: "rewrite-manifests",
            "manifests-created": str(len(added)),
            "manifests-replaced": str(len(plan.replaced)),
            "manifests-kept": str(kept),
            "entries-processed": str(entries_processed),
        },
    )
    return commit_change(table, change, starting_snapshot_id=plan.snapshot_id)


def cluster_entries(
    entries: list[ManifestEntry], spec: PartitionSpec, sort_by: tuple[str, ...], runs: int
) -> list[list[ManifestEntry]]:
    """Entries ordered by partition and cut into ``runs`` runs of about equal length, partitions kept whole."""
    if not entries:
        return []
    if spec.is_unpartitioned():
        size = math.ceil(len(entries) / runs)
        return [entries[start : start + size] for start in range(0, len(entries), size)]
    names = [f.name for f in spec.fields]
    positions = [names.index(name) for name in sort_by] if sort_by else list(range(len(names)))

    def key(entry: ManifestEntry) -> tuple[tuple[bool, Any], ...]:
        values = partition_values(entry.data_file)
        return tuple((values[i] is not None, values[i] if values[i] is not None else 0) for i in positions)

    ordered = sorted(entries, key=key)
    target = len(ordered) / runs
    clustered: list[list[ManifestEntry]] = [[]]
    for position, entry in enumerate(ordered):
        current = clustered[-1]
        # a new run starts at the first partition past the next quantile (equal partitions stay together)
        if position >= len(clustered) * target and len(clustered) < runs and key(current[-1]) != key(entry):
            clustered.append([])
        clustered[-1].append(entry)
    return clustered


def _write_manifest(
    table: Table, content: ManifestContent, spec_id: int, entries: list[ManifestEntry], snapshot_id: int
) -> ManifestFile:
    """One new manifest of the table's format with ``entries`` as EXISTING, written by ``snapshot_id``.

    The data file records are carried whole: on v3 that keeps each data file's ``first_row_id`` (filled from its old
    manifest by ``read_live_entries``) and a deletion vector's referenced file, offset and size.
    """
    metadata = table.metadata
    existing = [
        ManifestEntry.from_args(
            status=ManifestEntryStatus.EXISTING,
            snapshot_id=entry.snapshot_id,
            sequence_number=entry.sequence_number,
            file_sequence_number=entry.file_sequence_number,
            data_file=entry.data_file,
        )
        for entry in entries
    ]
    path = table.location_provider().new_metadata_location(f"{uuid.uuid4()}-rm.avro")
    compression = metadata.properties.get(
        TableProperties.WRITE_AVRO_COMPRESSION, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT
    )
    return write_entries(
        content=content,
        entries=existing,
        spec=metadata.specs()[spec_id],
        schema=metadata.schema(),
        output_file=table.io.new_output(path),
        snapshot_id=snapshot_id,
        compression=compression,  # type: ignore[arg-type]
        format_version=metadata.format_version,
    )


def _target_size(table: Table) -> int:
    raw = table.properties.get(MANIFEST_TARGET_SIZE_PROPERTY)
    if raw is None:
        return DEFAULT_MANIFEST_TARGET_SIZE
    try:
        value = int(raw)
    except ValueError:
        raise UserInputError(
            f"table {'.'.join(table.name())}: property {MANIFEST_TARGET_SIZE_PROPERTY} must be a number of bytes, "
            f"got {raw!r}"
        ) from None
    if value <= 0:
        raise UserInputError(f"table {'.'.join(table.name())}: {MANIFEST_TARGET_SIZE_PROPERTY} must be > 0")
    return value
