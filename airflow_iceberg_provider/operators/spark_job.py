"""What every Iceberg job operator shares: a SparkSubmitOperator that runs one ``spark_jobs`` entry point.

1. The command line: the job's arguments from the operator's (rendered) fields, then any ``application_args``.
2. The catalog: with ``iceberg_conn_id``, the connection's properties become the job's
   ``PYICEBERG_CATALOG__<NAME>__<KEY>`` environment: spark-submit's process environment in local and every client
   deploy mode; in YARN or Kubernetes cluster deploy mode, driver-environment confs in a private properties file
   (never argv); its secrets are masked in every log line and in the logged command. Without it, ``catalog``
   names a catalog already configured for pyiceberg where the driver runs.
3. The engine: a zip of ``spark_jobs`` in ``py_files`` (``ship_engine=True``), or the package installed on the cluster.
4. The outcome: the job's final JSON line is the XCom value; on failure the task fails with the job's ``error:`` line
   (bad input, exit code 2, fails without retries).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseOperatorLink

from airflow_iceberg_provider.airflow_compat import AirflowException, AirflowFailException
from airflow_iceberg_provider.assets import (
    check_table_identifier,
    declared_uri,
    operator_asset,
    operator_table_asset,
    partitions_asset_uri,
    schedule_assets,
)
from airflow_iceberg_provider.engine_package import engine_zip, job_script
from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook
from airflow_iceberg_provider.hooks.spark_job import SparkJobSubmitHook
from airflow_iceberg_provider.hooks.spark_submit_compat import SubmitOperatorSeam
from airflow_iceberg_provider.job_contract import EXIT_USAGE
from airflow_iceberg_provider.lineage import (
    LineageDatasets,
    LineageItem,
    TableDescription,
    TableVersion,
    describe_table,
    operator_lineage,
)
from airflow_iceberg_provider.links import SparkDriverLogLink, SparkUiLink
from airflow_iceberg_provider.partition_events import task_partition_keys_supported
from airflow_iceberg_provider.settings import ProviderSettings

if TYPE_CHECKING:
    from airflow.sdk import Context

# Quiet, headless defaults for the jobs; any ``conf`` the caller passes wins.
DEFAULT_JOB_CONF = {"spark.ui.showConsoleProgress": "false"}


class IcebergJobError(AirflowException):
    """A ``spark_jobs`` job failed; the message carries its one-line reason."""


class IcebergJobInputError(AirflowFailException):
    """A ``spark_jobs`` job refused its input (exit code 2); retrying cannot help."""


class IcebergSparkJobOperator(SubmitOperatorSeam):
    """
    Run one ``spark_jobs`` entry point on an Iceberg table through spark-submit and return its result line.

    Subclasses set ``job`` and build the job's arguments in ``job_arguments``. Every SparkSubmitOperator argument
    (``conn_id``, ``conf``, ``deploy_mode``, memory and cores, ...) passes through.

    :param table: Table identifier ``namespace.table``. (templated)
    :param catalog: Catalog name the job resolves through pyiceberg; with ``iceberg_conn_id`` it overrides the
        connection extra's ``catalog_name``. (templated)
    :param iceberg_conn_id: ``iceberg`` connection whose catalog properties the job gets as its environment.
    :param ship_engine: Add a zip of ``spark_jobs`` to ``py_files`` (``False`` when the cluster has the package).
    :param application: The job script; default the installed ``spark_jobs/<job>.py`` (give a cluster-visible path
        in cluster deploy mode). (templated)
    :param application_args: Extra arguments appended after the job's own. (templated)
    """

    job: ClassVar[str] = ""
    operator_extra_links: Collection[BaseOperatorLink] = (SparkUiLink(), SparkDriverLogLink())
    template_fields: Sequence[str] = (
        *SubmitOperatorSeam.template_fields,
        "table",
        "catalog",
        "extra_application_args",
    )

    def __init__(
        self,
        *,
        table: str,
        catalog: str | None = None,
        iceberg_conn_id: str | None = None,
        ship_engine: bool = True,
        conn_id: str | None = None,
        application: str = "",
        name: str | None = None,
        conf: dict[str, Any] | None = None,
        application_args: list[Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not catalog and not iceberg_conn_id:
            raise ValueError(f"{type(self).__name__} on {table!r} needs catalog= or iceberg_conn_id=")
        super().__init__(
            application=application,
            conn_id=conn_id or ProviderSettings.from_environment().spark_conn_id,
            name=name or f"iceberg-{self.job}-{kwargs.get('task_id', 'task')}",
            conf={**DEFAULT_JOB_CONF, **(conf or {})},
            **kwargs,
        )
        check_table_identifier(table, f"{type(self).__name__} {self.task_id}")
        self.table = table
        self.catalog = catalog
        self.iceberg_conn_id = iceberg_conn_id
        self.ship_engine = ship_engine
        self.extra_application_args = list(application_args or [])
        self._catalog_env: dict[str, str] = {}
        self._catalog_secrets: set[str] = set()
        self._context: Context | None = None
        self.job_result: dict[str, Any] | None = None
        self._declare_table_asset()

    # ---- what subclasses provide ----------------------------------------------------------------------------

    def job_arguments(self, catalog_name: str, context: Context) -> list[str]:
        """The job's own command-line arguments (after the script), from rendered fields."""
        raise NotImplementedError

    def declares_output(self) -> bool:
        """Whether the job writes the table's rows (the table is an outlet) rather than only reading it (inlet)."""
        return False

    def declares_partition_events(self) -> bool:
        """Whether the job's commits are announced per partition on the table's partitioned asset (ingest)."""
        return False

    def lineage_datasets(self, result: dict[str, Any] | None, current_snapshot_id: int | None) -> LineageDatasets:
        """Lineage inputs and outputs before the job (``result`` is ``None``) and after it; default: reads the table."""
        snapshot_id = result.get("snapshot_id") if result else current_snapshot_id
        return [TableVersion(snapshot_id)], []

    # ---- execution ------------------------------------------------------------------------------------------

    # SparkSubmitOperator declares execute -> None; Airflow pushes whatever execute returns as the XCom.
    def execute(self, context: Context) -> dict[str, Any] | None:  # type: ignore[override]
        """Submit the job, then return its final JSON line (the XCom value) or fail with its reason."""
        self.prepare_submission(context)
        try:
            super().execute(context)
        except AirflowException as error:
            raise self._job_failure(error) from error
        self.job_result = self._job_result()
        return self.job_result

    def prepare_submission(self, context: Context) -> None:
        """Set the script, the job's arguments, the catalog environment and the engine zip on this operator."""
        self._context = context
        catalog_hook = self.catalog_hook()
        catalog_name = catalog_hook.catalog_name
        self.application = self.application or str(job_script(self.job))
        self.application_args = [*self.job_arguments(catalog_name, context), *self.extra_application_args]
        self._catalog_env = catalog_hook.spark_job_env()
        self._catalog_secrets = catalog_hook.secrets()
        if self.ship_engine and "spark_jobs" not in (self.py_files or ""):
            self.py_files = ",".join(p for p in (self.py_files, str(engine_zip())) if p)
        self.submitted_hook = None

    def catalog_hook(self) -> IcebergCatalogHook:
        """The catalog hook: the connection's catalog, or pyiceberg's configuration for ``catalog``."""
        return IcebergCatalogHook(iceberg_conn_id=self.iceberg_conn_id, catalog_name=self.catalog)

    def job_hook(self, hook: SparkSubmitHook) -> SparkJobSubmitHook:
        """SparkSubmitOperator's hook as a ``SparkJobSubmitHook`` with the catalog's environment and secrets."""
        job_hook = SparkJobSubmitHook.from_hook(hook)
        job_hook.job_env = dict(self._catalog_env)
        job_hook.secrets = set(self._catalog_secrets)
        context = self._context
        if context is not None:
            job_hook.on_link = lambda link, url: link().store(context, url)
        return job_hook

    def _job_failure(self, error: AirflowException) -> AirflowException:
        """The task's failure: the job's one-line reason when it printed one, else spark-submit's own error."""
        hook = self.submitted_hook
        if not isinstance(hook, SparkJobSubmitHook) or hook.job_output.error_reason is None:
            return error
        reason = f"{self.job} job on {self.table} failed: {hook.job_output.error_reason}"
        if hook.exit_code == EXIT_USAGE:
            return IcebergJobInputError(reason)
        return IcebergJobError(reason)

    def _job_result(self) -> dict[str, Any] | None:
        """The job's result object; ``None`` in cluster deploy mode, where the driver prints on the cluster."""
        hook = self.submitted_hook
        result = hook.job_output.result if isinstance(hook, SparkJobSubmitHook) else None
        if result is not None:
            return result
        if isinstance(hook, SparkJobSubmitHook) and hook.runs_driver_locally:
            tail = "\n".join(hook.job_output.tail)
            raise IcebergJobError(f"{self.job} job on {self.table} printed no result line; output ended with:\n{tail}")
        self.log.warning("%s job ran in cluster deploy mode: its result line is in the driver log", self.job)
        return None

    # ---- assets and lineage ---------------------------------------------------------------------------------

    def _asset_catalog(self) -> str | None:
        return self.catalog or self.iceberg_conn_id

    def _declare_table_asset(self) -> None:
        """Declare the table as an inlet or outlet unless its name is only known at run time (templated).

        What is declared never replaces the user's own Asset for the table (``assets.operator_table_asset``).
        """
        catalog = self._asset_catalog()
        if not catalog or "{{" in str(self.table) or "{{" in catalog:
            return
        timetable = self.dag.timetable if self.has_dag() else None
        scheduled_on = schedule_assets(getattr(timetable, "asset_condition", None))
        declared = [*self.inlets, *self.outlets]
        asset = operator_table_asset(catalog, self.table, declared, scheduled_on, outlet=self.declares_output())
        if asset is not None and self.declares_output():
            self.outlets = [*self.outlets, asset]
        elif asset is not None:
            self.inlets = [*self.inlets, asset]
        if self.declares_partition_events() and task_partition_keys_supported():
            uri = partitions_asset_uri(catalog, self.table)
            partitions = operator_asset(uri, declared, scheduled_on, outlet=True)
            if partitions is not None:
                self.outlets = [*self.outlets, partitions]

    def declared_outlet(self, uri: str) -> Any | None:
        """The task's outlet naming ``uri`` (an Asset or a reference), if it has one."""
        return next((outlet for outlet in self.outlets if declared_uri(outlet) == uri), None)

    def get_openlineage_facets_on_start(self) -> Any:
        """OpenLineage inputs and outputs before the job runs (``None`` without the OpenLineage provider)."""
        return self._openlineage(None)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage inputs and outputs with the snapshot the job read or committed."""
        return self._openlineage(self.job_result)

    def _openlineage(self, result: dict[str, Any] | None) -> Any:
        try:
            description = describe_table(self.catalog_hook(), self.table)
        except Exception as error:  # lineage never fails a task: report the files alone
            self.log.warning("OpenLineage: cannot describe %s (%s: %s)", self.table, type(error).__name__, error)
            description = None
        current = description.current_snapshot_id if description is not None else None
        inputs, outputs = self.lineage_datasets(result, current)
        if result is not None and description is not None:
            try:
                input_facets, output_facets = self.iceberg_facets(result, description)
            except ImportError:  # no OpenLineage client: operator_lineage reports nothing either
                input_facets, output_facets = {}, {}
            inputs = [_with_facets(item, input_facets) for item in inputs]
            outputs = [_with_facets(item, output_facets) for item in outputs]
        return operator_lineage(description, inputs, outputs)

    def iceberg_facets(
        self, result: dict[str, Any], description: TableDescription
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Iceberg's facets of the table as this job's input and as its output, from the job's result line
        (``lineage_facets``); by default the commit report of a job that committed."""
        from airflow_iceberg_provider.lineage_facets import COMMIT_REPORT, commit_report

        report = commit_report(result)
        return {}, ({COMMIT_REPORT: report} if report is not None else {})


