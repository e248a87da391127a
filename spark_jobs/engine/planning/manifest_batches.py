"""Evaluate many small manifests as one: consecutive manifests of one spec and one column layout, concatenated.

Filtering a manifest costs a fixed amount on top of its entries (building the metrics filter's arrays, taking the
candidates, one partition evaluation per distinct partition), which dominates when a table has many small manifests
(a manifest per commit with merging off). Concatenating them first makes that cost once per batch.

1. Manifests are taken in order; one with at least ``max_rows`` entries goes alone (as the cache holds it, so what
   it caches on itself, such as its distinct partitions, stays cached for the next plan).
2. Smaller ones accumulate while they share the spec id, the partition types and the Arrow schema, and until the
   batch holds ``max_rows`` entries; then the batch is concatenated without copying (``pa.concat_tables``).
3. Each batch is yielded with the number of manifests in it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

from spark_jobs.engine.table.manifest_columns import ManifestColumns

BATCH_ROWS = 1 << 16


def batched_manifests(
    manifests: Iterable[ManifestColumns], max_rows: int = BATCH_ROWS
) -> Iterator[tuple[ManifestColumns, int]]:
    """Consecutive small manifests of one layout joined into one ``ManifestColumns``, with how many each joins."""
    pending: list[ManifestColumns] = []
    pending_rows = 0
    for columns in manifests:
        if pending and (columns.num_rows >= max_rows or not _same_layout(pending[0], columns)):
            yield _joined(pending), len(pending)
            pending, pending_rows = [], 0
        if columns.num_rows >= max_rows:
            yield columns, 1
            continue
        pending.append(columns)
        pending_rows += columns.num_rows
        if pending_rows >= max_rows:
            yield _joined(pending), len(pending)
            pending, pending_rows = [], 0
    if pending:
        yield _joined(pending), len(pending)


def _same_layout(first: ManifestColumns, other: ManifestColumns) -> bool:
    return (
        first.spec_id == other.spec_id
        and first.partition_types == other.partition_types
        and first.table.schema.equals(other.table.schema)
    )


def _joined(pending: list[ManifestColumns]) -> ManifestColumns:
    if len(pending) == 1:
        return pending[0]
    first = pending[0]
    table = pa.concat_tables([columns.table for columns in pending])
    return ManifestColumns(
        f"{first.manifest_path} and {len(pending) - 1} more", first.spec_id, table, first.partition_types
    )
