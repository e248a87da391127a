"""count(*) from metadata: the read job's --count and load().count(), exact with every kind of delete."""

from __future__ import annotations

import logging
import uuid

import pyarrow as pa
import pytest

from spark_jobs import read as read_job
from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.planning.row_count import plan_count
from spark_jobs.engine.read.session import open_read_session
from tests.support.rewrite_tables import SCHEMA, SPEC, append, equality_delete_change, position_delete_change

pytestmark = pytest.mark.spark35


@pytest.fixture
def table(testing_catalog):
    """Partitioned by category: six appends of 20 rows alternating a and b (ids 0..119), no deletes."""
    namespace = f"count_{uuid.uuid4().hex[:10]}"
    testing_catalog.create_namespace(namespace)
    created = testing_catalog.create_table(
        f"{namespace}.events", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"}
    )
    for index in range(6):
        ids = list(range(index * 20, (index + 1) * 20))
        append(created, pa.table({"id": pa.array(ids, pa.int64()), "category": ["ab"[index % 2]] * 20}), f"c{index}")
    return created


def _count_job(table) -> dict:
    return read_job.main(["--catalog", "testing", "--table", ".".join(table.name()), "--count"])


def test_without_deletes_the_manifest_list_answers(table):
    result = _count_job(table)
    assert result["count"] == 120
    counters = result["counters"]
    assert counters["count_from_metadata"] is True and counters["count_source"] == "manifest-list"
    assert (counters["data_files_counted_from_metadata"], counters["manifests_read_for_count"]) == (6, 0)


def test_files_with_deletes_are_scanned_and_the_rest_counted_from_entries(table):
    commit_change(table, position_delete_change(table, {3, 4}, "p"))  # both in the first data file
    commit_change(table, equality_delete_change(table, {"b": [25]}, "e"))  # id 25: only file 2 (20..39) may hold it
    rows, counters = read_job.count(None, "testing", ".".join(table.name()))
    assert rows == 117 == open_read_session("testing", ".".join(table.name())).to_arrow().num_rows
    assert counters["count_from_metadata"] is False and counters["count_source"] == "manifest-entries"
    # scanned: the file with the position deletes, and the one file the equality delete's bounds may touch
    assert (counters["data_files_scanned_for_count"], counters["data_files_counted_from_metadata"]) == (2, 4)


@pytest.mark.parametrize("corpus_table", ["mor_v2_pos", "v2_eq_deletes_part", "mor_v3_dv"])
def test_counts_of_java_written_tables_with_deletes_are_exact(conformance_catalog, corpus_table):
    identifier = f"corpus.{corpus_table}"
    rows, counters = read_job.count(None, conformance_catalog, identifier)
    assert rows == open_read_session(conformance_catalog, identifier).to_arrow().num_rows
    assert counters["count_from_metadata"] is False


def test_a_time_travel_count_uses_that_snapshots_manifests(table):
    first = table.history()[0].snapshot_id
    rows, counters = read_job.count(None, "testing", ".".join(table.name()), snapshot_id=first)
    assert rows == 20 and counters["count_from_metadata"]
    assert plan_count(table, None).metadata_rows == 0


@pytest.mark.spark
def test_load_count_is_answered_from_metadata_and_with_deletes_by_a_scan(spark, table, caplog):
    identifier = ".".join(table.name())
    with caplog.at_level(logging.INFO, logger="spark_jobs.read"):
        assert read_job.load(spark, "testing", identifier).count() == 120
    assert "answered from the manifest-list" in caplog.text
    commit_change(table, position_delete_change(table, {3}, "p"))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="spark_jobs.read"):
        assert read_job.load(spark, "testing", identifier).count() == 119
    assert "by scanning 1 data files with deletes" in caplog.text
    assert read_job.load(spark, "testing", identifier, row_filter="id < 10").count() == 9  # a filter: Spark counts
