"""Parsing --partition-by and --sort-by."""

from __future__ import annotations

import pytest
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.write.table_layout import parse_partition_by, parse_sort_by


def test_partition_terms_parse_to_transforms() -> None:
    assert parse_partition_by("day(ts), bucket(16, id),truncate(4,name), region, identity(kind)") == [
        ("ts", DayTransform()),
        ("id", BucketTransform(16)),
        ("name", TruncateTransform(4)),
        ("region", IdentityTransform()),
        ("kind", IdentityTransform()),
    ]


@pytest.mark.parametrize("text", ["bucket(id)", "day(ts, 2)", "week(ts)", "bucket(0, id)", "a b"])
def test_bad_partition_terms_are_user_errors(text: str) -> None:
    with pytest.raises(UserInputError, match="--partition-by term"):
        parse_partition_by(text)


def test_sort_terms() -> None:
    assert parse_sort_by("ts desc, id") == [("ts", False), ("id", True)]
    with pytest.raises(UserInputError, match="--sort-by term"):
        parse_sort_by("ts sideways")
