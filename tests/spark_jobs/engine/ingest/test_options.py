"""Ingest options: the combinations that cannot work are refused, naming the option."""

from __future__ import annotations

import pytest

from spark_jobs.engine.ingest.options import IngestOptions, check_options
from spark_jobs.engine.shared.errors import UserInputError


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (IngestOptions(mode="merge"), "--mode must be one of append, overwrite, upsert, delete, got 'merge'"),
        (IngestOptions(mode="upsert", key=("id",), delete_mode="soft"), "--delete-mode must be one of"),
        (IngestOptions(mode="delete"), "--mode delete needs --key"),
        (IngestOptions(mode="append", overwrite_filter="id > 1"), "--overwrite-filter applies to --mode overwrite"),
        (IngestOptions(partition_by="day(ts)"), "--partition-by and --sort-by apply to a table made by"),
        (IngestOptions(create_if_missing=True, format_version=1), "--format-version must be 2 or 3, got 1"),
    ],
)
def test_options_that_cannot_work_are_refused(options: IngestOptions, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        check_options(options)


def test_options_that_work_pass_and_say_whether_they_delete_by_key() -> None:
    for options in (
        IngestOptions(),
        IngestOptions(mode="overwrite", overwrite_filter="id > 1"),
        IngestOptions(mode="upsert", key=("id",), delete_mode="equality"),
        IngestOptions(create_if_missing=True, partition_by="bucket(4, id)", sort_by="id desc"),
    ):
        check_options(options)
    assert IngestOptions(mode="delete", key=("id",)).deletes_by_key and not IngestOptions().deletes_by_key
