"""Which entries of a manifest (as columns) may hold rows matching a scan's row filter.

The entry-level half of ``manifest_pruning``'s work, on all entries of a manifest at once; picklable, so that
distributed planning runs it where the manifests are read:

1. Partition: the filter projected onto the manifest's spec (inclusive projection) is evaluated by pyiceberg's
   expression evaluator once per distinct partition of the manifest (``ManifestColumns.partition_groups``), and
   the verdict spread to the entries of that partition.
2. Data files that pass step 1 are then tested on their column metrics (``metrics_filter``: pyiceberg's inclusive
   metrics rules, vectorized); a data file without rows goes too. With key sets (an upsert's keys per key column),
   a file must also have, for each key column, a key within its bounds (``key_set_may_match``).
3. Delete files are kept by step 1 alone: their metrics describe the rows they delete, not the data they delete from.
4. ``survivors`` keeps the chosen entries with the columns planning needs: the statistics only when asked (the
   equality-delete bounds check needs them), the rest of a manifest's decoded columns is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import expression_evaluator, inclusive_projection
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record

from spark_jobs.engine.planning.file_statistics import FileStatistics
from spark_jobs.engine.planning.metrics_filter import MetricsFilter, key_set_may_match
from spark_jobs.engine.table.manifest_columns import CONTENT_DATA, ManifestColumns

STATISTICS_COLUMNS = (
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
)


@dataclass(frozen=True)
class EntryVerdicts:
    """Which entries of one manifest survive, data files and delete files apart, and how many data files it had."""

    data_rows: np.ndarray
    delete_rows: np.ndarray
    data_files: int


class EntryFilter:
    """The entry-level pruning of one scan: a schema, a row filter and the table's partition specs."""

    def __init__(
        self,
        specs: dict[int, PartitionSpec],
        schema: Schema,
        row_filter: BooleanExpression,
        case_sensitive: bool,
        key_sets: Mapping[int, np.ndarray] | None = None,
    ) -> None:
        self.specs = specs
        self.schema = schema
        self.row_filter = row_filter
        self.case_sensitive = case_sensitive
        self.key_sets = dict(key_sets or {})
        self.filters_rows = row_filter != AlwaysTrue() or bool(self.key_sets)
        self._partition_evaluators: dict[int, Callable[[Record], bool] | None] = {}
        self._metrics: MetricsFilter | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Ship the definition only; evaluators are built again where the filter runs."""
        return {
            "specs": self.specs,
            "schema": self.schema,
            "row_filter": self.row_filter,
            "case_sensitive": self.case_sensitive,
            "key_sets": self.key_sets,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["specs"], state["schema"], state["row_filter"], state["case_sensitive"], state["key_sets"]
        )

    def verdicts(self, columns: ManifestColumns) -> EntryVerdicts:
        """The surviving data and delete entries of ``columns`` (module doc, steps 1 to 3)."""
        content = columns.numpy("content")
        is_data = content == CONTENT_DATA
        partition_ok = self.partition_mask(columns)
        data_ok = is_data & partition_ok
        if data_ok.any():
            candidates = np.flatnonzero(data_ok)
            subset = self.filters_rows and len(candidates) < columns.num_rows
            statistics = FileStatistics(columns.table.take(candidates) if subset else columns.table)
            record_counts = columns.numpy("record_count")[candidates]
            may_match = self._metrics_filter().may_match(statistics, record_counts)
            for field_id, keys in self.key_sets.items():
                may_match &= key_set_may_match(statistics, self.schema.find_field(field_id), keys)
            data_ok[candidates] = may_match
        return EntryVerdicts(
            data_rows=np.flatnonzero(data_ok),
            delete_rows=np.flatnonzero(~is_data & partition_ok),
            data_files=int(is_data.sum()),
        )

    def partition_mask(self, columns: ManifestColumns) -> np.ndarray:
        """For each entry, False when its partition proves none of its rows can match (step 1)."""
        evaluate = self._partition_evaluator(columns.spec_id)
        if evaluate is None:
            return np.ones(columns.num_rows, dtype=bool)
        codes, partitions = columns.partition_groups
        verdicts = np.fromiter((evaluate(Record(*p)) for p in partitions), dtype=bool, count=len(partitions))
        return verdicts[codes]

    def _partition_evaluator(self, spec_id: int) -> Callable[[Record], bool] | None:
        if spec_id not in self._partition_evaluators:
            self._partition_evaluators[spec_id] = self._make_partition_evaluator(spec_id)
        return self._partition_evaluators[spec_id]

    def _make_partition_evaluator(self, spec_id: int) -> Callable[[Record], bool] | None:
        spec = self.specs.get(spec_id)
        if spec is None or spec.is_unpartitioned() or self.row_filter == AlwaysTrue():
            return None
        partition_filter = inclusive_projection(self.schema, spec, self.case_sensitive)(self.row_filter)
        if partition_filter == AlwaysTrue():
            return None
        partition_schema = Schema(*spec.partition_type(self.schema).fields)
        return expression_evaluator(partition_schema, partition_filter, self.case_sensitive)

    def _metrics_filter(self) -> MetricsFilter:
        if self._metrics is None:
            self._metrics = MetricsFilter(self.schema, self.row_filter, self.case_sensitive)
        return self._metrics


def survivors(columns: ManifestColumns, rows: np.ndarray, *, with_statistics: bool) -> ManifestColumns:
    """The entries ``rows`` of ``columns`` with what planning needs of them (module doc, step 4)."""
    table = columns.table
    if not with_statistics:
        table = table.drop_columns([name for name in STATISTICS_COLUMNS if name in table.column_names])
    if len(rows) != columns.num_rows:
        table = table.take(rows)
    return ManifestColumns(columns.manifest_path, columns.spec_id, table, columns.partition_types)
