"""The engine's exceptions: what is the caller's input (exit code 2) and what is not."""

from __future__ import annotations

import pytest

from spark_jobs.engine.shared.errors import (
    CorruptFileError,
    EngineError,
    InvalidFilterError,
    SnapshotNotFoundError,
    TableNotFoundError,
    UnsupportedFeatureError,
    UserInputError,
)


@pytest.mark.parametrize("error", [TableNotFoundError, SnapshotNotFoundError, InvalidFilterError, CorruptFileError])
def test_unknown_tables_snapshots_bad_filters_and_damaged_files_are_the_callers_input(error: type[Exception]) -> None:
    """Exit 2, no retry: a retry cannot repair a missing or damaged file (a storage failure stays retryable)."""
    assert issubclass(error, UserInputError) and issubclass(error, EngineError)


def test_unsupported_features_are_not_input_errors() -> None:
    assert issubclass(UnsupportedFeatureError, EngineError) and not issubclass(UnsupportedFeatureError, UserInputError)
