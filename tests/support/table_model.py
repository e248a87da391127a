"""A model of an Iceberg table's rows under our jobs' operations: what every reader must return afterwards.

The model holds rows as Python dicts (tables in these tests are small) and applies each operation by its
definition, independently of the engine: append adds the batch; overwrite by filter removes the rows the filter
matches, then adds the batch; dynamic overwrite removes the rows of every partition the batch touches, then adds it;
upsert removes the rows whose key is in the batch, then adds the batch; delete removes the rows whose key is in the
batch; compaction and snapshot expiry change nothing. Added columns read as null in older rows (nested too); a
renamed column keeps its values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from tests.support.conformance import table_checksum

Row = dict[str, Any]


@dataclass
class TableModel:
    """The rows a table holds after a sequence of operations, with the Arrow schema they are written with."""

    schema: pa.Schema
    rows: list[Row] = field(default_factory=list)
    history: dict[int, list[Row]] = field(default_factory=dict)  # snapshot id -> rows at that snapshot

    def append(self, batch: Iterable[Row]) -> None:
        """Rows added as they are."""
        self.rows.extend(self._conformed(batch))

    def overwrite_where(self, matches: Callable[[Row], bool], batch: Iterable[Row]) -> None:
        """Rows ``matches`` selects replaced by the batch."""
        self.rows = [row for row in self.rows if not matches(row)]
        self.append(batch)

    def overwrite_partitions(self, partition_of: Callable[[Row], Any], batch: Iterable[Row]) -> None:
        """Every partition the batch has rows in replaced by the batch's rows."""
        batch = list(batch)
        touched = {partition_of(row) for row in batch}
        self.rows = [row for row in self.rows if partition_of(row) not in touched]
        self.append(batch)

    def upsert(self, batch: Iterable[Row], key: list[str]) -> None:
        """Rows with a key in the batch replaced by the batch's rows."""
        batch = list(batch)
        self.delete(batch, key)
        self.append(batch)

    def delete(self, keys: Iterable[Row], key: list[str]) -> None:
        """Rows with a key in ``keys`` removed."""
        gone = {tuple(row[k] for k in key) for row in keys}
        self.rows = [row for row in self.rows if tuple(row[k] for k in key) not in gone]

    def add_columns(self, schema: pa.Schema) -> None:
        """The table's schema widened to ``schema``; what older rows lack reads as null."""
        self.schema = schema
        self.rows = self._conformed(self.rows)

    def rename_column(self, old: str, new: str) -> None:
        """A top-level column renamed: same values, new name (in the schema and in every current row)."""
        index = self.schema.get_field_index(old)
        self.schema = self.schema.set(index, self.schema.field(index).with_name(new))
        self.rows = [{(new if name == old else name): value for name, value in row.items()} for row in self.rows]

    def remember(self, snapshot_id: int) -> None:
        """Record the current rows as the table's content at ``snapshot_id`` (for time travel checks)."""
        self.history[snapshot_id] = list(self.rows)

    def to_arrow(self, rows: list[Row] | None = None) -> pa.Table:
        """The rows (current, or given) as an Arrow table of the model's schema."""
        return pa.Table.from_pylist(self.rows if rows is None else rows, schema=self.schema)

    def checksum(self, snapshot_id: int | None = None) -> dict:
        """{"rows", "checksum", "columns"} of the current rows or of those remembered at ``snapshot_id``."""
        table = self.to_arrow(None if snapshot_id is None else self.history[snapshot_id])
        return arrow_checksum(table, self.schema.names)

    def _conformed(self, rows: Iterable[Row]) -> list[Row]:
        return [_conform(row, self.schema) for row in rows]


def arrow_checksum(table: pa.Table, columns: list[str]) -> dict:
    """{"rows", "checksum", "columns"} of an Arrow table over ``columns``, in the same shape Java's answer has."""
    checksum, per_column = table_checksum(table.select(columns), columns)
    return {"rows": table.num_rows, "checksum": checksum, "columns": per_column}


def _conform(row: Row, schema: pa.Schema | pa.StructType) -> Row:
    fields = list(schema) if isinstance(schema, pa.Schema) else [schema.field(i) for i in range(schema.num_fields)]
    out = {}
    for f in fields:
        value = row.get(f.name)
        if value is not None and pa.types.is_struct(f.type):
            value = _conform(value, f.type)
        out[f.name] = value
    return out
