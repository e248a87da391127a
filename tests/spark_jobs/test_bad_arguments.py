"""Every argument of every job, given a value a user could plausibly get wrong, is bad input by the contract.

Each case runs a job's ``main`` through ``run_job`` in this process (the session's Spark where the job needs it),
as spark-submit would, and checks what the user sees: exit code 2, exactly one ``error:`` line under 300
characters naming the argument, table, file or column and what was expected, no Python traceback, no secret of
the catalog's configuration; and what the table keeps: the same metadata (no new snapshot) and the same files
under its location (nothing half written).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import compact as compact_job
from spark_jobs import ingest as ingest_job
from spark_jobs import maintain as maintain_job
from spark_jobs import read as read_job
from spark_jobs.engine.table.catalog import load_catalog
from spark_jobs.job_support import EXIT_USAGE, run_job

pytestmark = pytest.mark.spark

CATALOG = "badargs"
TABLE = "bad_arguments.events"
CREATED = "bad_arguments.created"  # what --create-if-missing would make
SECRET = "s3cr3t-Value-of-the-badargs-catalog"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("ts", pa.timestamp("us")),
    ]
)
JOBS = {"read": read_job.main, "ingest": ingest_job.main, "compact": compact_job.main, "maintain": maintain_job.main}


class Fixture:
    """The table every case runs against, and the paths a case's arguments name."""

    def __init__(self, root: Path, table) -> None:
        self.root = root
        self.table = table
        self.location = Path(urlparse(table.metadata.location).path)
        self.first_snapshot = table.snapshots()[0].snapshot_id

    def expand(self, argv: list[str]) -> list[str]:
        """``argv`` with ``{root}``, ``{first}`` and ``{location}`` filled in."""
        values = {"root": str(self.root), "first": str(self.first_snapshot), "location": str(self.location)}
        return [arg.format(**values) for arg in argv]


def _rows(ids: range, **columns) -> pa.Table:
    base = {
        "id": pa.array(ids, pa.int64()),
        "category": [f"c{i % 3}" for i in ids],
        "ts": pa.array([1_700_000_000_000_000 + i for i in ids], pa.timestamp("us")),
    }
    return pa.table(base | columns)


@pytest.fixture(scope="module")
def fixture(tmp_path_factory) -> Iterator[Fixture]:
    """Catalog ``badargs`` (the session's ``testing`` catalog plus a secret property), a table with two snapshots,
    a tag ``v1`` and a branch ``dev``, and source folders: good, empty, mistyped, with an extra column, not Parquet."""
    root = tmp_path_factory.mktemp("bad_arguments")
    with pytest.MonkeyPatch.context() as patch:
        for key in ("TYPE", "URI", "WAREHOUSE"):
            patch.setenv(f"PYICEBERG_CATALOG__BADARGS__{key}", os.environ[f"PYICEBERG_CATALOG__TESTING__{key}"])
        patch.setenv("PYICEBERG_CATALOG__BADARGS__S3__SECRET_ACCESS_KEY", SECRET)
        catalog = load_catalog(CATALOG)
        catalog.create_namespace_if_not_exists("bad_arguments")
        table = catalog.create_table(TABLE, SCHEMA, properties={"format-version": "2"})
        table.append(_rows(range(0, 50)).cast(SCHEMA))
        table.append(_rows(range(50, 100)).cast(SCHEMA))
        first, second = (snapshot.snapshot_id for snapshot in table.snapshots())
        table.manage_snapshots().create_tag(first, "v1").create_branch(second, "dev").commit()
        for name, rows in {
            "good": _rows(range(100, 110)).cast(SCHEMA),
            "mistyped": _rows(range(100, 110)).set_column(0, "id", pa.array([str(i) for i in range(10)])),
            "extra": _rows(range(100, 110), extra=pa.array(range(10), pa.int32())),
        }.items():
            (root / name).mkdir()
            pq.write_table(rows, root / name / "part-0.parquet")
        (root / "empty").mkdir()
        (root / "text").mkdir()
        (root / "text" / "part-0.parquet").write_text("id,category\n1,a\n")
        (root / "a_file").write_text("not a directory")
        (root / "existing_output").mkdir()
        yield Fixture(root, catalog.load_table(TABLE))


def _base(job: str) -> list[str]:
    common = ["--catalog", CATALOG, "--table", TABLE]
    return {
        "read": [*common, "--output", "{root}/out"],
        "ingest": [*common, "--source", "{root}/good", "--mode", "append"],
        "compact": common,
    }.get(job, [])


