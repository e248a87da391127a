"""The options of a data file rewrite, with Iceberg Java's names, defaults and checks (RewriteDataFiles).

Defaults, as Java's ``SizeBasedFileRewritePlanner``, ``BinPackRewriteFilePlanner`` and ``RewriteDataFilesSparkAction``
define them:

1. ``target-file-size-bytes``: the table property ``write.target-file-size-bytes``, else 512 MiB.
2. ``min-file-size-bytes``: ``(long) (target * 0.75)``; ``max-file-size-bytes``: ``(long) (target * 1.8)``; both
   derived from the target actually used, so overriding only the target moves them too.
3. ``min-input-files`` 5, ``delete-file-threshold`` Integer.MAX_VALUE, ``delete-ratio-threshold`` 0.3,
   ``max-file-group-size-bytes`` 100 GiB, ``rewrite-all`` false.
4. ``max-concurrent-file-group-rewrites`` 5, ``partial-progress.enabled`` false, ``partial-progress.max-commits`` 10.
5. ``rewrite-job-order`` none (``bytes-asc|bytes-desc|files-asc|files-desc|none``), ``output-spec-id`` the table's
   current spec (checked against the table by the planner), ``remove-dangling-deletes`` false.
6. ``compression-factor`` 1.0: the sort and z-order planner's (``SparkShufflingDataRewritePlanner``) estimate of how
   the output compresses against the input; the expected output file count is computed on ``input * factor``.

A value that breaks one of Java's preconditions is a ``UserInputError`` with Java's wording of the rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.table.properties import int_property

TARGET_FILE_SIZE_PROPERTY = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024
MIN_FILE_SIZE_DEFAULT_RATIO = 0.75
MAX_FILE_SIZE_DEFAULT_RATIO = 1.80
DEFAULT_MIN_INPUT_FILES = 5
DEFAULT_DELETE_FILE_THRESHOLD = 2**31 - 1  # Java's Integer.MAX_VALUE: off
DEFAULT_DELETE_RATIO_THRESHOLD = 0.3
DEFAULT_MAX_FILE_GROUP_SIZE = 100 * 1024 * 1024 * 1024
DEFAULT_MAX_CONCURRENT_FILE_GROUP_REWRITES = 5
DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS = 10
REWRITE_JOB_ORDERS = ("bytes-asc", "bytes-desc", "files-asc", "files-desc", "none")
DEFAULT_REWRITE_JOB_ORDER = "none"
DEFAULT_COMPRESSION_FACTOR = 1.0


@dataclass(frozen=True)
class RewriteOptions:
    """Resolved, checked options of one rewrite; field names are Java's option names in snake case."""

    target_file_size_bytes: int
    min_file_size_bytes: int
    max_file_size_bytes: int
    min_input_files: int = DEFAULT_MIN_INPUT_FILES
    delete_file_threshold: int = DEFAULT_DELETE_FILE_THRESHOLD
    delete_ratio_threshold: float = DEFAULT_DELETE_RATIO_THRESHOLD
    max_file_group_size_bytes: int = DEFAULT_MAX_FILE_GROUP_SIZE
    max_concurrent_file_group_rewrites: int = DEFAULT_MAX_CONCURRENT_FILE_GROUP_REWRITES
    partial_progress_enabled: bool = False
    partial_progress_max_commits: int = DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS
    rewrite_all: bool = False
    rewrite_job_order: str = DEFAULT_REWRITE_JOB_ORDER
    output_spec_id: int | None = None  # None: the table's current spec
    remove_dangling_deletes: bool = False
    compression_factor: float = DEFAULT_COMPRESSION_FACTOR

    def __post_init__(self) -> None:
        check_sizes(self.target_file_size_bytes, self.min_file_size_bytes, self.max_file_size_bytes)
        require_option(self.min_input_files > 0, "min-input-files", self.min_input_files, "must be > 0")
        require_option(
            self.delete_file_threshold >= 0, "delete-file-threshold", self.delete_file_threshold, "must be >= 0"
        )
        require_option(
            self.delete_ratio_threshold > 0, "delete-ratio-threshold", self.delete_ratio_threshold, "must be > 0"
        )
        require_option(
            self.delete_ratio_threshold <= 1, "delete-ratio-threshold", self.delete_ratio_threshold, "must be <= 1"
        )
        group_size = self.max_file_group_size_bytes
        require_option(group_size > 0, "max-file-group-size-bytes", group_size, "must be > 0")
        require_option(
            self.max_concurrent_file_group_rewrites >= 1,
            "max-concurrent-file-group-rewrites",
            self.max_concurrent_file_group_rewrites,
            "must be positive",
        )
        check_partial_progress(self.partial_progress_enabled, self.partial_progress_max_commits)
        check_rewrite_job_order(self.rewrite_job_order)
        require_option(self.compression_factor > 0, "compression-factor", self.compression_factor, "must be > 0")

    @classmethod
    def resolve(
        cls,
        table_properties: Mapping[str, str],
        *,
        target_file_size_bytes: int | None = None,
        min_file_size_bytes: int | None = None,
        max_file_size_bytes: int | None = None,
        **others: int | float | bool | None,
    ) -> RewriteOptions:
        """Options from explicit values (None: not given), the table's target-size property and Java's defaults."""
        target = target_file_size_bytes if target_file_size_bytes is not None else _table_target(table_properties)
        minimum = min_file_size_bytes if min_file_size_bytes is not None else int(target * MIN_FILE_SIZE_DEFAULT_RATIO)
        maximum = max_file_size_bytes if max_file_size_bytes is not None else int(target * MAX_FILE_SIZE_DEFAULT_RATIO)
        given = {name: value for name, value in others.items() if value is not None}
        return cls(target, minimum, maximum, **given)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, int | float | bool | str | None]:
        """The options under Java's option names, for the job's JSON line."""
        return {_java_name(name): value for name, value in asdict(self).items()}


