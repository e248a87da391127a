"""Aggregates through the read job: ``read.aggregate`` equals Spark's own aggregate over ``load``; ``--aggregate``.

Each case computes the same expressions with Spark SQL over ``read.load(...)`` (the rows Java's conformance results
pin) and with ``read.aggregate`` (one Spark stage folding each task in pyarrow), on Java-written tables with position
deletes, equality deletes and deletion vectors, at a time-travel snapshot, with a filter, and over no rows.
"""

from __future__ import annotations

import math

import pytest

from spark_jobs import read as read_job
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.job_contract import missing_result_fields
from spark_jobs.job_support import EXIT_USAGE, run_job
from tests.support.conformance import load_queries

pytestmark = pytest.mark.spark

QUERIES = {query.id: query for query in load_queries()}
EVENT_AGGREGATES = [
    "count(*)",
    "count(qty)",
    "sum(qty)",
    "sum(id)",
    "sum(amount)",
    "sum(score)",
    "avg(qty)",
    "avg(score)",
    "min(ts)",
    "max(ts)",
    "min(category)",
    "max(note)",
    "min(amount)",
    "max(score)",
    "min(flag)",
    "max(flag)",
]
TYPE_AGGREGATES = [
    "count(*)",
    "sum(i)",
    "sum(l)",
    "sum(f)",
    "sum(d)",
    "sum(amount_dec)",
    "avg(l)",
    "avg(f)",
    "min(s)",
    "max(s)",
    "min(dt)",
    "max(dt)",
    "min(ts)",
    "max(ts)",
    "min(ts_ntz)",
    "max(ts_ntz)",
    "min(b)",
    "max(b)",
    "min(bin)",
    "max(bin)",
    "min(d)",
    "max(d)",
    "min(f)",
    "max(f)",
    "count(st)",
    "count(m)",
]
CASES = [
    ("corpus.mor_v2_pos-full_scan", EVENT_AGGREGATES, None),
    ("corpus.v2_eq_deletes-full_scan", EVENT_AGGREGATES, None),
    ("corpus.mor_v3_dv-filter", EVENT_AGGREGATES, None),
    ("corpus.mor_v2_pos-as_of_timestamp_delete1", EVENT_AGGREGATES, None),
    ("corpus.v2_eq_deletes-snapshot_eqdel_id", EVENT_AGGREGATES, None),
    ("corpus.types-full_scan", TYPE_AGGREGATES, None),
    ("corpus.types-filter", TYPE_AGGREGATES, None),
    ("corpus.mor_v3_dv-full_scan", EVENT_AGGREGATES, "id < 0"),  # no rows
]


def _same(ours, spark_value) -> bool:
    """Equal values; doubles up to summation order (both NaN counts as equal)."""
    if isinstance(spark_value, float) and isinstance(ours, float):
        return (math.isnan(ours) and math.isnan(spark_value)) or math.isclose(ours, spark_value, rel_tol=1e-12)
    if isinstance(spark_value, bytearray | bytes):
        return bytes(spark_value) == ours
    return ours == spark_value


@pytest.mark.parametrize(("query_id", "aggregates", "row_filter"), CASES, ids=[case[0] for case in CASES])
def test_aggregates_equal_sparks_aggregate_over_load(spark, conformance_catalog, query_id, aggregates, row_filter):
    query = QUERIES[query_id]
    snapshot = {"snapshot_id": query.snapshot_id, "as_of": query.as_of_timestamp_ms}
    where = row_filter or query.where
    frame = read_job.load(spark, "conformance", query.table, row_filter=where, **snapshot)
    row = frame.selectExpr(*aggregates).toArrow().to_pylist()[0]  # Arrow: timestamps aware, in UTC
    expected = dict(zip(aggregates, row.values(), strict=True))  # Spark names count(*) "count(1)"
    values, counters = read_job.aggregate(spark, "conformance", query.table, aggregates, row_filter=where, **snapshot)
    assert list(values) == aggregates
    differing = {
        label: (values[label], expected[label]) for label in aggregates if not _same(values[label], expected[label])
    }
    assert not differing
    assert values["count(*)"] == (0 if row_filter else query.row_count)  # Java's row count for the query
    assert counters["aggregates_from_metadata"] is False and counters["rows_out"] == values["count(*)"]
    if row_filter:
        assert values["sum(qty)"] is None and values["min(ts)"] is None and values["count(qty)"] == 0


