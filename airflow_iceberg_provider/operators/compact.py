"""Compact a table (RewriteDataFiles rules: bin-pack, sort or z-order): ``spark_jobs/compact.py`` as an operator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_iceberg_provider.operators.spark_job import IcebergSparkJobOperator, flag_arguments, is_enabled

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
    """

    job = "compact"
    template_fields: Sequence[str] = (
        *IcebergSparkJobOperator.template_fields,
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
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if max_commits is not None and not partial_progress:
            raise ValueError(f"IcebergCompactOperator {self.task_id}: max_commits needs partial_progress=True")
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
