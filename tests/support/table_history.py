"""A small table with a history, written with pyiceberg: appends, a delete and an overwrite, for maintenance tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("category", pa.string())])


@dataclass
class TableHistory:
    """The table, its snapshot ids oldest first, and the row count each snapshot reads."""

    table: Table
    snapshot_ids: list[int]
    rows_per_snapshot: dict[int, int]

    @property
    def directory(self) -> Path:
        """The table location as a local directory."""
        return Path(urlparse(self.table.metadata.location).path)


def build_table_history(catalog: Catalog, identifier: str = "maint.events") -> TableHistory:
    """Seven snapshots: four appends of 10 rows (categories c0..c3), delete c0, overwrite c1 with one row."""
    namespace = identifier.rsplit(".", 1)[0]
    catalog.create_namespace_if_not_exists(namespace)
    table = catalog.create_table(identifier, schema=SCHEMA)
    for batch in range(4):
        ids = pa.array([batch * 10 + i for i in range(10)], pa.int64())
        table.append(pa.table({"id": ids, "category": [f"c{batch}"] * 10}, schema=SCHEMA))
    table.delete("category = 'c0'")
    table.overwrite(pa.table({"id": pa.array([100], pa.int64()), "category": ["z"]}, schema=SCHEMA), "category = 'c1'")
    snapshots = sorted(table.snapshots(), key=lambda snapshot: snapshot.sequence_number)
    ids = [snapshot.snapshot_id for snapshot in snapshots]
    rows = {snapshot_id: table.scan(snapshot_id=snapshot_id).to_arrow().num_rows for snapshot_id in ids}
    return TableHistory(table, ids, rows)
