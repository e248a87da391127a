"""Spark filters become pyiceberg expressions only where both engines agree exactly; the rest stay with Spark."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyiceberg.expressions import (
    EqualTo,
    GreaterThan,
    In,
    IsNull,
    LessThanOrEqual,
    NotEqualTo,
    NotNull,
    StartsWith,
)
from pyspark.sql import datasource as spark_ds

from spark_jobs.spark.filters import spark_filter_to_iceberg

# The Python data source API (pyspark.sql.datasource) is Spark 4's: never collected on Spark 3.5 (conftest).
pytestmark = pytest.mark.spark4


@pytest.mark.parametrize(
    ("spark_filter", "expected"),
    [
        (spark_ds.EqualTo(("id",), 5), EqualTo("id", 5)),
        (spark_ds.GreaterThan(("name",), "m"), GreaterThan("name", "m")),
        (spark_ds.LessThanOrEqual(("day",), dt.date(2024, 1, 2)), LessThanOrEqual("day", dt.date(2024, 1, 2))),
        (spark_ds.In(("id",), (1, 2, 3)), In("id", (1, 2, 3))),
        (spark_ds.IsNull(("id",)), IsNull("id")),
        (spark_ds.IsNotNull(("id",)), NotNull("id")),
        (spark_ds.EqualNullSafe(("id",), None), IsNull("id")),
        (spark_ds.StringStartsWith(("name",), "ab"), StartsWith("name", "ab")),
        (spark_ds.Not(spark_ds.EqualTo(("id",), 5)), NotEqualTo("id", 5)),
        (spark_ds.Not(spark_ds.IsNull(("id",))), NotNull("id")),
    ],
)
def test_exact_filters_translate(spark_filter, expected) -> None:
    assert spark_filter_to_iceberg(spark_filter) == expected


@pytest.mark.parametrize(
    "spark_filter",
    [
        spark_ds.EqualTo(("score",), 1.5),  # NaN ordering and equality differ between Spark and Iceberg
        spark_ds.GreaterThan(("ts",), dt.datetime(2024, 1, 1)),  # meaning depends on the session time zone
        spark_ds.EqualTo(("amount",), Decimal("1.5")),  # scale must match the column's exactly
        spark_ds.EqualTo(("s", "x"), 1),  # nested column
        spark_ds.EqualTo(("a.b",), 1),  # a dot would be read as a path
        spark_ds.In(("id",), (1, None)),
        spark_ds.StringEndsWith(("name",), "z"),
        spark_ds.StringContains(("name",), "z"),
        spark_ds.Not(spark_ds.In(("id",), (1, 2))),
        spark_ds.Not(spark_ds.StringStartsWith(("name",), "a")),
    ],
)
def test_inexact_filters_stay_with_spark(spark_filter) -> None:
    assert spark_filter_to_iceberg(spark_filter) is None
