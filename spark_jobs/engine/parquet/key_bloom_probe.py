"""Whether a data file may hold any of many keys, by its key columns' bloom filters (an upsert's key scan).

The planner keeps the files whose bounds may hold a key (``planning.metrics_filter.key_set_may_match``); bounds
cannot rule out a file whose range spans the keys (random or hashed keys), its bloom filters can. For each file the
key scan would read:

1. The footer (the process's footer cache) gives each key column's leaf, found by field id; a column without a
   field id, or under a list or map, proves nothing.
2. The keys' xxHash64 values are computed once per key column and Parquet layout (the PLAIN encoding a writer hashed:
   ``bloom_filter.plain_encoded_literal``), and kept for the following files.
3. Each row group's filter is read whole and probed with every hash at once (numpy over the filter's words). A row
   group without a filter, or with one of another kind, may hold any key; the file may hold a key if any row group
   may hold one of every key column's values.
4. Reading a filter fails only as reading the file would: the error names the file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import xxhash
from pyiceberg.io import FileIO, InputStream

from spark_jobs.engine.parquet.bloom_filter import (
    NOT_IN_COLUMN,
    plain_encoded_literal,
    read_bloom_filter,
)
from spark_jobs.engine.parquet.file_columns import LeafColumn, file_leaf_columns
from spark_jobs.engine.parquet.footer_cache import cached_footer, open_input
from spark_jobs.engine.shared.errors import file_error
from spark_jobs.engine.shared.metrics import ScanMetrics


class KeyBloomProbe:
    """The key values of an upsert per key column (field id -> values as the table holds them), probing files."""

    def __init__(self, keys: Mapping[int, Sequence[Any]]) -> None:
        self._keys = {field_id: list(values) for field_id, values in keys.items()}
        self._hashes: dict[tuple[int, str, str, str | None, int, int], np.ndarray | None] = {}

    def file_may_hold_keys(self, path: str, file_size: int, io: FileIO, metrics: ScanMetrics) -> bool:
        """False when the file's bloom filters prove it holds none of the keys (module doc)."""
        try:
            stream = open_input(io, path)
            footer, _, bytes_read = cached_footer(stream, path, file_size)
            metrics.bytes_read += bytes_read
            metadata = footer.metadata
            leaves = {
                leaf.field_id: leaf
                for leaf in file_leaf_columns(metadata.schema, metadata.schema.to_arrow_schema())
                if leaf.field_id is not None and not leaf.is_repeated
            }
            probes: list[tuple[LeafColumn, np.ndarray]] = []
            for field_id in self._keys:
                leaf = leaves.get(field_id)
                hashes = self._hashes_for(field_id, leaf) if leaf is not None else None
                if leaf is not None and hashes is not None:  # otherwise this column proves nothing
                    probes.append((leaf, hashes))
            if not probes:
                return True
            for row_group in range(metadata.num_row_groups):
                if self._row_group_may_hold(stream, metadata.row_group(row_group), probes, path, metrics):
                    return True
            metrics.row_groups_pruned_by_bloom_filter += metadata.num_row_groups
            return False
        except Exception as error:  # named when it is the file's fault, re-raised as it was otherwise
            raise file_error("data file", path, error) from error

    def _row_group_may_hold(
        self,
        stream: InputStream,
        row_group: pq.RowGroupMetaData,
        probes: list[tuple[LeafColumn, np.ndarray]],
        path: str,
        metrics: ScanMetrics,
    ) -> bool:
        for leaf, hashes in probes:
            bloom_filter, bytes_read = read_bloom_filter(stream, row_group.column(leaf.index), path)
            metrics.bytes_read += bytes_read
            if bloom_filter is not None and not bloom_filter.might_contain_any_hash(hashes):
                return False  # no value of this key column: no key here
        return True

    def _hashes_for(self, field_id: int, leaf: LeafColumn) -> np.ndarray | None:
        """The keys' hashes in this column's layout (None: a key this layout cannot encode, so no pruning)."""
        signature = (field_id, leaf.physical_type, leaf.logical_type, leaf.time_unit, leaf.scale, leaf.type_length)
        if signature not in self._hashes:
            hashes: list[int] = []
            for value in self._keys[field_id]:
                encoded = plain_encoded_literal(value, leaf)
                if encoded is None:
                    self._hashes[signature] = None
                    break
                if encoded is not NOT_IN_COLUMN:
                    hashes.append(xxhash.xxh64_intdigest(encoded, seed=0))  # type: ignore[arg-type]
            else:
                self._hashes[signature] = np.array(hashes, dtype=np.uint64)
        return self._hashes[signature]
