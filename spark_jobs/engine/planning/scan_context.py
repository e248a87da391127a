"""What every task of one scan shares: the read schema, output fields, row filter and the table's FileIO.

``read.session`` builds one per scan (``build_scan_context``) and ships it with the tasks; the per-file reader
(``parquet.opener``) and the delete loaders take it as it is:

1. The driver fills the declared fields: plain, picklable values (the read schema as JSON, the unbound filter,
   the FileIO properties), checked once (the output fields are top-level fields of the read schema).
2. Each process rebuilds what they describe on first use (the schema, the bound filter, the FileIO, the output
   Arrow schema) and keeps it: ``__getstate__`` ships the declared fields only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import bind
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import IcebergType, LongType, NestedField

from spark_jobs.engine.shared.arrow_types import schema_to_arrow
from spark_jobs.engine.shared.errors import UserInputError

DEFAULT_BATCH_SIZE = 131_072
# Iceberg's reserved metadata column of a row's position in its data file (spec: "Reserved Field IDs"). A read
# schema holding it gets each surviving row's position, counted before any delete or filter.
ROW_POSITION = NestedField(2147483645, "_pos", LongType(), required=True, doc="Ordinal position of the row in the file")
# Iceberg's row lineage metadata columns (v3). A read schema holding them gets each row's value stored in the data
# file, or where the file stores none (null or no column) the inherited one: the file's first row id plus the row's
# position, and the file's data sequence number.
ROW_ID = NestedField(2147483540, "_row_id", LongType(), required=False, doc="Implicit row ID assigned on insert")
LAST_UPDATED_SEQUENCE_NUMBER = NestedField(
    2147483539,
    "_last_updated_sequence_number",
    LongType(),
    required=False,
    doc="Sequence number when the row was last updated",
)
ROW_LINEAGE = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)
ROW_LINEAGE_FORMAT_VERSION = 3  # the first format version with row lineage


def row_lineage_fields(table: Table) -> tuple[NestedField, ...]:
    """The lineage columns a rewrite of ``table``'s rows reads and writes back: both on v3, none before."""
    return ROW_LINEAGE if table.format_version >= ROW_LINEAGE_FORMAT_VERSION else ()


def with_row_lineage(schema: Schema) -> Schema:
    """``schema`` plus the lineage columns: the schema of data files that store each row's lineage."""
    return Schema(
        *schema.fields, *ROW_LINEAGE, schema_id=schema.schema_id, identifier_field_ids=schema.identifier_field_ids
    )


_DERIVED = frozenset({"read_schema", "bound_filter", "io", "output_schema", "field_types"})


@dataclass(frozen=True)
class ScanContext:
    """Everything an executor needs to run any task of one scan, besides the task itself."""

    read_schema_json: str
    output_field_ids: tuple[int, ...]
    row_filter: BooleanExpression = field(default_factory=AlwaysTrue)
    case_sensitive: bool = True
    # FileIO properties carry storage credentials: shipped to executors, never printed.
    io_properties: dict[str, str] = field(default_factory=dict, repr=False)
    table_location: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    name_mapping_json: str | None = None  # the table's schema.name-mapping.default, for files without field ids

    def __post_init__(self) -> None:
        top_level_ids = {top.field_id for top in self.read_schema.fields}
        if not set(self.output_field_ids) <= top_level_ids:
            raise UserInputError(
                f"output field ids {sorted(set(self.output_field_ids) - top_level_ids)} are not top-level fields of "
                f"the read schema (top-level ids: {sorted(top_level_ids)})"
            )

    @cached_property
    def read_schema(self) -> Schema:
        """Output fields first, then the fields only the filter or equality deletes need."""
        return Schema.model_validate_json(self.read_schema_json)

    @cached_property
    def bound_filter(self) -> BooleanExpression:
        """The row filter bound to the read schema (by field id)."""
        if isinstance(self.row_filter, AlwaysTrue):
            return AlwaysTrue()
        return bind(self.read_schema, self.row_filter, self.case_sensitive)

    @cached_property
    def io(self) -> FileIO:
        """The table's FileIO, rebuilt from its properties in this process."""
        return load_file_io(self.io_properties, self.table_location)

    @cached_property
    def output_schema(self) -> pa.Schema:
        """The Arrow schema of every batch this scan yields: the output fields in order, with their field ids."""
        return schema_to_arrow(Schema(*(self.read_schema.find_field(field_id) for field_id in self.output_field_ids)))

    @cached_property
    def field_types(self) -> dict[int, IcebergType]:
        """Field id -> Iceberg type of every field of the read schema (equality deletes compare in these types)."""
        return {field_id: nested.field_type for field_id, nested in self.read_schema._lazy_id_to_field.items()}

    def __getstate__(self) -> dict[str, Any]:
        """Ship only the declared fields; what they describe is rebuilt on the other side."""
        return {key: value for key, value in self.__dict__.items() if key not in _DERIVED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
