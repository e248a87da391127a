"""The maintain job's rewrite-position-deletes and rewrite-manifests actions, and every action's --dry-run words."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

from spark_jobs import maintain as maintain_job
from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.job_contract import missing_result_fields
from spark_jobs.job_support import EXIT_OK, EXIT_USAGE, run_job
from tests.support.rewrite_tables import SCHEMA, SPEC, append, ids_and_checksum, position_delete_change


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
