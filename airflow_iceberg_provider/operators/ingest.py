"""Load files or a Spark query into an Iceberg table, exactly once per task: ``spark_jobs/ingest.py`` as an operator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_iceberg_provider.assets import partitions_asset_uri, table_asset_uri
from airflow_iceberg_provider.lineage import Files, LineageDatasets, LineageItem, TableVersion
from airflow_iceberg_provider.operators._arguments import (
    INGEST_DELETE_MODES,
    INGEST_SOURCE_FORMATS,
    INGEST_SOURCE_MODES,
    check_choice,
    literal,
)
from airflow_iceberg_provider.operators.spark_job import (
    IcebergSparkJobOperator,
    column_list,
    flag_arguments,
    optional_text,
)
from airflow_iceberg_provider.partition_events import record_ingest_events
from airflow_iceberg_provider.snapshot_watch import changed_partitions

if TYPE_CHECKING:
    from airflow.sdk import Context

INGEST_MODES = ("append", "overwrite", "upsert", "delete")
FORMAT_VERSIONS = ("2", "3")


def default_idempotency_key(context: Context) -> str:
    """The DAG run id, task id and map index: the same for every try of one task instance, different otherwise."""
    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    suffix = f"/{map_index}" if map_index is not None and map_index >= 0 else ""
    return f"{ti.dag_id}/{context['run_id']}/{ti.task_id}{suffix}"


class IcebergIngestOperator(IcebergSparkJobOperator):
    """
    Write ``source`` into an Iceberg table in one atomic snapshot: append, overwrite, or upsert/delete by key as
    merge-on-read delete files.

    A retried task never duplicates data: the commit records an idempotency key in its snapshot summary (default:
    DAG id, run id, task id and map index), and a job whose key is already committed does nothing and reports that
    snapshot. The table is declared as an outlet Asset, so data-aware DAGs run after an ingest; its event's extra
    names the snapshot and the partitions changed. On Airflow 3.3+ the table's partitioned asset
    (``iceberg_partitions_asset``) also gets one event per changed partition, keyed by the partition's path text
    (``partition_events``).

    :param source: URI of the files to load. (templated)
    :param source_format: ``parquet``, ``csv`` or ``json``. (templated)
    :param sql: Spark SQL over the source (registered as view ``source``) whose rows are written. (templated)
    :param source_mode: CSV and JSON: ``failfast`` (the job's default: a malformed row fails the task without
        retries, naming its file and line), ``permissive`` (kept, nulls where fields are missing or do not parse)
        or ``dropmalformed`` (left out); the XCom's ``malformed_rows`` counts them. (templated)
    :param mode: ``append``, ``overwrite``, ``upsert`` or ``delete``. (templated)
    :param key: Key columns for ``upsert`` and ``delete``, a list or comma-separated. (templated)
    :param overwrite_filter: Rows to replace in ``overwrite`` mode (pyiceberg syntax); without it, the partitions
        the new rows touch are replaced. (templated)
    :param delete_mode: ``position`` (default) or ``equality`` delete files for ``upsert``/``delete``. (templated)
    :param idempotency_key: Key recorded with the commit; default from the task instance, ``""`` for none. (templated)
    :param create_if_missing: Create the table from the source's schema when it does not exist.
    :param partition_by: Partition spec for a created table, e.g. ``"day(ts),bucket(16,id)"``. (templated)
    :param sort_by: Sort columns for a created table, a list or comma-separated. (templated)
    :param format_version: Iceberg format version of a created table, 2 or 3 (v3: deletes as deletion vectors);
        default: the job's (2). (templated)
    :param allow_schema_evolution: Add source columns the table lacks instead of failing.
    """

    job = "ingest"
    template_fields: Sequence[str] = (
        *IcebergSparkJobOperator.template_fields,
        "source",
        "source_format",
        "sql",
        "source_mode",
        "mode",
        "key",
        "overwrite_filter",
        "delete_mode",
        "idempotency_key",
        "partition_by",
        "sort_by",
        "format_version",
    )

    def __init__(
        self,
        *,
        source: str,
        source_format: str | None = None,
        sql: str | None = None,
        source_mode: str | None = None,
        mode: str = "append",
        key: str | Sequence[str] | None = None,
        overwrite_filter: str | None = None,
        delete_mode: str | None = None,
        idempotency_key: str | None = None,
        create_if_missing: bool = False,
        partition_by: str | None = None,
        sort_by: str | Sequence[str] | None = None,
        format_version: int | str | None = None,
        allow_schema_evolution: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if mode not in INGEST_MODES and "{{" not in str(mode):
            raise ValueError(f"IcebergIngestOperator {self.task_id}: mode {mode!r} is not one of {INGEST_MODES}")
        if format_version is not None and "{{" not in str(format_version):
            if str(format_version) not in FORMAT_VERSIONS:
                raise ValueError(
                    f"IcebergIngestOperator {self.task_id}: format_version {format_version!r} is not 2 or 3"
                )
            if not create_if_missing:
                raise ValueError(
                    f"IcebergIngestOperator {self.task_id}: format_version applies to a table the job creates; "
                    "set create_if_missing=True"
                )
        owner = f"IcebergIngestOperator {self.task_id}"
        if optional_text(source) is None:
            raise ValueError(f"{owner}: source= is empty; give the files to load (a file or directory URI)")
        check_choice(owner, "source_format", source_format, INGEST_SOURCE_FORMATS)
        check_choice(owner, "delete_mode", delete_mode, INGEST_DELETE_MODES)
        check_choice(owner, "source_mode", source_mode, INGEST_SOURCE_MODES)
        if literal(mode) in ("upsert", "delete") and optional_text(column_list(key)) is None:
            raise ValueError(f"{owner}: mode {mode!r} needs key= naming the key column(s)")
        if literal(overwrite_filter) is not None and literal(mode) not in (None, "overwrite"):
            raise ValueError(f"{owner}: overwrite_filter applies to mode 'overwrite' only, not {mode!r}")
        if (optional_text(partition_by) or optional_text(column_list(sort_by))) and not create_if_missing:
            raise ValueError(f"{owner}: partition_by and sort_by apply to a table made with create_if_missing=True")
        self.source = source
        self.source_format = source_format
        self.sql = sql
        self.source_mode = source_mode
        self.mode = mode
        self.key = key
        self.overwrite_filter = overwrite_filter
        self.delete_mode = delete_mode
        self.idempotency_key = idempotency_key
        self.create_if_missing = create_if_missing
        self.partition_by = partition_by
        self.sort_by = sort_by
        self.format_version = format_version
        self.allow_schema_evolution = allow_schema_evolution

    def declares_output(self) -> bool:
        """Ingest writes rows: the table is an outlet."""
        return True

    def declares_partition_events(self) -> bool:
        """Ingest announces each changed partition on the table's partitioned asset (Airflow 3.3+)."""
        return True

    def execute(self, context: Context) -> dict[str, Any] | None:  # type: ignore[override]
        """Run the job, then set the table's asset event and the partitioned ones (``partition_events``)."""
        result = super().execute(context)
        if result is not None:
            self.record_asset_events(context, result)
        return result

    def record_asset_events(self, context: Context, result: dict[str, Any]) -> None:
        """The table's event and one per changed partition, from the job's ``partitions_changed``."""
        catalog = self._asset_catalog()
        if not catalog:
            return
        table_outlet = self.declared_outlet(table_asset_uri(catalog, self.table))
        partitions_outlet = self.declared_outlet(partitions_asset_uri(catalog, self.table))
        partitions = self._partitions_changed(result)
        keys = record_ingest_events(context, table_outlet, partitions_outlet, result, partitions)
        if keys:
            shown = ", ".join(keys[:10]) + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
            self.log.info("asset events for %d changed partition(s): %s", len(keys), shown)
        elif partitions_outlet is not None:
            # No partition changed (or none Airflow can key): no unkeyed event on the partitioned asset either.
            self.outlets = [outlet for outlet in self.outlets if outlet is not partitions_outlet]

    def _partitions_changed(self, result: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The job's ``partitions_changed``; when it could not say, read from the committed snapshot here."""
        reported = result.get("partitions_changed")
        if reported is not None or result.get("snapshot_id") is None:
            return list(reported) if reported is not None else None
        try:
            table = self.catalog_hook().load_table(self.table)
            snapshot = table.snapshot_by_id(int(result["snapshot_id"]))
            return changed_partitions(table, snapshot) if snapshot is not None else None
        except Exception as error:  # the commit stands; only the partitioned events are lost
            self.log.warning("cannot read the partitions snapshot %s changed: %s", result["snapshot_id"], error)
            return None

    def lineage_datasets(self, result: dict[str, Any] | None, current_snapshot_id: int | None) -> LineageDatasets:
        """The source's files -> the table at the committed snapshot (not known before the job)."""
        committed = result.get("snapshot_id") if result else None
        inputs: list[LineageItem] = [Files(self.source)] if optional_text(self.source) else []
        return inputs, [TableVersion(committed)]

    def resolved_idempotency_key(self, context: Context) -> str | None:
        """The key this try commits with: the given one, none for ``""``, else the task instance's default."""
        if self.idempotency_key is None:
            return default_idempotency_key(context)
        return optional_text(self.idempotency_key)

    def job_arguments(self, catalog_name: str, context: Context) -> list[str]:
        """``--catalog --table --source --mode`` and the ingest options that are set."""
        arguments = flag_arguments(
            [
                ("--catalog", catalog_name),
                ("--table", self.table),
                ("--source", self.source),
                ("--source-format", self.source_format),
                ("--sql", self.sql),
                ("--source-mode", self.source_mode),
                ("--mode", self.mode),
                ("--key", column_list(self.key)),
                ("--overwrite-filter", self.overwrite_filter),
                ("--delete-mode", self.delete_mode),
                ("--idempotency-key", self.resolved_idempotency_key(context)),
            ]
        )
        if self.create_if_missing:
            arguments.append("--create-if-missing")
            arguments += flag_arguments(
                [
                    ("--partition-by", self.partition_by),
                    ("--sort-by", column_list(self.sort_by)),
                    ("--format-version", self.format_version),
                ]
            )
        if self.allow_schema_evolution:
            arguments.append("--allow-schema-evolution")
        return arguments