def test_count_star_alone_comes_from_the_manifests_where_no_delete_applies(spark, conformance_catalog):
    values, counters = read_job.aggregate(spark, "conformance", "corpus.v1_cow", "count(*)")
    assert values == {"count(*)": QUERIES["corpus.v1_cow-full_scan"].row_count}
    assert counters["aggregates_from_metadata"] is True and counters["count_source"] == "manifest-list"
    assert counters["rows_aggregated"] == values["count(*)"]
    values, counters = read_job.aggregate(spark, "conformance", "corpus.mor_v3_dv", ["count(*)"])
    assert values == {"count(*)": QUERIES["corpus.mor_v3_dv-full_scan"].row_count}
    assert counters["aggregates_from_metadata"] is False and counters["aggregate_tasks"] >= 1
    assert counters["rows_aggregated"] == values["count(*)"]


def test_the_read_job_prints_json_safe_aggregates(spark, conformance_catalog):
    query = QUERIES["corpus.mor_v2_pos-as_of_timestamp_delete1"]
    argv = ["--catalog", "conformance", "--table", query.table, "--as-of", str(query.as_of_timestamp_ms)]
    result = read_job.main([*argv, "--aggregate", "count(*), sum(amount), max(ts), max(score)", "--filter", "qty > 5"])
    expected, _ = read_job.aggregate(
        spark,
        "conformance",
        query.table,
        "count(*),sum(amount),max(ts),max(score)",
        row_filter="qty > 5",
        as_of=query.as_of_timestamp_ms,
    )
    assert result["snapshot_id"] == query.resolves_to_snapshot_id
    assert result["aggregates"] == {
        "count(*)": expected["count(*)"],
        "sum(amount)": str(expected["sum(amount)"]),
        "max(ts)": expected["max(ts)"].isoformat(),
        "max(score)": expected["max(score)"],
    }
    assert result["rows_out"] == result["counters"]["rows_out"] == expected["count(*)"] > 0
    assert missing_result_fields(result) == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--aggregate", "sum(category)"], "column 'category' is string, which sum does not support"),
        (["--aggregate", "sum(nope)"], "has no column 'nope'"),
        (["--aggregate", "avg(amount)"], "avg of decimals"),
        (["--aggregate", "count(*)", "--output", "/tmp/x"], "--aggregate takes no --output"),
        (["--aggregate", "total(id)"], "unknown function 'total'"),
    ],
)
def test_bad_aggregates_exit_2_naming_the_aggregate_and_column(conformance_catalog, capsys, extra, message):
    argv = ["--catalog", "conformance", "--table", "corpus.mor_v2_pos", *extra]
    with pytest.raises(UserInputError, match=message):
        read_job.main(argv)
    assert run_job("read", lambda: read_job.main(argv)) == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_the_read_job_answers_count_star_of_a_table_without_deletes_from_the_manifests(conformance_catalog):
    argv = ["--catalog", "conformance", "--table", "corpus.v1_cow", "--aggregate", "count(*)"]
    result = read_job.main(argv)
    rows = QUERIES["corpus.v1_cow-full_scan"].row_count
    assert result["aggregates"] == {"count(*)": rows} and result["rows_out"] == rows
    assert result["counters"]["aggregates_from_metadata"] is True


@pytest.mark.parametrize(
    ("table", "aggregates", "row_filter"),
    [
        ("corpus.types", TYPE_AGGREGATES, None),
        ("corpus.v2_eq_deletes", EVENT_AGGREGATES, "qty > 2"),
        ("corpus.mor_v3_dv", EVENT_AGGREGATES, None),
        ("corpus.mor_v2_pos", ["count(*)"], None),  # count(*) alone, with deletes: the scan of the deleted files
    ],
)
def test_the_read_job_folds_in_the_driver_what_it_folds_on_spark(
    spark, conformance_catalog, table, aggregates, row_filter
):
    argv = ["--catalog", "conformance", "--table", table, "--aggregate", ",".join(aggregates)]
    argv += ["--filter", row_filter] if row_filter else []
    on_spark = read_job.main([*argv, "--driver-max-bytes", "0"])
    in_driver = read_job.main(argv)
    assert (on_spark["ran_in"], in_driver["ran_in"]) == ("spark", "driver")
    assert in_driver["rows_out"] == on_spark["rows_out"] > 0
    assert in_driver["aggregates"].keys() == on_spark["aggregates"].keys()
    for label, value in on_spark["aggregates"].items():
        assert _same(in_driver["aggregates"][label], value), label


def test_the_read_job_counts_in_the_driver_what_it_counts_on_spark(spark, conformance_catalog):
    argv = ["--catalog", "conformance", "--table", "corpus.v2_eq_deletes", "--count"]
    on_spark = read_job.main([*argv, "--driver-max-bytes", "0"])
    in_driver = read_job.main(argv)
    assert (on_spark["ran_in"], in_driver["ran_in"]) == ("spark", "driver")
    assert in_driver["count"] == on_spark["count"] == QUERIES["corpus.v2_eq_deletes-full_scan"].row_count
    assert in_driver["counters"]["rows_counted_by_scan"] == on_spark["counters"]["rows_counted_by_scan"] > 0
