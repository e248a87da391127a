"""The compact job: ``--dry-run`` prints the bin-pack plan and commits nothing; without it the plan is rewritten.

In-process through ``main``/``run_job`` (the rewrite on the session's local Spark, on a writable copy of the corpus
table), and as a real ``spark-submit`` for the exit-code contract and a committed rewrite.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from spark_jobs import compact as compact_job
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.table.manifest_entries import read_live_entries
from spark_jobs.job_contract import missing_result_fields
from spark_jobs.job_support import EXIT_OK, EXIT_USAGE
from tests.support.conformance import table_checksum
from tests.support.corpus_copies import register_corpus_copy
from tests.support.services import spark_home, spark_process_env

pytestmark = pytest.mark.spark35

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPACT_PY = REPO_ROOT / "spark_jobs" / "compact.py"
SMALL_FILES = ["--catalog", "conformance", "--table", "corpus.small_files"]
MIB = 1024 * 1024


def test_dry_run_plans_the_small_files_table(conformance_catalog):
    table = conformance_catalog.load_table("corpus.small_files")
    before = table.metadata_location
    result = compact_job.main([*SMALL_FILES, "--dry-run", "--target-file-size-bytes", str(MIB)])
    assert result["status"] == "ok" and result["dry_run"] is True and result["operation"] == "replace"
    assert missing_result_fields(result) == []
    assert result["snapshot_id"] == table.current_snapshot().snapshot_id
    assert result["options"]["target-file-size-bytes"] == MIB
    assert result["options"]["min-file-size-bytes"] == int(MIB * 0.75)
    assert (result["file_groups"], result["rewritten_data_files"], result["rewritten_bytes"]) == (1, 2000, 10460022)
    assert result["expected_output_files"] == 10
    assert result["groups"] == [
        {
            "global_index": 1,
            "partition_index": 1,
            "partition": {},
            "input_files": 2000,
            "input_bytes": 10460022,
            "input_rows": 200000,
            "delete_files": 0,
            "expected_output_files": 10,
            "input_split_size": 10460022 // 10 + 5 * 1024,
        }
    ]
    assert result["expected_commits"] == 1
    assert conformance_catalog.load_table("corpus.small_files").metadata_location == before


def test_dry_run_with_group_size_partial_progress_and_where(conformance_catalog):
    result = compact_job.main(
        [
            *SMALL_FILES,
            "--dry-run",
            "--target-file-size-bytes",
            str(MIB),
            "--max-file-group-size-bytes",
            str(2 * MIB),
            "--partial-progress",
            "--max-commits",
            "2",
        ]
    )
    assert result["file_groups"] == 5 and result["groups_per_commit"] == 3 and result["expected_commits"] == 2
    assert [group["global_index"] for group in result["groups"]] == [1, 2, 3, 4, 5]
    filtered = compact_job.main([*SMALL_FILES, "--dry-run", "--where", "id < 100", "--min-input-files", "2"])
    assert 0 < filtered["candidate_data_files"] < 2000
    assert filtered["rewritten_data_files"] == filtered["candidate_data_files"]


def test_dry_run_of_a_table_with_deletes_counts_its_delete_files(conformance_catalog):
    result = compact_job.main(["--catalog", "conformance", "--table", "corpus.v2_eq_deletes", "--dry-run"])
    # 12 small files in one unpartitioned group; every live delete file of the table applies to some of them
    assert (result["file_groups"], result["rewritten_data_files"]) == (1, 12)
    assert result["delete_files"] == result["groups"][0]["delete_files"] > 0
    # every data file is rewritten, so no delete file has anything left to apply to
    assert result["delete_files_freed"] == result["delete_files"]


def test_nothing_to_rewrite_is_an_empty_plan(conformance_catalog):
    result = compact_job.main([*SMALL_FILES, "--dry-run", "--min-file-size-bytes", "0", "--min-input-files", "5000"])
    assert result["file_groups"] == 0 and result["groups"] == [] and result["operation"] is None


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--max-commits", "3"], "--max-commits needs --partial-progress"),
        (["--target-file-size-bytes", "100", "--min-file-size-bytes", "200"], "must be > 'min-file-size-bytes'"),
        (["--delete-ratio-threshold", "2"], "'delete-ratio-threshold' is set to 2.0 but must be <= 1"),
        (["--min-input-files", "many"], "invalid int value"),
    ],
)
def test_bad_options_are_usage_errors(conformance_catalog, args, reason):
    with pytest.raises(UserInputError, match=reason):
        compact_job.main([*SMALL_FILES, "--dry-run", *args])


def _rows_and_checksum(table) -> tuple[int, str]:
    rows = open_read_session(table.catalog, table).to_arrow()
    return rows.num_rows, table_checksum(rows, rows.column_names)[0]


def _live_data_entries(table) -> list:
    snapshot = table.current_snapshot()
    return [
        entry
        for manifest in snapshot.manifests(table.io)
        if manifest.content == 0
        for entry in read_live_entries(manifest, table.io)
    ]


@pytest.mark.spark
def test_rewrite_of_the_small_files_table_keeps_every_row(spark, testing_catalog, tmp_path):
    table = register_corpus_copy(testing_catalog, "small_files", tmp_path)
    start = table.current_snapshot()
    rows_before = _rows_and_checksum(table)
    identifier = ".".join(table.name())
    result = compact_job.main(["--catalog", "testing", "--table", identifier, "--target-file-size-bytes", str(MIB)])
    assert (result["status"], result["dry_run"], result["operation"], result["commits"]) == ("ok", False, "replace", 1)
    assert missing_result_fields(result) == []
    assert result["starting_snapshot_id"] == start.snapshot_id != result["snapshot_id"]
    assert (result["file_groups"], result["data_files_removed"], result["bytes_removed"]) == (1, 2000, 10460022)
    assert result["data_files_added"] == 10  # the plan's expected output files
    assert result["rows_read"] == result["rows_written"] == 200_000 and result["rows_deleted"] == 0
    assert set(result["seconds"]) == {"plan", "rewrite", "commit"}
    after = testing_catalog.load_table(identifier)
    snapshot = after.current_snapshot()
    assert snapshot.snapshot_id == result["snapshot_ids"][0] and snapshot.parent_snapshot_id == start.snapshot_id
    assert snapshot.summary.operation.value == "replace"
    assert _rows_and_checksum(after) == rows_before == (200_000, rows_before[1])
    entries = _live_data_entries(after)
    assert len(entries) == 10
    # the rewritten files keep the starting snapshot's data sequence number
    assert {entry.sequence_number for entry in entries} == {start.sequence_number}
    assert all(entry.data_file.file_path.startswith(f"file://{tmp_path}") for entry in entries)


@pytest.mark.spark
def test_rewrite_folds_java_written_equality_deletes_and_removes_the_freed_ones(spark, testing_catalog, tmp_path):
    table = register_corpus_copy(testing_catalog, "v2_eq_deletes", tmp_path)
    rows_before = _rows_and_checksum(table)
    identifier = ".".join(table.name())
    args = ["--catalog", "testing", "--table", identifier]
    planned = compact_job.main([*args, "--dry-run"])
    result = compact_job.main(args)
    assert (result["operation"], result["commits"], result["data_files_removed"]) == ("replace", 1, 12)
    assert result["delete_files_removed"] == planned["delete_files_freed"] > 0
    assert result["rows_deleted"] > 0 and result["rows_written"] == rows_before[0]
    assert result["rows_read"] == result["rows_written"] + result["rows_deleted"]
    after = testing_catalog.load_table(identifier)
    assert _rows_and_checksum(after) == rows_before
    assert after.current_snapshot().summary["total-delete-files"] == "0"


def test_a_plan_without_groups_commits_nothing(testing_catalog, tmp_path):
    table = register_corpus_copy(testing_catalog, "small_files", tmp_path)
    identifier = ".".join(table.name())
    result = compact_job.main(["--catalog", "testing", "--table", identifier, "--min-input-files", "5000"])
    assert (result["operation"], result["commits"], result["snapshot_ids"]) == (None, 0, [])
    assert testing_catalog.load_table(identifier).metadata_location == table.metadata_location


def test_rewrite_of_a_java_written_v3_table_folds_its_deletion_vectors(spark, testing_catalog, tmp_path):
    table = register_corpus_copy(testing_catalog, "mor_v3_dv", tmp_path)
    identifier = ".".join(table.name())
    before = open_read_session("testing", identifier).to_arrow()
    result = compact_job.main(["--catalog", "testing", "--table", identifier, "--min-input-files", "1"])
    assert result["data_files_removed"] >= 1 and result["delete_files_removed"] >= 1, result
    loaded = testing_catalog.load_table(identifier)
    assert loaded.metadata.format_version == 3 and loaded.current_snapshot().first_row_id is not None
    after = open_read_session("testing", identifier).to_arrow()
    columns = before.column_names
    assert table_checksum(after, columns) == table_checksum(before, columns) and after.num_rows == before.num_rows


# -- spark-submit ------------------------------------------------------------------------------------------------


def _spark_submit(args: list[str]) -> subprocess.CompletedProcess:
    command = [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        "local[1]",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.driver.host=127.0.0.1",
        str(COMPACT_PY),
        *args,
    ]
    return subprocess.run(command, env=spark_process_env(), capture_output=True, text=True, timeout=600, check=False)


def _error_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error: ")]


@pytest.mark.spark
def test_spark_submit_dry_run_prints_the_plan_as_its_last_line(conformance_catalog):
    done = _spark_submit([*SMALL_FILES, "--dry-run", "--target-file-size-bytes", str(4 * MIB)])
    assert done.returncode == EXIT_OK, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["job"], result["dry_run"], result["rewritten_data_files"]) == ("compact", True, 2000)
    assert result["expected_output_files"] == 3


def _events_table(catalog, files: int):
    """A format v2 table of ``files`` appends of 50 rows each (so ``files`` small data files)."""
    import uuid

    namespace = f"compact_{uuid.uuid4().hex[:10]}"
    catalog.create_namespace(namespace)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("category", pa.string())])
    table = catalog.create_table(f"{namespace}.events", schema=schema, properties={"format-version": "2"})
    for index in range(files):
        ids = pa.array(range(index * 50, index * 50 + 50), pa.int64())
        table.append(pa.table({"id": ids, "category": [f"c{index % 3}"] * 50}, schema=schema))
    return table


@pytest.mark.spark
def test_partial_progress_commits_the_planned_batches_in_order(spark, testing_catalog):
    table = _events_table(testing_catalog, 6)
    rows_before = _rows_and_checksum(table)
    start = table.current_snapshot().snapshot_id
    largest = max(table.inspect.files().column("file_size_in_bytes").to_pylist())
    args = ["--catalog", "testing", "--table", ".".join(table.name()), "--min-input-files", "2"]
    args += ["--max-file-group-size-bytes", str(2 * largest), "--partial-progress", "--max-commits", "3"]
    planned = compact_job.main([*args, "--dry-run"])
    assert (planned["file_groups"], planned["groups_per_commit"], planned["expected_commits"]) == (3, 1, 3)
    result = compact_job.main(args)
    assert result["commits"] == 3 and result["rewritten_file_groups"] == 3 and result["failed_file_groups"] == []
    assert (result["data_files_removed"], result["data_files_added"]) == (6, 3)
    after = testing_catalog.load_table(table.name())
    parents = [after.metadata.snapshot_by_id(snapshot_id).parent_snapshot_id for snapshot_id in result["snapshot_ids"]]
    assert parents == [start, *result["snapshot_ids"][:2]]
    assert _rows_and_checksum(after) == rows_before


@pytest.mark.spark
def test_spark_submit_rewrites_and_commits(testing_catalog):
    table = _events_table(testing_catalog, 6)
    rows_before = _rows_and_checksum(table)
    identifier = ".".join(table.name())
    done = _spark_submit(["--catalog", "testing", "--table", identifier])
    assert done.returncode == EXIT_OK, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["job"], result["operation"], result["data_files_removed"], result["data_files_added"]) == (
        "compact",
        "replace",
        6,
        1,
    )
    after = testing_catalog.load_table(identifier)
    assert after.current_snapshot().snapshot_id == result["snapshot_id"]
    assert _rows_and_checksum(after) == rows_before and len(_live_data_entries(after)) == 1


@pytest.mark.spark
def test_spark_submit_exit_code_on_bad_input(conformance_catalog):
    bad = _spark_submit(["--catalog", "conformance", "--table", "corpus.missing", "--dry-run"])
    assert bad.returncode == EXIT_USAGE, bad.stderr[-4000:]
    assert len(_error_lines(bad)) == 1 and "corpus.missing" in _error_lines(bad)[0]
