"""The table an ingest writes to: created from the source's schema when allowed, and the source checked against it.

1. ``load_or_create_table``: the table; when missing and ``create_if_missing``, created (format v2, or v3 with
   ``--format-version 3``) from the source's Arrow schema, partitioned and sorted as ``--partition-by`` /
   ``--sort-by`` say (their columns must be source columns).
2. ``check_source_schema``: the key columns exist in the table and the source; the source's schema fits the
   table's (``write.schema_check``; delete mode checks the key columns only); the result says whether the schema
   evolves in the same commit.
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.table import Table
from pyiceberg.table.sorting import NullOrder
from pyiceberg.transforms import IdentityTransform, Transform
from pyiceberg.types import (
    GeographyType,
    GeometryType,
    IcebergType,
    TimestampNanoType,
    TimestamptzNanoType,
    UnknownType,
)

from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes
from spark_jobs.engine.ingest.options import IngestOptions
from spark_jobs.engine.shared.errors import TableNotFoundError, UserInputError
from spark_jobs.engine.shared.iceberg_model import is_variant
from spark_jobs.engine.table.catalog import load_table
from spark_jobs.engine.table.names import check_new_table_name
from spark_jobs.engine.write.schema_check import SchemaCheck, check_schema
from spark_jobs.engine.write.table_layout import parse_partition_by, parse_sort_by

log = logging.getLogger(__name__)


def load_or_create_table(catalog: Catalog, identifier: str, source_schema: pa.Schema, options: IngestOptions) -> Table:
    """The table; created from the source's schema (given format version and layout) when missing and allowed."""
    try:
        return load_table(catalog, identifier)
    except TableNotFoundError:
        if not options.create_if_missing:
            raise
    partition_fields = parse_partition_by(options.partition_by) if options.partition_by else []
    sort_fields = parse_sort_by(options.sort_by) if options.sort_by else []
    for option, given, columns in [
        ("--partition-by", options.partition_by, [c for c, _ in partition_fields]),
        ("--sort-by", options.sort_by, [c for c, _ in sort_fields]),
    ]:
        for column in columns:
            if column not in source_schema.names:
                raise UserInputError(
                    f"{option} {given!r}: column {column!r} is not a source column; columns: {source_schema.names}"
                )
    _check_transforms(partition_fields, source_schema)
    check_new_table_name(catalog, identifier)  # before the namespace or any file is made
    namespace = ".".join(catalog.identifier_to_tuple(identifier)[:-1])
    catalog.create_namespace_if_not_exists(namespace)
    if options.format_version >= 3:
        allow_v3_metadata_writes()
    properties = {"format-version": str(options.format_version)}
    table = catalog.create_table(identifier, schema=source_schema, properties=properties)
    try:
        _set_layout(table, partition_fields, sort_fields)
    except BaseException:
        _drop_new_table(catalog, identifier)
        raise
    log.info("created table %s (format v%d)", identifier, options.format_version)
    return table


def _check_transforms(partition_fields: list[tuple[str, Transform[Any, Any]]], source_schema: pa.Schema) -> None:
    """Refuse a partition transform the column's type does not take (``day`` of a long), before the table exists."""
    # Converted without field ids (all -1), so the columns are found by name among the top-level fields.
    types = {field.name: field.field_type for field in Catalog._convert_schema_if_needed(source_schema).fields}
    for column, transform in partition_fields:
        field_type = types[column]
        if not transform.can_transform(field_type):
            raise UserInputError(
                f"--partition-by {transform}({column}): column {column!r} is {field_type}, which {transform} cannot "
                "partition (year/month/day/hour take dates and timestamps; bucket and truncate take no floats)"
            )


def _drop_new_table(catalog: Catalog, identifier: str) -> None:
    """Drop a table this job just created and could not finish setting up (it holds no snapshot yet)."""
    try:
        catalog.purge_table(identifier)
    except Exception as error:  # the setup failure is what the caller reports; this one is logged
        log.warning("could not drop the half-created table %s: %s", identifier, error)


def _set_layout(
    table: Table, partition_fields: list[tuple[str, Transform[Any, Any]]], sort_fields: list[tuple[str, bool]]
) -> None:
    """Partition and sort a table just created, as ``--partition-by`` and ``--sort-by`` say."""
    if partition_fields:
        with table.update_spec() as spec_update:
            for column, transform in partition_fields:
                spec_update.add_field(column, transform)
    if sort_fields:
        with table.update_sort_order() as order_update:
            for column, ascending in sort_fields:
                if ascending:
                    order_update.asc(column, IdentityTransform(), NullOrder.NULLS_FIRST)
                else:
                    order_update.desc(column, IdentityTransform(), NullOrder.NULLS_LAST)


def _compares_by_value(field_type: IcebergType) -> bool:
    """Whether rows can be matched on a column of ``field_type``: not format v3's variant, geo and ``unknown`` types,
    nor nanosecond timestamps (which Spark holds in microseconds only)."""
    if is_variant(field_type):
        return False
    return not isinstance(
        field_type, GeometryType | GeographyType | UnknownType | TimestampNanoType | TimestamptzNanoType
    )


def check_source_schema(table: Table, source_schema: pa.Schema, options: IngestOptions) -> SchemaCheck:
    """The source's schema against the table's (delete mode: key columns only), key columns present in both."""
    table_name = ".".join(table.name())
    schema_names = {f.name for f in table.schema().fields}
    unknown_keys = [k for k in options.key if k not in schema_names]
    if unknown_keys:
        raise UserInputError(f"--key column(s) {unknown_keys} are not columns of table {table_name}")
    unfit_keys = [
        f"{k} ({field_type})"
        for k in options.key
        if not _compares_by_value(field_type := table.schema().find_field(k).field_type)
    ]
    if unfit_keys:
        raise UserInputError(
            f"--key column(s) {', '.join(unfit_keys)} of table {table_name} cannot be keys: variant, geo, unknown "
            "and nanosecond timestamp columns have no equality Spark and Iceberg agree on"
        )
    missing_keys = [k for k in options.key if k not in source_schema.names]
    if missing_keys:
        raise UserInputError(f"--key column(s) {missing_keys} are missing from the source of table {table_name}")
    if options.mode == "delete":
        keys_only = pa.schema([source_schema.field(k) for k in options.key])
        check_schema(table_name, table.schema().select(*options.key), keys_only, allow_evolution=False)
        return SchemaCheck(table.schema())
    return check_schema(
        table_name,
        table.schema(),
        source_schema,
        allow_evolution=options.allow_schema_evolution,
        last_column_id=table.metadata.last_column_id,
        next_schema_id=max(schema.schema_id for schema in table.metadata.schemas) + 1,
    )
