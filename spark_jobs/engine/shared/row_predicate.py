"""The contract between late materialization and whatever decides which rows of a batch survive.

Both the conjuncts of a row filter and equality delete sets are row predicates: the Parquet reader reads the
columns a predicate names (by Iceberg field id, already projected to the read schema's types), asks it for a keep
mask, and reads further columns only for rows that survive. Cheaper predicates run first (by the compressed bytes
of their columns). A predicate whose answer on an immutable file never changes (an equality delete set) has a
``cache_identity``, so the rows it rejects per row group can be remembered (``parquet.rejected_rows_cache``).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping
from typing import Protocol, runtime_checkable

import numpy as np
import pyarrow as pa


class PredicateKind(enum.Enum):
    """What a row predicate is: which counter its rejected rows add to, and whether it may reject whole row groups."""

    FILTER = "filter"  # a row-filter conjunct
    EQUALITY_DELETE = "equality_delete"  # an equality delete set


@runtime_checkable
class RowPredicate(Protocol):
    """Decides per row whether it survives; evaluated on Arrow arrays keyed by field id."""

    @property
    def field_ids(self) -> frozenset[int]:
        """The Iceberg field ids whose columns ``keep_mask`` needs."""
        ...

    @property
    def kind(self) -> PredicateKind:
        """A row-filter conjunct or an equality delete set."""
        ...

    @property
    def cache_identity(self) -> Hashable | None:
        """What decides the answer on a given immutable file, so it may be remembered per row group; or None."""
        ...

    def keep_mask(self, columns: Mapping[int, pa.Array], num_rows: int) -> np.ndarray:
        """A boolean numpy array of ``num_rows``: True where the row survives this predicate."""
        ...
