"""Compact a table (RewriteDataFiles rules: bin-pack, sort or z-order): ``spark_jobs/compact.py`` as an operator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_iceberg_provider.compaction_report import html_report, size_histogram, text_report
from airflow_iceberg_provider.compaction_stats import CompactionThresholds, FileStats, file_stats
from airflow_iceberg_provider.lineage import LineageDatasets, TableVersion
from airflow_iceberg_provider.links import CompactionReportLink, SparkDriverLogLink, SparkUiLink
from airflow_iceberg_provider.operators._arguments import (
    COMPACT_STRATEGIES,
    REWRITE_JOB_ORDERS,
    check_choice,
    check_integer,
)
from airflow_iceberg_provider.operators.spark_job import (
    IcebergSparkJobOperator,
    flag_arguments,
    is_enabled,
    optional_text,
)
from airflow_iceberg_provider.plugins.urls import plugin_url
from airflow_iceberg_provider.report_store import relative_report_path, task_report_path, write_report
from airflow_iceberg_provider.settings import ProviderSettings
from airflow_iceberg_provider.table_failures import failing_on_damage, reading_naming_damage

if TYPE_CHECKING:
    from airflow.sdk import Context

# operator attribute -> job flag; every option has Iceberg Java's RewriteDataFiles name and default (in the job).
_SIZE_AND_GROUP_OPTIONS = (
    ("target_file_size_bytes", "--target-file-size-bytes"),
    ("min_file_size_bytes", "--min-file-size-bytes"),
    ("max_file_size_bytes", "--max-file-size-bytes"),
    ("min_input_files", "--min-input-files"),
    ("delete_file_threshold", "--delete-file-threshold"),
    ("delete_ratio_threshold", "--delete-ratio-threshold"),
    ("max_file_group_size_bytes", "--max-file-group-size-bytes"),
    ("max_concurrent_file_group_rewrites", "--max-concurrent-file-group-rewrites"),
    ("rewrite_job_order", "--rewrite-job-order"),
    ("output_spec_id", "--output-spec-id"),
)
# sort and z-order only (the job refuses them with bin-pack, as Java does)
_SORT_OPTIONS = (
    ("strategy", "--strategy"),
    ("sort_order", "--sort-order"),
    ("compression_factor", "--compression-factor"),
    ("shuffle_partitions_per_file", "--shuffle-partitions-per-file"),
    ("var_length_contribution", "--var-length-contribution"),
    ("max_output_size", "--max-output-size"),
)


class IcebergCompactOperator(IcebergSparkJobOperator):
    """
    Compact an Iceberg table: rewrite small files and files with many deletes into target-size files in one
    ``replace`` snapshot, or only plan it (``dry_run=True``: the result lists groups and expected outputs, nothing is
    committed). ``strategy="sort"`` sorts each group by ``sort_order`` (default: the table's sort order), or by a
    z-order with ``sort_order="zorder(a, b)"``. Options left ``None`` take the job's defaults, which are Iceberg
    Java's (``rewrite_data_files``).

    The table is declared as an inlet: compaction keeps the rows, so it emits no asset event for data-aware DAGs.

    Table health: before the job the task logs, per partition, the table's files and whether the production
    rules (``IcebergCompactionNeededSensor``'s defaults) call for compaction; after it, a report of data files,
    small files, fragments, delete files, rows and bytes before and after, with a histogram of data file sizes
    before and after. The report goes to the task log as text and, as an HTML page with the histograms as images,
    to ``report_location`` (XCom ``compaction_report``). A report under ``ICEBERG_PROVIDER_REPORT_ROOT`` (the
    default) opens from the task's "Compaction report" link, served by the provider's plugin in the Airflow API
    server; a report elsewhere is linked only when its location is an ``http(s)`` URL.

    :param where: Only compact files that may hold rows matching this filter (pyiceberg syntax). (templated)
    :param target_file_size_bytes: Output file size. (templated)
    :param min_file_size_bytes: Files below this are candidates (default 0.75 x target). (templated)
    :param max_file_size_bytes: Files above this are candidates (default 1.8 x target). (templated)
    :param min_input_files: A group with fewer files is kept only if other rules select it (default 5). (templated)
    :param delete_file_threshold: Files with at least this many deletes are candidates. (templated)
    :param delete_ratio_threshold: Files whose deleted-row ratio reaches this are candidates (0.3). (templated)
    :param max_file_group_size_bytes: Largest group rewritten as one unit. (templated)
    :param max_concurrent_file_group_rewrites: Groups rewritten at once. (templated)
    :param partial_progress: Commit groups as they finish instead of once at the end.
    :param max_commits: With ``partial_progress``, the most commits to make. (templated)
    :param rewrite_all: Rewrite every file the filter selects, whatever its size.
    :param rewrite_job_order: ``bytes-asc``, ``bytes-desc``, ``files-asc``, ``files-desc`` or ``none``. (templated)
    :param output_spec_id: Partition spec of the rewritten files (default: the current one). (templated)
    :param remove_dangling_deletes: Then remove delete files no live data file needs (its own commit).
    :param strategy: ``binpack`` (default) or ``sort``. (templated)
    :param sort_order: ``"c1 desc nulls last, c2"`` or ``"zorder(c1, c2)"``; implies ``sort``. (templated)
    :param compression_factor: Sort/z-order: expected output size over input size. (templated)
    :param shuffle_partitions_per_file: Sort/z-order: sorted ranges per output file. (templated)
    :param var_length_contribution: Z-order: bytes a string or binary column contributes. (templated)
    :param max_output_size: Z-order: bytes of the interleaved value. (templated)
    :param dry_run: Plan only: return the plan, commit nothing. (templated as ``plan_only``, e.g.
        ``"{{ params.dry_run }}"``)
    :param report_location: Where the HTML report is written (a local path or a URI the catalog's storage
        properties reach); default ``<ICEBERG_PROVIDER_REPORT_ROOT>/<dag>/<run>/<task>.html``; ``""``: no HTML
        report. (templated)
    """

    job = "compact"
    operator_extra_links = (SparkUiLink(), SparkDriverLogLink(), CompactionReportLink())
    template_fields: Sequence[str] = (
        *IcebergSparkJobOperator.template_fields,
        "report_location",
        "where",
        *(attribute for attribute, _ in _SIZE_AND_GROUP_OPTIONS),
        *(attribute for attribute, _ in _SORT_OPTIONS),
        "max_commits",
        "plan_only",
    )

    def __init__(
        self,
        *,
        where: str | None = None,
        target_file_size_bytes: int | str | None = None,
        min_file_size_bytes: int | str | None = None,
        max_file_size_bytes: int | str | None = None,
        min_input_files: int | str | None = None,
        delete_file_threshold: int | str | None = None,
        delete_ratio_threshold: float | str | None = None,
        max_file_group_size_bytes: int | str | None = None,
        max_concurrent_file_group_rewrites: int | str | None = None,
        partial_progress: bool = False,
        max_commits: int | str | None = None,
        rewrite_all: bool = False,
        rewrite_job_order: str | None = None,
        output_spec_id: int | str | None = None,
        remove_dangling_deletes: bool = False,
        strategy: str | None = None,
        sort_order: str | None = None,
        compression_factor: float | str | None = None,
        shuffle_partitions_per_file: int | str | None = None,
        var_length_contribution: int | str | None = None,
        max_output_size: int | str | None = None,
        dry_run: bool | str = False,
        report_location: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if max_commits is not None and not partial_progress:
            raise ValueError(f"IcebergCompactOperator {self.task_id}: max_commits needs partial_progress=True")
        owner = f"IcebergCompactOperator {self.task_id}"
        check_choice(owner, "strategy", strategy, COMPACT_STRATEGIES)
        check_choice(owner, "rewrite_job_order", rewrite_job_order, REWRITE_JOB_ORDERS)
        integers = {
            "target_file_size_bytes": target_file_size_bytes,
            "min_file_size_bytes": min_file_size_bytes,
            "max_file_size_bytes": max_file_size_bytes,
            "min_input_files": min_input_files,
            "delete_file_threshold": delete_file_threshold,
            "max_file_group_size_bytes": max_file_group_size_bytes,
            "max_concurrent_file_group_rewrites": max_concurrent_file_group_rewrites,
            "max_commits": max_commits,
            "output_spec_id": output_spec_id,
            "shuffle_partitions_per_file": shuffle_partitions_per_file,
            "var_length_contribution": var_length_contribution,
            "max_output_size": max_output_size,
        }
        for parameter, value in integers.items():
            check_integer(owner, parameter, value)
        self.where = where
        self.target_file_size_bytes = target_file_size_bytes
        self.min_file_size_bytes = min_file_size_bytes
        self.max_file_size_bytes = max_file_size_bytes
        self.min_input_files = min_input_files
        self.delete_file_threshold = delete_file_threshold
        self.delete_ratio_threshold = delete_ratio_threshold
        self.max_file_group_size_bytes = max_file_group_size_bytes
        self.max_concurrent_file_group_rewrites = max_concurrent_file_group_rewrites
        self.partial_progress = partial_progress
        self.max_commits = max_commits
        self.rewrite_all = rewrite_all
        self.rewrite_job_order = rewrite_job_order
        self.output_spec_id = output_spec_id
        self.remove_dangling_deletes = remove_dangling_deletes
        self.strategy = strategy
        self.sort_order = sort_order
        self.compression_factor = compression_factor
        self.shuffle_partitions_per_file = shuffle_partitions_per_file
        self.var_length_contribution = var_length_contribution
        self.max_output_size = max_output_size
        # Not ``self.dry_run``: that name is BaseOperator's method (render templates only).
        self.plan_only = dry_run
        self.report_location = report_location

    def execute(self, context: Context) -> dict[str, Any] | None:  # type: ignore[override]
        """Log the table's health, run the job, then report the files before and after."""
        hook = self.catalog_hook()
        thresholds = CompactionThresholds(target_file_size_bytes=self._target_override()).with_defaults()
        with failing_on_damage():  # damaged metadata: the job would refuse it too (exit 2), so no retries
            table = hook.load_table(self.table)
            before = reading_naming_damage(lambda: file_stats(table, thresholds=thresholds), table)
        explanation = thresholds.explain(before)
        self.log.info("%s before compaction, per partition (the sensor's default rules):", self.table)
        for line in explanation:
            self.log.info("  %s", line)
        result = super().execute(context)
        after = before if is_enabled(self.plan_only) else file_stats(hook.load_table(self.table), thresholds=thresholds)
        self.report(context, before, after, result or {}, explanation)
        return result

    def _target_override(self) -> int | None:
        text = optional_text(self.target_file_size_bytes)
        return int(text) if text is not None else None

    def report(
        self, context: Context, before: FileStats, after: FileStats, result: dict[str, Any], explanation: list[str]
    ) -> dict[str, Any]:
        """Log the report, write its HTML page, store its link; returns what is pushed as ``compaction_report``."""
        for line in text_report(self.table, before, after, result):
            self.log.info("%s", line)
        summary: dict[str, Any] = {
            "location": None,
            "before": {
                **before.as_dict(),
                "histogram": list(size_histogram(before.data_file_sizes, before.target_file_size_bytes).counts),
            },
            "after": {
                **after.as_dict(),
                "histogram": list(size_histogram(after.data_file_sizes, before.target_file_size_bytes).counts),
            },
            "buckets": list(size_histogram((), before.target_file_size_bytes).labels),
        }
        location = self._report_location(context)
        if location:
            page = html_report(self.table, before, after, result, explanation)
            write_report(location, page, self.catalog_hook().storage_properties())
            summary["location"] = location
            self.log.info("Compaction report written to %s", location)
            url = report_url(location)
            if url:
                CompactionReportLink().store(context, url)
                self.log.info("Compaction report in the Airflow UI: the task's 'Compaction report' link (%s)", url)
            else:
                self.log.info(
                    "The Airflow UI links reports under ICEBERG_PROVIDER_REPORT_ROOT (%s) or at http(s) URLs; "
                    "this one is neither, so the task has no report link",
                    ProviderSettings.from_environment().report_root,
                )
        ti = context.get("ti") if context else None
        if ti is not None:
            ti.xcom_push(key="compaction_report", value=summary)
        return summary

    def _report_location(self, context: Context) -> str | None:
        if self.report_location is not None:
            return optional_text(self.report_location)
        ti = context.get("ti") if context else None
        run_id = context.get("run_id") if context else None
        if ti is None or run_id is None:
            return None
        root = ProviderSettings.from_environment().report_root.rstrip("/")
        map_index = getattr(ti, "map_index", None)
        return f"{root}/{task_report_path(ti.dag_id, str(run_id), ti.task_id, -1 if map_index is None else map_index)}"

    def lineage_datasets(self, result: dict[str, Any] | None, current_snapshot_id: int | None) -> LineageDatasets:
        """The table at the starting snapshot -> the table at the ``replace`` snapshot (nothing for a dry run)."""
        starting = result.get("starting_snapshot_id", result.get("snapshot_id")) if result else current_snapshot_id
        if is_enabled(self.plan_only):
            return [TableVersion(starting)], []
        return [TableVersion(starting)], [TableVersion(result.get("snapshot_id") if result else None)]

    def job_arguments(self, catalog_name: str, context: Context) -> list[str]:
        """``--catalog --table`` and the compaction options that are set."""
        arguments = flag_arguments(
            [
                ("--catalog", catalog_name),
                ("--table", self.table),
                ("--where", self.where),
                *((flag, getattr(self, attribute)) for attribute, flag in _SIZE_AND_GROUP_OPTIONS),
                *((flag, getattr(self, attribute)) for attribute, flag in _SORT_OPTIONS),
            ]
        )
        if self.partial_progress:
            arguments.append("--partial-progress")
            arguments += flag_arguments([("--max-commits", self.max_commits)])
        for switch, flag in (
            (self.rewrite_all, "--rewrite-all"),
            (self.remove_dangling_deletes, "--remove-dangling-deletes"),
            (self.plan_only, "--dry-run"),
        ):
            if is_enabled(switch):
                arguments.append(flag)
        return arguments


def report_url(location: str) -> str | None:
    """The link to a report: the plugin's page for one under the report root, an http(s) location as it is."""
    relative = relative_report_path(ProviderSettings.from_environment().report_root, location)
    if relative is not None:
        return plugin_url(f"reports/{relative}")
    return location if location.startswith(("http://", "https://")) else None
