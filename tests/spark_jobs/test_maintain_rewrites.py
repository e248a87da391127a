"""The maintain job's rewrite-position-deletes and rewrite-manifests actions, and every action's --dry-run words."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest
from pyiceberg.manifest import DataFileContent, ManifestEntryStatus

from spark_jobs import maintain as maintain_job
from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.table.manifest_entries import (
    content_offset,
    content_size_in_bytes,
    first_row_id,
    read_live_entries,
    read_manifest_list,
    referenced_data_file,
)
from spark_jobs.job_contract import missing_result_fields
from spark_jobs.job_support import EXIT_OK, EXIT_USAGE, run_job
from tests.support.live_deletes import live_deletion_vectors
from tests.support.rewrite_tables import SCHEMA, SPEC, append, ids_and_checksum, position_delete_change

pytestmark = pytest.mark.spark35


@pytest.fixture
def table(testing_catalog):
    """Partitioned by category; eight appends over both partitions, then a position delete file per data file."""
    namespace = f"maint_{uuid.uuid4().hex[:10]}"
    testing_catalog.create_namespace(namespace)
    created = testing_catalog.create_table(
        f"{namespace}.events", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"}
    )
    for index in range(8):
        ids = list(range(index * 20, (index + 1) * 20))
        append(
            created, pa.table({"id": pa.array(ids, pa.int64()), "category": ["ab"[i % 2] for i in ids]}), f"m{index}"
        )
    commit_change(created, position_delete_change(created, {i * 20 + k for i in range(8) for k in (1, 2)}, "pd"))
    return created


def _args(action: str, table) -> list[str]:
    return [action, "--catalog", "testing", "--table", ".".join(table.name())]


def test_rewrite_position_deletes_dry_run_then_run(table, capsys):
    before = ids_and_checksum(table)
    planned = maintain_job.main([*_args("rewrite-position-deletes", table), "--dry-run"])
    words = capsys.readouterr().out.strip().splitlines()
    assert words[0].startswith("plan: rewrite position deletes of") and "16 position delete files" in words[0]
    assert (planned["operation"], planned["file_groups"], planned["rewritten_delete_files"]) == ("replace", 2, 16)
    done = maintain_job.main(_args("rewrite-position-deletes", table))
    assert missing_result_fields(planned) == missing_result_fields(done) == []
    assert (done["commits"], done["delete_files_removed"], done["delete_files_added"]) == (1, 16, 2)
    assert done["positions_written"] == done["positions_read"] == 16
    assert planned["commit_reports"] == []
    (report,) = done["commit_reports"]  # the rewrite's commit, as Iceberg Java's commit report has it
    head = table.catalog.load_table(table.name()).current_snapshot()
    assert (report["snapshot_id"], report["sequence_number"], report["operation"]) == (
        head.snapshot_id,
        head.sequence_number,
        "replace",
    )
    assert report["summary"]["removed-position-delete-files"] == "16" and report["attempts"] == 1
    assert ids_and_checksum(table.catalog.load_table(table.name())) == before


def test_rewrite_manifests_dry_run_then_run(table, capsys):
    before = ids_and_checksum(table)
    planned = maintain_job.main([*_args("rewrite-manifests", table), "--dry-run"])
    assert capsys.readouterr().out.startswith("plan: rewrite manifests of")
    assert planned["manifests_before"] == 9 and planned["manifests_expected"] == 2
    done = maintain_job.main(_args("rewrite-manifests", table))
    assert missing_result_fields(planned) == missing_result_fields(done) == []
    assert done["operation"] == "replace" and done["manifests_after"] == 2
    assert ids_and_checksum(table.catalog.load_table(table.name())) == before


@pytest.mark.parametrize("action", ["expire-snapshots", "remove-orphan-files"])
def test_dry_run_of_removals_prints_words_then_json(table, capsys, action):
    assert run_job("maintain", lambda: maintain_job.main([*_args(action, table), "--dry-run"])) == EXIT_OK
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].startswith(("plan: expire", "plan: remove")) and json.loads(lines[-1])["dry_run"] is True


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["rewrite-manifests", "--spec-id", "5"], "Invalid spec id 5"),
        (["rewrite-manifests", "--sort-by", "nope"], "were not found in partition spec"),
        (["rewrite-position-deletes", "--min-input-files", "0"], "'min-input-files' is set to 0"),
        (["rewrite-position-deletes", "--max-commits", "2"], "--max-commits needs --partial-progress"),
        (["rewrite-position-deletes", "--where", "nope = 1"], "nope"),
    ],
)
def test_bad_input_exits_2_with_one_line(table, capsys, extra, reason):
    action, *options = extra
    code = run_job("maintain", lambda: maintain_job.main([*_args(action, table), *options, "--dry-run"]))
    assert code == EXIT_USAGE
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and reason in errors[0]


def _files_by_path(table) -> dict[str, tuple]:
    """Every live file of the current snapshot: sequence numbers, first row id, deletion vector reference."""
    files = {}
    for manifest in read_manifest_list(table.current_snapshot(), table.io):
        for entry in read_live_entries(manifest, table.io):
            data_file = entry.data_file
            key = f"{data_file.file_path}@{content_offset(data_file)}"
            files[key] = (
                data_file.content,
                entry.snapshot_id,
                entry.sequence_number,
                entry.file_sequence_number,
                data_file.record_count,
                first_row_id(data_file) if data_file.content == DataFileContent.DATA else None,
                referenced_data_file(data_file),
                content_size_in_bytes(data_file),
            )
    return files


@pytest.mark.spark
def test_rewrite_manifests_of_a_v3_table_keeps_row_ids_and_deletion_vectors(spark, testing_catalog):
    """Three appends and two upserts (deletion vectors) on v3, then one manifest per content keeps every file as is."""
    from spark_jobs.spark.ingest import IngestOptions, ingest

    namespace = f"maint_v3_{uuid.uuid4().hex[:10]}"
    testing_catalog.create_namespace(namespace)
    name = f"{namespace}.events"

    def frame(ids, version):
        return spark.createDataFrame([(i, f"v{version}-{i}") for i in ids], "id long, name string").coalesce(1)

    ingest(spark, "testing", name, frame(range(10), 1), IngestOptions(create_if_missing=True, format_version=3))
    for start in (10, 20):
        ingest(spark, "testing", name, frame(range(start, start + 10), 1), IngestOptions(mode="append"))
    for upserted in ([3, 15, 25], [4, 16]):
        ingest(spark, "testing", name, frame(upserted, 2), IngestOptions(mode="upsert", key=("id",)))
    table = testing_catalog.load_table(name)
    assert table.metadata.format_version == 3 and live_deletion_vectors(table)
    before_rows = open_read_session("testing", name).to_arrow().sort_by("id").to_pylist()
    before_files, before_manifests = _files_by_path(table), len(table.current_snapshot().manifests(table.io))
    next_row_id = table.metadata.next_row_id

    done = maintain_job.main(_args("rewrite-manifests", table))

    table = testing_catalog.load_table(name)
    snapshot = table.current_snapshot()
    assert done["operation"] == snapshot.summary.operation.value == "replace"
    assert done["manifests_after"] == len(snapshot.manifests(table.io)) == 2 < before_manifests
    assert _files_by_path(table) == before_files  # first row ids, sequence numbers, vector references kept
    for manifest in read_manifest_list(snapshot, table.io):
        assert all(entry.status == ManifestEntryStatus.EXISTING for entry in read_live_entries(manifest, table.io))
    # Iceberg Java's v3 manifest list gives a new data manifest ids for its existing rows (unused: every file has its
    # own first_row_id), so next-row-id moves past them; the rows keep their ids.
    data_rows = sum(f[4] for f in before_files.values() if f[0] == DataFileContent.DATA)
    assert (snapshot.first_row_id, snapshot.added_rows) == (next_row_id, data_rows)
    assert table.metadata.next_row_id == next_row_id + data_rows
    after_rows = open_read_session("testing", name).to_arrow().sort_by("id").to_pylist()
    assert after_rows == before_rows and len(after_rows) == 30
    assert {row["name"] for row in after_rows if row["id"] in (3, 4, 15, 16, 25)} == {
        "v2-3",
        "v2-4",
        "v2-15",
        "v2-16",
        "v2-25",
    }
