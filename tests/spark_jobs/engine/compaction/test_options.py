"""Rewrite options: Java's defaults, the table's target size, and Java's checks with the option names."""

import pytest

from spark_jobs.engine.compaction.options import RewriteOptions
from spark_jobs.engine.shared.errors import UserInputError

MIB = 1024 * 1024


def test_java_defaults_without_table_property():
    options = RewriteOptions.resolve({})
    assert options.as_dict() == {
        "target-file-size-bytes": 512 * MIB,
        "min-file-size-bytes": int(512 * MIB * 0.75),
        "max-file-size-bytes": int(512 * MIB * 1.8),
        "min-input-files": 5,
        "delete-file-threshold": 2147483647,
        "delete-ratio-threshold": 0.3,
        "max-file-group-size-bytes": 100 * 1024 * MIB,
        "max-concurrent-file-group-rewrites": 5,
        "partial-progress.enabled": False,
        "partial-progress.max-commits": 10,
        "rewrite-all": False,
        "rewrite-job-order": "none",
        "output-spec-id": None,
        "remove-dangling-deletes": False,
        "compression-factor": 1.0,
    }


def test_target_from_table_property_and_min_max_follow_the_target_used():
    options = RewriteOptions.resolve({"write.target-file-size-bytes": "1000"})
    assert (options.target_file_size_bytes, options.min_file_size_bytes, options.max_file_size_bytes) == (
        1000,
        750,
        1800,
    )
    overridden = RewriteOptions.resolve({"write.target-file-size-bytes": "1000"}, target_file_size_bytes=333)
    assert (overridden.min_file_size_bytes, overridden.max_file_size_bytes) == (249, 599)  # truncated as Java's (long)


def test_explicit_values_win_and_none_means_default():
    options = RewriteOptions.resolve({}, min_input_files=2, delete_ratio_threshold=None, partial_progress_enabled=True)
    assert options.min_input_files == 2
    assert options.delete_ratio_threshold == 0.3
    assert options.partial_progress_enabled


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"target_file_size_bytes": 0}, "'target-file-size-bytes' is set to 0 but must be > 0"),
        ({"target_file_size_bytes": 100, "min_file_size_bytes": 100}, "must be > 'min-file-size-bytes' \\(100\\)"),
        ({"target_file_size_bytes": 100, "max_file_size_bytes": 90}, "must be < 'max-file-size-bytes' \\(90\\)"),
        ({"min_file_size_bytes": -1}, "'min-file-size-bytes' is set to -1 but must be >= 0"),
        ({"min_input_files": 0}, "'min-input-files' is set to 0 but must be > 0"),
        ({"delete_file_threshold": -1}, "'delete-file-threshold' is set to -1"),
        ({"delete_ratio_threshold": 0.0}, "'delete-ratio-threshold' is set to 0.0 but must be > 0"),
        ({"delete_ratio_threshold": 1.5}, "must be <= 1"),
        ({"max_file_group_size_bytes": 0}, "'max-file-group-size-bytes' is set to 0"),
        ({"max_concurrent_file_group_rewrites": 0}, "'max-concurrent-file-group-rewrites' is set to 0"),
        ({"rewrite_job_order": "size-asc"}, "Invalid rewrite job order name: size-asc"),
        ({"compression_factor": 0.0}, "'compression-factor' is set to 0.0 but must be > 0"),
        (
            {"partial_progress_enabled": True, "partial_progress_max_commits": 0},
            "must be positive when partial-progress.enabled is true",
        ),
    ],
)
def test_java_preconditions_name_the_option(overrides: dict, message: str):
    with pytest.raises(UserInputError, match=message):
        RewriteOptions.resolve({}, **overrides)


def test_a_bad_table_property_names_it():
    with pytest.raises(UserInputError, match=r"write\.target-file-size-bytes must be an integer"):
        RewriteOptions.resolve({"write.target-file-size-bytes": "big"})