def _with_facets(item: LineageItem, facets: dict[str, Any]) -> LineageItem:
    """A table item with ``facets`` added (files are left as they are)."""
    if not facets or not isinstance(item, TableVersion):
        return item
    return dataclasses.replace(item, io_facets={**item.io_facets, **facets})


def optional_text(value: Any) -> str | None:
    """A rendered argument as text, or ``None`` when it was left empty (``None``, ``""`` or a rendered "None")."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text in ("", "None") else text


def is_enabled(value: Any) -> bool:
    """A switch that may be templated: ``True``, or text such as ``"true"`` / ``"1"`` rendered from a param."""
    if isinstance(value, bool):
        return value
    return (optional_text(value) or "").lower() in ("true", "1", "yes", "on")


def flag_arguments(pairs: Sequence[tuple[str, Any]]) -> list[str]:
    """``--flag value`` for every pair whose value is given (see ``optional_text``)."""
    arguments: list[str] = []
    for flag, value in pairs:
        text = optional_text(value)
        if text is not None:
            arguments += [flag, text]
    return arguments


def column_list(columns: str | Sequence[str] | None) -> str | None:
    """Columns as the jobs' comma-separated form (a list or an already joined string)."""
    if columns is None or isinstance(columns, str):
        return optional_text(columns)
    return ",".join(str(column).strip() for column in columns if str(column).strip()) or None