# (job, arguments added to the job's base arguments or replacing them, what the error line must name)
CASES: list[tuple[str, list[str], list[str]]] = [
    # read: the table
    ("read", ["--catalog", "nosuch", "--table", TABLE, "--output", "{root}/out"], ["nosuch", "not configured"]),
    ("read", ["--catalog", CATALOG, "--output", "{root}/out"], ["--table"]),
    ("read", ["--table", TABLE, "--output", "{root}/out"], ["--catalog"]),
    ("read", ["--catalog", CATALOG, "--table", "bad_arguments.nosuch", "--output", "{root}/out"], ["nosuch", "events"]),
    ("read", ["--catalog", CATALOG, "--table", "no_namespace.events", "--output", "{root}/out"], ["no_namespace"]),
    ("read", ["--catalog", CATALOG, "--table", "events", "--output", "{root}/out"], ["events", "namespace"]),
    ("read", ["--catalog", CATALOG, "--table", "", "--output", "{root}/out"], ["namespace.table"]),
    # read: the snapshot
    ("read", ["--snapshot-id", "abc"], ["--snapshot-id", "abc"]),
    ("read", ["--snapshot-id", "12345"], ["12345", TABLE]),
    ("read", ["--snapshot-id", "-1"], ["-1", TABLE]),
    ("read", ["--ref", "nosuch"], ["nosuch", "v1", "dev"]),
    ("read", ["--ref", ""], ["ref", TABLE]),
    ("read", ["--as-of", "yesterday"], ["yesterday", "ISO-8601"]),
    ("read", ["--as-of", "2020-13-45T00:00:00"], ["2020-13-45", "ISO-8601"]),
    ("read", ["--as-of", "0"], [TABLE, "as of", "first snapshot"]),
    ("read", ["--as-of", "2001-01-01T00:00:00Z"], [TABLE, "2001-01-01", "first snapshot"]),
    ("read", ["--snapshot-id", "{first}", "--ref", "v1"], ["--ref", "--snapshot-id"]),
    ("read", ["--ref", "v1", "--as-of", "0"], ["--as-of", "--ref"]),
    # read: columns and filter
    ("read", ["--columns", "id,nosuch"], ["nosuch", TABLE]),
    ("read", ["--columns", "id,id"], ["id", "twice", TABLE]),
    ("read", ["--filter", "id >"], ["row filter 'id >'", "expected"]),
    ("read", ["--filter", "nosuch = 1"], ["nosuch"]),
    ("read", ["--filter", "id = 'abc'"], ["id", "abc"]),
    ("read", ["--filter", "ts > 'not a time'"], ["ts", "not a time"]),
    ("read", ["--filter", "category > 5 AND"], ["row filter", "at its end"]),
    ("read", ["--as-of", ""], ["--as-of"]),
    # read: output
    ("read", ["--output-format", "avro"], ["--output-format", "avro"]),
    ("read", ["--mode", "append"], ["--mode", "append"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE], ["--output"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--output", "{root}/existing_output"], ["existing_output"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--output", "{root}/a_file/out"], ["a_file"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--output", ""], ["--output"]),
    (
        "read",
        ["--catalog", CATALOG, "--table", TABLE, "--output", "{location}", "--mode", "overwrite"],
        ["--output", TABLE],
    ),
    ("read", ["--split-size", "abc"], ["--split-size"]),
    ("read", ["--split-size", "0"], ["split size", "positive"]),
    ("read", ["--split-size", "-5"], ["split size", "positive"]),
    ("read", ["--driver-max-bytes", "abc"], ["--driver-max-bytes", "whole number"]),
    ("read", ["--driver-max-bytes", "-1"], ["--driver-max-bytes", "0 or more"]),
    ("read", ["--bogus"], ["--bogus"]),
    # read: count and aggregate
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--count", "--filter", "id > 1"], ["--count"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--count", "--ref", "nosuch"], ["nosuch"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--aggregate", "median(id)"], ["median"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--aggregate", "sum(nosuch)"], ["nosuch"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--aggregate", "sum(category)"], ["sum", "category"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--aggregate", ""], ["aggregates", "none given"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--aggregate", "sum(id", "--count"], ["--aggregate"]),
    ("read", ["--catalog", CATALOG, "--table", TABLE, "--aggregate", "sum(id"], ["sum(id"]),
    # ingest: arguments alone
    ("ingest", ["--catalog", CATALOG, "--table", TABLE, "--mode", "append"], ["--source"]),
    ("ingest", ["--catalog", CATALOG, "--table", TABLE, "--source", "{root}/good"], ["--mode"]),
    ("ingest", ["--mode", "merge"], ["--mode", "merge"]),
    ("ingest", ["--source-format", "xml"], ["--source-format", "xml"]),
    ("ingest", ["--mode", "upsert"], ["--key"]),
    ("ingest", ["--mode", "delete", "--key", " , "], ["--key"]),
    ("ingest", ["--overwrite-filter", "id > 1"], ["--overwrite-filter"]),
    ("ingest", ["--delete-mode", "copy"], ["--delete-mode", "copy"]),
    ("ingest", ["--format-version", "1", "--create-if-missing"], ["--format-version"]),
    ("ingest", ["--format-version", "x"], ["--format-version"]),
    ("ingest", ["--partition-by", "category"], ["--partition-by", "--create-if-missing"]),
    # ingest: against the table
    ("ingest", ["--mode", "upsert", "--key", "nosuch"], ["nosuch"]),
    ("ingest", ["--mode", "overwrite", "--overwrite-filter", "id >"], ["row filter 'id >'"]),
    ("ingest", ["--mode", "overwrite", "--overwrite-filter", "nosuch = 1"], ["nosuch"]),
    ("ingest", ["--mode", "overwrite", "--overwrite-filter", ""], ["--overwrite-filter"]),
    ("ingest", ["--idempotency-key", ""], ["--idempotency-key"]),
    ("ingest", ["--mode", "overwrite", "--overwrite-filter", "id = 'x'"], ["id"]),
    (
        "ingest",
        ["--catalog", CATALOG, "--table", "bad_arguments.nosuch", "--source", "{root}/good", "--mode", "append"],
        ["bad_arguments.nosuch"],
    ),
    (
        "ingest",
        ["--catalog", CATALOG, "--table", "no_namespace.t", "--source", "{root}/good", "--mode", "append"],
        ["no_namespace"],
    ),
    # ingest: a table --create-if-missing would make
    *[
        (
            "ingest",
            [
                "--catalog",
                CATALOG,
                "--table",
                CREATED,
                "--source",
                "{root}/good",
                "--mode",
                "append",
                "--create-if-missing",
                *extra,
            ],
            named,
        )
        for extra, named in [
            (["--partition-by", "bucket(x,id)"], ["--partition-by", "bucket(x,id)"]),
            (["--partition-by", "day(nosuch)"], ["nosuch"]),
            (["--partition-by", "day(id)"], ["day", "id"]),
            (["--partition-by", "bogus(id)"], ["bogus"]),
            (["--partition-by", "truncate(0,category)"], ["truncate"]),
            (["--sort-by", "id sideways"], ["--sort-by", "sideways"]),
            (["--sort-by", "nosuch"], ["nosuch"]),
        ]
    ],
    # ingest: the source
    ("ingest", ["--source", "{root}/missing"], ["missing"]),
    ("ingest", ["--source", "{root}/empty"], ["empty"]),
    ("ingest", ["--source", "{root}/mistyped"], ["id"]),
    ("ingest", ["--source", "{root}/extra"], ["extra", "--allow-schema-evolution"]),
    ("ingest", ["--source", "{root}/text"], ["part-0.parquet"]),
    ("ingest", ["--source", "{root}/good", "--source-format", "json"], ["part-0.parquet", "line 1", "JSON row"]),
    ("ingest", ["--sql", "SELECT nosuch FROM source"], ["nosuch"]),
    ("ingest", ["--sql", ""], ["--sql"]),
    # compact
    ("compact", ["--catalog", CATALOG], ["--table"]),
    ("compact", ["--catalog", CATALOG, "--table", "bad_arguments.nosuch"], ["bad_arguments.nosuch"]),
    ("compact", ["--strategy", "shuffle"], ["--strategy", "shuffle"]),
    ("compact", ["--strategy", "sort"], ["sort order", TABLE]),
    ("compact", ["--strategy", "sort", "--sort-order", "nosuch"], ["nosuch"]),
    ("compact", ["--strategy", "sort", "--sort-order", "id sideways"], ["sideways"]),
    ("compact", ["--strategy", "sort", "--sort-order", "zorder()"], ["zorder"]),
    ("compact", ["--strategy", "sort", "--sort-order", "zorder(id"], ["zorder(id"]),
    ("compact", ["--strategy", "sort", "--sort-order", "zorder(id,nosuch)"], ["nosuch"]),
    ("compact", ["--strategy", "binpack", "--sort-order", "id"], ["--sort-order", "--strategy sort"]),
    ("compact", ["--target-file-size-bytes", "0"], ["target-file-size-bytes"]),
    ("compact", ["--target-file-size-bytes", "-1"], ["target-file-size-bytes"]),
    ("compact", ["--target-file-size-bytes", "1GB"], ["--target-file-size-bytes"]),
    ("compact", ["--min-file-size-bytes", "2000", "--max-file-size-bytes", "1000"], ["max-file-size-bytes"]),
    ("compact", ["--min-input-files", "0"], ["min-input-files"]),
    ("compact", ["--delete-file-threshold", "-1"], ["delete-file-threshold"]),
    ("compact", ["--delete-ratio-threshold", "2"], ["delete-ratio-threshold"]),
    ("compact", ["--delete-ratio-threshold", "nan"], ["delete-ratio-threshold"]),
    ("compact", ["--max-file-group-size-bytes", "0"], ["max-file-group-size-bytes"]),
    ("compact", ["--max-concurrent-file-group-rewrites", "0"], ["max-concurrent-file-group-rewrites"]),
    ("compact", ["--max-commits", "3"], ["--max-commits", "--partial-progress"]),
    ("compact", ["--partial-progress", "--max-commits", "0"], ["max-commits"]),
    ("compact", ["--rewrite-job-order", "random"], ["--rewrite-job-order", "random"]),
    ("compact", ["--output-spec-id", "99"], ["99"]),
    ("compact", ["--where", "id >"], ["row filter 'id >'"]),
    ("compact", ["--where", "nosuch = 1"], ["nosuch"]),
    ("compact", ["--strategy", "sort", "--sort-order", ""], ["--sort-order"]),
    ("compact", ["--where", "id = 'x'"], ["id"]),
    ("compact", ["--strategy", "sort", "--sort-order", "id", "--compression-factor", "0"], ["compression-factor"]),
    (
        "compact",
        ["--strategy", "sort", "--sort-order", "id", "--shuffle-partitions-per-file", "0"],
        ["shuffle-partitions-per-file"],
    ),
    (
        "compact",
        ["--strategy", "sort", "--sort-order", "zorder(id,ts)", "--var-length-contribution", "-1"],
        ["var-length-contribution"],
    ),
    ("compact", ["--strategy", "sort", "--sort-order", "zorder(id,ts)", "--max-output-size", "0"], ["max-output-size"]),
    # maintain
    ("maintain", [], ["ACTION"]),
    ("maintain", ["vacuum", "--catalog", CATALOG, "--table", TABLE], ["vacuum"]),
    ("maintain", ["expire-snapshots", "--catalog", CATALOG], ["--table"]),
    (
        "maintain",
        ["expire-snapshots", "--catalog", CATALOG, "--table", "bad_arguments.nosuch"],
        ["bad_arguments.nosuch"],
    ),
    (
        "maintain",
        ["expire-snapshots", "--catalog", CATALOG, "--table", TABLE, "--older-than", "last week"],
        ["--older-than", "last week"],
    ),
    (
        "maintain",
        ["expire-snapshots", "--catalog", CATALOG, "--table", TABLE, "--older-than", "notatime"],
        ["--older-than notatime: ", "ISO-8601"],
    ),
    ("maintain", ["expire-snapshots", "--catalog", CATALOG, "--table", TABLE, "--retain-last", "0"], ["retain-last"]),
    ("maintain", ["expire-snapshots", "--catalog", CATALOG, "--table", TABLE, "--retain-last", "-3"], ["retain-last"]),
    (
        "maintain",
        ["expire-snapshots", "--catalog", CATALOG, "--table", TABLE, "--retain-last", "two"],
        ["--retain-last"],
    ),
    (
        "maintain",
        ["expire-snapshots", "--catalog", CATALOG, "--table", TABLE, "--allow-short-retention"],
        ["--allow-short-retention"],
    ),
    (
        "maintain",
        ["remove-orphan-files", "--catalog", CATALOG, "--table", TABLE, "--older-than", "soon"],
        ["--older-than soon: "],
    ),
    ("read", ["--catalog", CATALOG, "--table", "bad_arguments.ev\x01ents", "--output", "{root}/out"], ["U+0001"]),
    (
        "maintain",
        ["remove-orphan-files", "--catalog", CATALOG, "--table", TABLE, "--older-than", "2999-01-01"],
        ["--allow-short-retention"],
    ),
    (
        "maintain",
        ["remove-orphan-files", "--catalog", CATALOG, "--table", TABLE, "--retain-last", "2"],
        ["--retain-last"],
    ),
    (
        "maintain",
        ["rewrite-position-deletes", "--catalog", CATALOG, "--table", TABLE, "--where", "id >"],
        ["row filter 'id >'"],
    ),
    (
        "maintain",
        ["rewrite-position-deletes", "--catalog", CATALOG, "--table", TABLE, "--where", "nosuch = 1"],
        ["nosuch"],
    ),
    (
        "maintain",
        ["rewrite-position-deletes", "--catalog", CATALOG, "--table", TABLE, "--min-input-files", "0"],
        ["min-input-files"],
    ),
    (
        "maintain",
        ["rewrite-position-deletes", "--catalog", CATALOG, "--table", TABLE, "--max-commits", "2"],
        ["--partial-progress"],
    ),
    (
        "maintain",
        ["rewrite-position-deletes", "--catalog", CATALOG, "--table", TABLE, "--target-file-size-bytes", "0"],
        ["target-file-size-bytes"],
    ),
    ("maintain", ["rewrite-manifests", "--catalog", CATALOG, "--table", TABLE, "--spec-id", "99"], ["99"]),
    ("maintain", ["rewrite-manifests", "--catalog", CATALOG, "--table", TABLE, "--sort-by", "nosuch"], ["nosuch"]),
]


def _argv(job: str, arguments: list[str]) -> list[str]:
    """The case's arguments: complete when they name --catalog or --table or an action, else after the base."""
    complete = job == "maintain" or "--catalog" in arguments or "--table" in arguments
    return list(arguments) if complete else [*_base(job), *arguments]


def _case_id(case: tuple[str, list[str], list[str]]) -> str:
    job, arguments, _ = case
    return f"{job}:{' '.join(arguments)[:70]}"


def _files_under(location: Path) -> set[str]:
    return {str(path) for path in location.rglob("*") if path.is_file()}


@pytest.mark.parametrize("case", CASES, ids=[_case_id(case) for case in CASES])
def test_bad_argument_exits_2_naming_it_and_changes_nothing(
    spark, fixture: Fixture, capsys, case: tuple[str, list[str], list[str]]
) -> None:
    job, arguments, named = case
    argv = fixture.expand(_argv(job, arguments))
    shutil.rmtree(fixture.root / "out", ignore_errors=True)  # written by an earlier failing case
    if load_catalog(CATALOG).table_exists(CREATED):  # left by an earlier failing case: each case starts without it
        load_catalog(CATALOG).purge_table(CREATED)
    metadata_before = load_catalog(CATALOG).load_table(TABLE).metadata_location
    files_before = _files_under(fixture.location.parent)
    capsys.readouterr()
    code = run_job(job, lambda: JOBS[job](argv))
    seen = capsys.readouterr()
    lines = [line for line in seen.err.splitlines() if line.startswith("error:")]
    assert code == EXIT_USAGE, f"exit code {code}; error lines {lines}; stderr tail {seen.err[-600:]}"
    assert len(lines) == 1, lines
    line = lines[0]
    assert len(line) < 300, f"{len(line)} characters: {line}"
    for text in named:
        assert text.format(root=fixture.root) in line, f"{text!r} not named in: {line}"
    assert "Traceback" not in seen.err and "Traceback" not in seen.out
    # The argument is named as typed: an option (never an internal name such as ``as_of``), or the action.
    typed = [arg for arg in arguments if arg.startswith("--")]
    values = [fixture.expand([arg])[0] for arg in arguments if not arg.startswith("--") and len(arg) > 3]
    named_as_typed = any(flag in line for flag in typed) or any(value in line for value in values)
    assert named_as_typed or re.search(r"--[a-z]", line) or "ACTION" in line, line
    assert SECRET not in seen.err and SECRET not in seen.out
    assert load_catalog(CATALOG).load_table(TABLE).metadata_location == metadata_before
    assert _files_under(fixture.location.parent) == files_before
    assert not (fixture.root / "out").exists()
    assert not load_catalog(CATALOG).table_exists(CREATED)
