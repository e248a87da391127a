"""Bin-pack small files with deletes folded in (RewriteDataFiles rules): ``spark_jobs/compact.py`` as an operator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_iceberg_provider.operators.spark_job import IcebergSparkJobOperator, flag_arguments

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
)


class IcebergCompactOperator(IcebergSparkJobOperator):
    """
    Compact an Iceberg table: rewrite small files and files with many deletes into target-size files in one
    ``replace`` snapshot, or only plan it (``dry_run=True``: the result lists groups and expected outputs, nothing is
    committed). Options left ``None`` take the job's defaults, which are Iceberg Java's.

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
    :param dry_run: Plan only: return the plan, commit nothing.
    """

    job = "compact"
    template_fields: Sequence[str] = (
        *IcebergSparkJobOperator.template_fields,
        "where",
        *(attribute for attribute, _ in _SIZE_AND_GROUP_OPTIONS),
        "max_commits",
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
        dry_run: bool = False,
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
            ]
        )
        if self.partial_progress:
            arguments.append("--partial-progress")
            arguments += flag_arguments([("--max-commits", self.max_commits)])
        if self.plan_only:
            arguments.append("--dry-run")
        return arguments
