"""Scan contexts and deleted positions for reader tests, from a Schema object and a numpy array."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema

from spark_jobs.engine.planning.scan_context import ScanContext
from spark_jobs.engine.shared.deleted_positions import (
    NO_DELETED_POSITIONS,
    DeletedPositions,
    DeletedPositionsKind,
)

FSSPEC_IO = {"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO"}


def scan_context(
    read_schema: Schema,
    output_field_ids: Sequence[int],
    row_filter: BooleanExpression | None = None,
    **fields: Any,
) -> ScanContext:
    """A context reading ``read_schema`` (unbound ``row_filter``, None for every row) through pyarrow's FileIO."""
    return ScanContext(
        read_schema_json=read_schema.model_dump_json(),
        output_field_ids=tuple(output_field_ids),
        row_filter=row_filter if row_filter is not None else AlwaysTrue(),
        **fields,
    )


def deleted_positions(
    positions: np.ndarray | None, kind: DeletedPositionsKind = DeletedPositionsKind.POSITION_DELETES
) -> DeletedPositions:
    """Sorted deleted positions as the delete loaders give them (None or empty: nothing deleted)."""
    if positions is None or not len(positions):
        return NO_DELETED_POSITIONS
    return DeletedPositions(np.asarray(positions, dtype=np.int64), kind)
