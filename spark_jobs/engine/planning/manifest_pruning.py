"""Prune a snapshot's manifests with the row filter, before any manifest is opened.

pyiceberg's evaluators do the work; this module decides where each applies and counts what it pruned (the entries
of the manifests kept are pruned by ``entry_filter``, over their columns):

1. Manifests (data and delete): project the row filter onto the manifest's partition spec (inclusive projection)
   and test the manifest's partition summaries (``manifest_evaluator``). A delete manifest whose partitions cannot
   match cannot hold a delete for a surviving data file: deletes apply within their own spec and partition only,
   except equality deletes of an unpartitioned spec, whose projection is always true, so they are never pruned.
2. Delete manifests older than every data manifest still read (sequence number below the smallest data sequence
   number) are skipped: no delete in them can apply to any data file (deletes need seq >= data seq).
3. ``partition_may_match`` tests one file's partition tuple (the projected filter evaluated on the partition
   record), for callers holding a file as an object.
4. Counting into ``ScanMetrics``: every manifest of the snapshot is in ``manifests_total``; data files in a pruned
   manifest count into ``data_files_total`` and ``data_files_pruned`` by the manifest's file counts (unknown in some
   v1 manifests, then 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import (
    expression_evaluator,
    inclusive_projection,
    manifest_evaluator,
)
from pyiceberg.manifest import (
    INITIAL_SEQUENCE_NUMBER,
    DataFile,
    ManifestContent,
    ManifestFile,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from spark_jobs.engine.shared.metrics import ScanMetrics


class ManifestPruner:
    """Decides, for one scan (schema, row filter), which manifests and manifest entries may hold matching rows."""

    def __init__(
        self, specs: dict[int, PartitionSpec], schema: Schema, row_filter: BooleanExpression, case_sensitive: bool
    ) -> None:
        self._filters_rows = row_filter != AlwaysTrue()
        self._manifest_evaluators: dict[int, Callable[[ManifestFile], bool]] = {}
        self._partition_evaluators: dict[int, Callable[[DataFile], bool]] = {}
        for spec_id, spec in specs.items():
            if spec.is_unpartitioned() or not self._filters_rows:
                continue
            partition_filter = inclusive_projection(schema, spec, case_sensitive)(row_filter)
            if partition_filter == AlwaysTrue():
                continue
            self._manifest_evaluators[spec_id] = manifest_evaluator(spec, schema, partition_filter, case_sensitive)
            partition_schema = Schema(*spec.partition_type(schema).fields)
            self._partition_evaluators[spec_id] = _on_partition(
                expression_evaluator(partition_schema, partition_filter, case_sensitive)
            )

    def manifest_may_match(self, manifest: ManifestFile) -> bool:
        """False when the manifest's partition summaries prove no entry can match the filter."""
        evaluator = self._manifest_evaluators.get(manifest.partition_spec_id)
        return evaluator is None or evaluator(manifest)

    def partition_may_match(self, data_file: DataFile) -> bool:
        """False when the file's partition tuple proves none of its rows can match the filter."""
        evaluator = self._partition_evaluators.get(data_file.spec_id)
        return evaluator is None or evaluator(data_file)

    def select_manifests(
        self, manifests: Sequence[ManifestFile], metrics: ScanMetrics
    ) -> tuple[list[ManifestFile], list[ManifestFile]]:
        """The data and the delete manifests to read (module doc, steps 1, 2 and 4)."""
        metrics.manifests_total += len(manifests)
        kept_data_manifests: list[ManifestFile] = []
        for manifest in (m for m in manifests if m.content != ManifestContent.DELETES):
            if self.manifest_may_match(manifest):
                kept_data_manifests.append(manifest)
            else:
                files = (manifest.added_files_count or 0) + (manifest.existing_files_count or 0)
                metrics.data_files_total += files
                metrics.data_files_pruned += files
        min_data_sequence_number = min(
            (m.min_sequence_number or INITIAL_SEQUENCE_NUMBER for m in kept_data_manifests),
            default=INITIAL_SEQUENCE_NUMBER,
        )
        kept_delete_manifests = [
            m
            for m in manifests
            if m.content == ManifestContent.DELETES
            and (m.sequence_number or INITIAL_SEQUENCE_NUMBER) >= min_data_sequence_number
            and self.manifest_may_match(m)
        ]
        metrics.manifests_pruned += len(manifests) - len(kept_data_manifests) - len(kept_delete_manifests)
        return kept_data_manifests, kept_delete_manifests


def _on_partition(evaluate_record: Callable[..., bool]) -> Callable[[DataFile], bool]:
    """Adapt a partition-record evaluator to take the data file holding the record."""
    return lambda data_file: evaluate_record(data_file.partition)
