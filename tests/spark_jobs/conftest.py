"""The Spark side's tests run on four Spark lines: the project's Spark 4.2 (every test), Spark 3.5 (the tests marked
``spark35``) and Spark 4.1 and 4.3 (``SPARK_LINE_TESTS``, marked ``spark_lines`` here), the others run by
``scripts/test.sh`` in the Java environments' virtualenvs (docs/development.md "Tests").

On Spark 3.5:
1. Modules of the Python data source import ``pyspark.sql.datasource``, which Spark 4 introduced: they are not
   collected (their tests are marked ``spark4``).
2. ``SPARK35_LEFT_OUT``: tests of modules marked ``spark35`` that the Spark 3.5 pass leaves out to keep CI short,
   each because a cheaper test of the same pass runs the same Spark code; they are deselected, and pytest's summary
   counts them.

On Spark 4.1 and 4.3, ``-m spark_lines`` runs ``SPARK_LINE_TESTS``: one test per job and per Spark-facing piece
whose code differs between Spark versions (their DataFrame reads, Arrow hand-over and types, spark-submit). A name
in it that no longer matches a collected test fails that run, so the set cannot shrink unnoticed.
"""

from __future__ import annotations

from pathlib import Path

import pyspark
import pytest

SPARK4_ONLY_MODULES = ["spark/test_source.py", "spark/test_filters.py"]
ON_SPARK_35 = int(pyspark.__version__.split(".")[0]) < 4

# node id under tests/spark_jobs/ -> the tests of the Spark 3.5 pass that run the same Spark code
SPARK35_LEFT_OUT = {
    "test_read.py::test_read_job_writes_javas_rows[corpus.small_files-full_scan-spark]": (
        "the small-files table is read on Spark 3.5 by its compaction (test_compact.py)"
    ),
    "test_compact.py::test_rewrite_of_a_java_written_v3_table_folds_its_deletion_vectors": (
        "deletion vectors: spark/test_ingest_v3.py and the read of corpus.mor_v3_dv"
    ),
    "spark/test_ingest.py::test_position_mode_upsert_and_delete_round_trip[None]": ("the partitioned variant runs"),
    "spark/test_ingest.py::test_equality_mode_upsert_and_delete_round_trip[bucket(4,id)]": ("the day(ts) variant runs"),
    "spark/test_ingest.py::test_an_upsert_losing_to_a_concurrent_append_fails_and_leaves_no_file": (
        "a lost race is the engine committer's, the same on both lines"
    ),
    "spark/test_ingest_v3.py::test_a_compaction_losing_to_a_v3_upsert_fails_and_keeps_the_upsert": (
        "a lost race is the engine committer's, the same on both lines"
    ),
    "spark/test_ingest_v3.py::test_a_v3_upsert_losing_to_a_compaction_fails_and_writes_nothing": (
        "a lost race is the engine committer's, the same on both lines"
    ),
    "test_ingest.py::test_spark_submit_bad_input_exits_2_with_one_line_and_commits_nothing": (
        "bad input: test_bad_inputs.py; spark-submit of the ingest job: the create/upsert/retry test"
    ),
    "test_maintain_rewrites.py::test_rewrite_manifests_of_a_v3_table_keeps_row_ids_and_deletion_vectors": (
        "rewrite-manifests: test_rewrite_manifests_dry_run_then_run"
    ),
}

# node id (or module) under tests/spark_jobs/ -> what it shows on Spark 4.1 and 4.3
SPARK_LINE_TESTS = {
    "test_read.py::test_spark_submit_read_prints_counters_as_its_last_line": "the read job through spark-submit",
    "test_read.py::test_load_reads_the_snapshot_current_when_it_was_called": "load's DataFrame (the data source)",
    "test_read_count.py::test_load_count_is_answered_from_metadata_and_with_deletes_by_a_scan": "count() of load",
    "spark/test_ingest_v3.py::test_a_v3_upsert_keeps_the_row_ids_of_the_rows_it_replaces[by-day]": (
        "upsert on format v3: deletion vectors and row lineage"
    ),
    "spark/test_ingest_v3.py::test_rows_lacking_a_column_get_its_write_default_and_the_defaults_stay_as_written": (
        "write defaults"
    ),
    "spark/test_ingest_v3.py::test_variant_geometry_and_nanosecond_columns_round_trip_as_the_running_sparks_types": (
        "format v3's types in and out as the Spark line's own types"
    ),
    "spark/test_types.py": "the Spark and Arrow type conversions",
    "test_compact.py::test_rewrite_of_the_small_files_table_keeps_every_row": "compaction on Spark",
    "test_maintain.py::test_spark_submit_expire_and_orphans": "the maintenance job through spark-submit",
}

collect_ignore = SPARK4_ONLY_MODULES if ON_SPARK_35 else []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``SPARK_LINE_TESTS`` ``spark_lines``; on Spark 3.5, deselect ``SPARK35_LEFT_OUT`` (module doc)."""
    matched = set()
    for item in items:
        node_id = item.nodeid.removeprefix("tests/spark_jobs/")
        names = {node_id, node_id.split("::")[0]} & SPARK_LINE_TESTS.keys()
        if names:
            item.add_marker(pytest.mark.spark_lines)
            matched |= names
    whole_folder = any(Path(arg).resolve() == Path(__file__).parent for arg in config.args)
    if config.getoption("markexpr") == "spark_lines" and whole_folder and matched != SPARK_LINE_TESTS.keys():
        missing = sorted(SPARK_LINE_TESTS.keys() - matched)
        raise pytest.UsageError(f"SPARK_LINE_TESTS names tests that were not collected: {missing}")
    if not ON_SPARK_35:
        return
    left_out = [item for item in items if item.nodeid.removeprefix("tests/spark_jobs/") in SPARK35_LEFT_OUT]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
