"""The Spark side's tests run on two Spark lines: the project's Spark 4 (every test) and Spark 3.5 (the tests marked
``spark35``, run by ``scripts/test.sh`` in the Java environment's virtualenv; docs/development.md "Tests").

On Spark 3.5:
1. Modules of the Python data source import ``pyspark.sql.datasource``, which Spark 4 introduced: they are not
   collected (their tests are marked ``spark4``).
2. ``SPARK35_LEFT_OUT``: tests of modules marked ``spark35`` that the Spark 3.5 pass leaves out to keep CI short,
   each because a cheaper test of the same pass runs the same Spark code; they are deselected, and pytest's summary
   counts them.
"""

from __future__ import annotations

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

collect_ignore = SPARK4_ONLY_MODULES if ON_SPARK_35 else []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On Spark 3.5, deselect ``SPARK35_LEFT_OUT`` (module doc)."""
    if not ON_SPARK_35:
        return
    left_out = [item for item in items if item.nodeid.removeprefix("tests/spark_jobs/") in SPARK35_LEFT_OUT]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
