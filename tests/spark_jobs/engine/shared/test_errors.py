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


@pytest.mark.parametrize("error", [TableNotFoundError, SnapshotNotFoundError, InvalidFilterError])
def test_unknown_tables_snapshots_and_bad_filters_are_the_callers_input(error: type[Exception]) -> None:
    assert issubclass(error, UserInputError) and issubclass(error, EngineError)


@pytest.mark.parametrize("error", [CorruptFileError, UnsupportedFeatureError])
def test_corrupt_files_and_unsupported_features_are_not_input_errors(error: type[Exception]) -> None:
    assert issubclass(error, EngineError) and not issubclass(error, UserInputError)
