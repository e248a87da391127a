"""Merge-on-read export or aggregates of an Iceberg table at a snapshot, ref or time: ``spark_jobs/read.py``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_iceberg_provider.lineage import Files, LineageDatasets, TableDescription, TableVersion
from airflow_iceberg_provider.operators._arguments import (
    READ_OUTPUT_FORMATS,
    READ_WRITE_MODES,
    check_at_most_one,
    check_choice,
    check_integer,
)
from airflow_iceberg_provider.operators.spark_job import (
    IcebergJobInputError,
    IcebergSparkJobOperator,
    column_list,
    flag_arguments,
    optional_text,
)
from airflow_iceberg_provider.partition_filter import PartitionKeyError, partition_row_filter

if TYPE_CHECKING:
    from airflow.sdk import Context


class IcebergReadOperator(IcebergSparkJobOperator):
    """
    Read an Iceberg table with every delete applied and write the rows to ``output_path`` (Parquet or CSV), or
    compute ``aggregates`` over them.

    At most one of ``snapshot_id``, ``ref`` and ``as_of`` picks the snapshot (default: the current one). Returns the
    job's result line: ``snapshot_id``, ``rows_out``, pruning counters and seconds per phase. With ``aggregates``
    nothing is written: the result's ``aggregates`` maps each one (``"sum(price)"``) to its value, computed where
    each Spark task decodes its rows (one Spark stage) with Spark SQL's result types. The XCom is JSON: counts and
    integer sums are numbers, float sums, averages, min and max of numbers are numbers (NaN and infinities as the
    strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``); decimals are strings (``"1234.5600"``, exact), dates and
    timestamps ISO-8601 strings (``timestamptz`` in UTC with ``+00:00``), binary base64; an aggregate of no values
    is null (a count is 0).

    :param output_path: Directory URI to write the rows to; exactly one of it and ``aggregates``. (templated)
    :param aggregates: Aggregates instead of an export, a list or a comma-separated string: ``count(*)``,
        ``count(col)``, ``sum(col)``, ``min(col)``, ``max(col)``, ``avg(col)`` of top-level columns, after
        ``row_filter``. A function the column's type does not take fails the task as bad input. (templated)
    :param snapshot_id: Read this snapshot. (templated)
    :param ref: Read the head of this branch or tag. (templated)
    :param as_of: Read the snapshot current at this time: epoch milliseconds or ISO-8601. (templated)
    :param columns: Columns to return, a list or a comma-separated string (default: all). (templated)
    :param row_filter: Row filter in pyiceberg's syntax, e.g. ``"id > 5"``, with the read job's variant-path and geo
        box forms (``variant_get(v, '$.a', 'int') > 5``, ``st_intersects(g, st_makeenvelope(0, 0, 1, 1))``).
        (templated)
    :param partition_key: Read only this partition: its path text as Iceberg names it on storage, the key of a
        partitioned asset event (``"{{ dag_run.partition_key }}"`` in a DAG scheduled on the table's partitioned
        asset). Turned into a row filter on the partition's source columns (``partition_filter``), and-ed with
        ``row_filter``. (templated)
    :param output_format: ``parquet`` or ``csv``. (templated)
    :param write_mode: ``error`` (fail if ``output_path`` exists) or ``overwrite``. (templated)
    :param split_size: Target bytes per Spark task (default: the table's). (templated)
    :param driver_max_bytes: A Parquet export to a local path whose plan reads at most this many bytes runs in the
        job's driver without starting Spark (default: the job's, 128 MiB; 0: always on Spark). (templated)
    """

    job = "read"
    template_fields: Sequence[str] = (
        *IcebergSparkJobOperator.template_fields,
        "output_path",
        "aggregates",
        "snapshot_id",
        "ref",
        "as_of",
        "columns",
        "row_filter",
        "partition_key",
        "output_format",
        "write_mode",
        "split_size",
        "driver_max_bytes",
    )

    def __init__(
        self,
        *,
        output_path: str | None = None,
        aggregates: str | Sequence[str] | None = None,
        snapshot_id: int | str | None = None,
        ref: str | None = None,
        as_of: int | str | None = None,
        columns: str | Sequence[str] | None = None,
        row_filter: str | None = None,
        partition_key: str | None = None,
        output_format: str = "parquet",
        write_mode: str = "error",
        split_size: int | str | None = None,
        driver_max_bytes: int | str | None = None,
        **kwargs: Any,
    ) -> None:
        if (output_path is None) == (aggregates is None):
            raise ValueError(
                f"IcebergReadOperator on {kwargs.get('table')!r} needs exactly one of output_path= and aggregates="
            )
        super().__init__(**kwargs)
        owner = f"IcebergReadOperator {self.task_id}"
        check_at_most_one(owner, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
        check_integer(owner, "snapshot_id", snapshot_id)
        check_integer(owner, "split_size", split_size, minimum=1)
        check_integer(owner, "driver_max_bytes", driver_max_bytes, minimum=0)
        check_choice(owner, "output_format", output_format, READ_OUTPUT_FORMATS)
        check_choice(owner, "write_mode", write_mode, READ_WRITE_MODES)
        self.output_path = output_path
        self.aggregates = aggregates
        self.snapshot_id = snapshot_id
        self.ref = ref
        self.as_of = as_of
        self.columns = columns
        self.row_filter = row_filter
        self.partition_key = partition_key
        self._filter_used: str | None = None
        self.output_format = output_format
        self.write_mode = write_mode
        self.split_size = split_size
        self.driver_max_bytes = driver_max_bytes

    def lineage_datasets(self, result: dict[str, Any] | None, current_snapshot_id: int | None) -> LineageDatasets:
        """The table at the snapshot read (before the job: the one asked for, else the current one) -> the export."""
        if result:
            snapshot_id = result.get("snapshot_id")
        elif optional_text(self.snapshot_id) is not None:
            snapshot_id = int(str(self.snapshot_id))
        elif optional_text(self.ref) is None and optional_text(self.as_of) is None:
            snapshot_id = current_snapshot_id
        else:
            snapshot_id = None  # a ref or a time: resolved by the job
        return [TableVersion(snapshot_id)], [Files(self.output_path)] if self.output_path else []

    def job_arguments(self, catalog_name: str, context: Context) -> list[str]:
        """``--catalog --table``, the snapshot, and the export's or the aggregates' options that are set."""
        snapshot: list[tuple[str, Any]] = [
            ("--catalog", catalog_name),
            ("--table", self.table),
            ("--snapshot-id", self.snapshot_id),
            ("--ref", self.ref),
            ("--as-of", self.as_of),
        ]
        row_filter = self._filter_used = self.effective_row_filter()
        if self.aggregates is not None:  # joined as columns are
            return flag_arguments([*snapshot, ("--filter", row_filter), ("--aggregate", column_list(self.aggregates))])
        return flag_arguments(
            [
                *snapshot,
                ("--columns", column_list(self.columns)),
                ("--filter", row_filter),
                ("--output", self.output_path),
                ("--output-format", self.output_format),
                ("--mode", self.write_mode),
                ("--split-size", self.split_size),
                ("--driver-max-bytes", self.driver_max_bytes),
            ]
        )

    def iceberg_facets(
        self, result: dict[str, Any], description: TableDescription
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The read's ``icebergScanReport`` on the table it scanned (``lineage_facets``)."""
        from airflow_iceberg_provider.lineage_facets import SCAN_REPORT, scan_report

        snapshot_id = result.get("snapshot_id")
        schema = description.schema_of(snapshot_id)
        columns = column_list(self.columns)
        names = [c.strip() for c in columns.split(",")] if columns else [f.name for f in schema.fields]
        report = scan_report(result, schema_id=schema.schema_id, row_filter=self._filter_used, columns=names)
        return {SCAN_REPORT: report}, {}

    def effective_row_filter(self) -> str | None:
        """``row_filter``, and-ed with the filter of ``partition_key`` when one is given (``partition_filter``)."""
        key = optional_text(self.partition_key)
        row_filter = optional_text(self.row_filter)
        if key is None:
            return row_filter
        try:
            table = self.catalog_hook().load_table(self.table)
            partition = partition_row_filter(table, key)
        except PartitionKeyError as error:
            raise IcebergJobInputError(f"read of {self.table}: {error}") from error
        if partition.uncovered:
            self.log.warning(
                "partition %s: fields %s cannot be written as a row filter (bucket, void or binary): the read covers "
                "every partition that matches the others",
                key,
                ", ".join(partition.uncovered),
            )
        self.log.info("partition %s reads rows matching: %s", key, partition.row_filter)
        return f"({partition.row_filter}) AND ({row_filter})" if row_filter else partition.row_filter