def _java_name(field_name: str) -> str:
    """A field's Java option name: ``partial_progress_max_commits`` -> ``partial-progress.max-commits``."""
    if field_name.startswith("partial_progress_"):
        return "partial-progress." + field_name.removeprefix("partial_progress_").replace("_", "-")
    return field_name.replace("_", "-")


def _table_target(table_properties: Mapping[str, str]) -> int:
    """The table's write.target-file-size-bytes, or Java's default of 512 MiB."""
    return int_property(
        table_properties, TARGET_FILE_SIZE_PROPERTY, DEFAULT_TARGET_FILE_SIZE, expected="an integer number of bytes"
    )


def check_sizes(target: int, minimum: int, maximum: int) -> None:
    """Java's size preconditions: target > 0, min >= 0, min < target < max."""
    require_option(target > 0, "target-file-size-bytes", target, "must be > 0")
    require_option(minimum >= 0, "min-file-size-bytes", minimum, "must be >= 0")
    if not target > minimum:
        raise UserInputError(
            f"'target-file-size-bytes' ({target}) must be > 'min-file-size-bytes' ({minimum}), all new files will be "
            "smaller than the min threshold"
        )
    if not target < maximum:
        raise UserInputError(
            f"'target-file-size-bytes' ({target}) must be < 'max-file-size-bytes' ({maximum}), all new files will be "
            "larger than the max threshold"
        )


def check_partial_progress(enabled: bool, max_commits: int) -> None:
    """Java's rule for ``partial-progress.max-commits``, shared by every rewrite that commits in batches."""
    require_option(
        not enabled or max_commits > 0,
        "partial-progress.max-commits",
        max_commits,
        "must be positive when partial-progress.enabled is true",
    )


def check_rewrite_job_order(order: str) -> None:
    """A ``rewrite-job-order`` must be one of Java's names."""
    if order not in REWRITE_JOB_ORDERS:
        raise UserInputError(f"Invalid rewrite job order name: {order} (one of {', '.join(REWRITE_JOB_ORDERS)})")


def require_option(condition: bool, option: str, value: object, rule: str) -> None:
    """Raise a UserInputError naming the option, its value and the rule it breaks."""
    if not condition:
        raise UserInputError(f"'{option}' is set to {value} but {rule}")
