"""Damaged metadata is bad input for every job: a truncated or unparsable metadata file, a truncated manifest list,
a truncated or missing manifest, a Puffin file of deletion vectors cut inside its blobs. The job exits 2 with one
line naming the file and the table, and changes nothing: no commit, no file deleted (maintenance refuses a table it
cannot read whole, ``--dry-run`` too).

Real tables of the session's ``testing`` catalog, damaged on disk; each job runs through ``run_job`` in this process
as spark-submit would run it.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from spark_jobs import compact as compact_job
from spark_jobs import ingest as ingest_job
from spark_jobs import maintain as maintain_job
from spark_jobs import read as read_job
from spark_jobs.job_contract import EXIT_OK, EXIT_USAGE
from spark_jobs.job_support import run_job

_names = itertools.count()
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("category", pa.string())])
JOBS = {"read": read_job.main, "compact": compact_job.main, "maintain": maintain_job.main, "ingest": ingest_job.main}
LONG_AGO = "2000-01-01T00:00:00Z"
FAR_AHEAD = "2999-01-01T00:00:00Z"


def _local(location: str) -> Path:
    return Path(urlparse(location).path)


def _files_under(root: Path) -> dict[str, int]:
    return {str(path): path.stat().st_size for path in root.rglob("*") if path.is_file()}


def _table(testing_catalog):
    testing_catalog.create_namespace_if_not_exists("damaged")
    identifier = f"damaged.t{next(_names)}"
    table = testing_catalog.create_table(identifier, SCHEMA, properties={"format-version": "2"})
    for index in range(2):
        ids = pa.array(range(index * 10, index * 10 + 10), pa.int64())
        table.append(pa.table({"id": ids, "category": ["ab"[index]] * 10}, schema=SCHEMA))
    return testing_catalog.load_table(identifier), identifier


def _damage(table, damage: str) -> Path:
    """Damage one file of ``table`` as ``damage`` says; the damaged file's path."""
    snapshot = table.current_snapshot()
    path = {
        "metadata-truncated": lambda: _local(table.metadata_location),
        "metadata-not-json": lambda: _local(table.metadata_location),
        "manifest-list-truncated": lambda: _local(snapshot.manifest_list),
        "manifest-truncated": lambda: _local(snapshot.manifests(table.io)[0].manifest_path),
        "manifest-missing": lambda: _local(snapshot.manifests(table.io)[0].manifest_path),
    }[damage]()
    if damage == "metadata-not-json":
        path.write_text("<html>not a table's metadata</html>")
    elif damage == "manifest-missing":
        os.remove(path)
    else:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def _argv(job: str, identifier: str, tmp_path: Path) -> list[str]:
    table = ["--catalog", "testing", "--table", identifier]
    return {
        "read --count": ["--count", *table],
        "read --output": [*table, "--output", str(tmp_path / "out")],
        "read --aggregate": ["--aggregate", "count(*),max(id)", *table],
        "compact": table,
        "compact --dry-run": [*table, "--dry-run"],
        "expire-snapshots": ["expire-snapshots", *table, "--older-than", FAR_AHEAD],
        "expire-snapshots --dry-run": ["expire-snapshots", *table, "--older-than", FAR_AHEAD, "--dry-run"],
        "remove-orphan-files": ["remove-orphan-files", *table, "--older-than", LONG_AGO],
        "remove-orphan-files --dry-run": ["remove-orphan-files", *table, "--older-than", LONG_AGO, "--dry-run"],
        "rewrite-manifests --dry-run": ["rewrite-manifests", *table, "--dry-run"],
        "rewrite-position-deletes --dry-run": ["rewrite-position-deletes", *table, "--dry-run"],
    }[job]


DAMAGES = [
    "metadata-truncated",
    "metadata-not-json",
    "manifest-list-truncated",
    "manifest-truncated",
    "manifest-missing",
]
RUNS = [
    "read --count",
    "read --output",
    "read --aggregate",
    "compact",
    "compact --dry-run",
    "expire-snapshots",
    "expire-snapshots --dry-run",
    "remove-orphan-files",
    "remove-orphan-files --dry-run",
    "rewrite-manifests --dry-run",
    "rewrite-position-deletes --dry-run",
]
# What a job may answer without the damaged file: a count from the manifest list's totals reads no manifest.
ANSWERED_WITHOUT_IT = {("read --count", "manifest-truncated"), ("read --count", "manifest-missing")}
# Every job with the audit's two damages, every damage with three jobs of different readers (planning, expiry, orphans).
CASES = sorted(
    {(run, damage) for run in RUNS for damage in ("metadata-truncated", "manifest-missing")}
    | {
        (run, damage)
        for run in ("read --output", "expire-snapshots", "remove-orphan-files --dry-run")
        for damage in DAMAGES
    }
)


@pytest.mark.parametrize(("run", "damage"), CASES, ids=[f"{run}-{damage}" for run, damage in CASES])
def test_a_job_on_damaged_metadata_exits_2_naming_the_file_and_the_table_and_changes_nothing(
    testing_catalog, tmp_path, capsys, run, damage
) -> None:
    table, identifier = _table(testing_catalog)
    damaged = _damage(table, damage)
    location = _local(table.metadata.location)
    files_before = _files_under(location)
    job = run.split()[0] if run.startswith(("read", "compact")) else "maintain"
    capsys.readouterr()
    code = run_job(job, lambda: JOBS[job](_argv(run, identifier, tmp_path)))
    seen = capsys.readouterr()
    lines = [line for line in seen.err.splitlines() if line.startswith("error:")]
    if (run, damage) in ANSWERED_WITHOUT_IT:
        assert code == EXIT_OK, lines
        assert seen.out.strip().splitlines()[-1].startswith("{")
    else:
        assert code == EXIT_USAGE, f"exit {code}: {lines} {seen.err[-2000:]}"
        assert len(lines) == 1 and len(lines[0]) < 300, lines
        assert damaged.name in lines[0] and identifier in lines[0], lines[0]
        assert ("is missing" if damage == "manifest-missing" else "damaged") in lines[0], lines[0]
        assert "Traceback" not in seen.err
    assert _files_under(location) == files_before  # nothing committed, nothing deleted
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def dv_table(spark, testing_catalog, tmp_path_factory) -> str:
    """A format v3 table with deletion vectors, written by the ingest job (create, then upsert by key)."""
    root = tmp_path_factory.mktemp("dv_sources")
    testing_catalog.create_namespace_if_not_exists("damaged")
    identifier = f"damaged.dv{next(_names)}"
    for name, ids in [("first", range(20)), ("second", [3, 7, 11])]:
        (root / name).mkdir()
        rows = pa.table({"id": pa.array(ids, pa.int64()), "category": [name] * len(ids)}, schema=SCHEMA)
        import pyarrow.parquet as pq

        pq.write_table(rows, root / name / "part-0.parquet")
    base = ["--catalog", "testing", "--table", identifier]
    ingest_job.main([*base, "--source", str(root / "first"), "--mode", "append", "--create-if-missing",
                     "--format-version", "3"])  # fmt: skip
    ingest_job.main([*base, "--source", str(root / "second"), "--mode", "upsert", "--key", "id"])
    return identifier


def _v3_table_with_both_kinds_of_deletes(testing_catalog, root: Path) -> tuple[str, Path]:
    """A format v3 table made by the ingest job: a deletion vector (an upsert) and equality deletes (another)."""
    import pyarrow.parquet as pq

    testing_catalog.create_namespace_if_not_exists("damaged")
    identifier = f"damaged.v3_{next(_names)}"
    base = ["--catalog", "testing", "--table", identifier]
    steps = [
        ("first", range(20), ["--mode", "append", "--create-if-missing", "--format-version", "3"]),
        ("second", [3, 7], ["--mode", "upsert", "--key", "id"]),
        ("third", [5, 9], ["--mode", "upsert", "--key", "id", "--delete-mode", "equality"]),
    ]
    for name, ids, options in steps:
        (root / name).mkdir()
        rows = pa.table({"id": pa.array(ids, pa.int64()), "category": [name] * len(ids)}, schema=SCHEMA)
        pq.write_table(rows, root / name / "part-0.parquet")
        ingest_job.main([*base, "--source", str(root / name), *options])
    return identifier, _local(testing_catalog.load_table(identifier).metadata.location)


def _forget_what_this_process_read() -> None:
    """Empty the process cache of delete files (a truncated Puffin file is read again, as a new spark-submit process
    would). The manifest caches stay full on purpose: a conversion must not trust a manifest this process read before
    it went missing."""
    from spark_jobs.engine.deletes.cache import delete_file_cache

    delete_file_cache().clear()


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize("damage", ["metadata-truncated", "manifest-missing", "puffin-truncated"])
def test_the_deletion_vector_conversions_on_damaged_metadata_exit_2_and_commit_nothing(
    testing_catalog, tmp_path, capsys, damage
) -> None:
    identifier, location = _v3_table_with_both_kinds_of_deletes(testing_catalog, tmp_path)
    table = testing_catalog.load_table(identifier)
    if damage == "puffin-truncated":
        (damaged,) = sorted(location.rglob("*.puffin"))
        damaged.write_bytes(damaged.read_bytes()[:8])
    else:
        damaged = _damage(table, damage)
    _forget_what_this_process_read()
    files_before = _files_under(location)
    # A v3 table's rewrite-position-deletes reads no deletion vector when no position delete file is left to convert.
    actions = ["convert-equality-deletes"] + (["rewrite-position-deletes"] if damage != "puffin-truncated" else [])
    for action in actions:
        argv = [action, "--catalog", "testing", "--table", identifier]
        if action == "rewrite-position-deletes":
            argv.append("--rewrite-all")
        capsys.readouterr()
        code = run_job("maintain", lambda argv=argv: maintain_job.main(argv))
        lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
        assert code == EXIT_USAGE, (action, code, lines)
        assert len(lines) == 1 and damaged.name in lines[0] and identifier in lines[0], (action, lines)
    assert _files_under(location) == files_before  # nothing committed, nothing deleted


def _puffin_files(identifier: str, testing_catalog) -> list[Path]:
    location = _local(testing_catalog.load_table(identifier).metadata.location)
    return sorted(location.rglob("*.puffin"))


@pytest.mark.spark
@pytest.mark.spark35
def test_a_truncated_puffin_file_is_named_by_the_read_and_the_compaction(
    dv_table, testing_catalog, tmp_path, capsys
) -> None:
    (puffin,) = _puffin_files(dv_table, testing_catalog)
    puffin.write_bytes(puffin.read_bytes()[:8])  # the magic and a few bytes of the first vector: every blob is cut
    snapshot_before = testing_catalog.load_table(dv_table).current_snapshot().snapshot_id
    for job, argv in [
        ("read", ["--catalog", "testing", "--table", dv_table, "--output", str(tmp_path / "out")]),
        ("read", ["--count", "--catalog", "testing", "--table", dv_table]),
        ("compact", ["--catalog", "testing", "--table", dv_table, "--rewrite-all"]),
    ]:
        capsys.readouterr()
        code = run_job(job, lambda argv=argv, job=job: JOBS[job](argv))
        lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
        assert code == EXIT_USAGE, (job, argv, lines)
        assert len(lines) == 1 and puffin.name in lines[0] and dv_table in lines[0], lines
    assert testing_catalog.load_table(dv_table).current_snapshot().snapshot_id == snapshot_before
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
@pytest.mark.spark35
@pytest.mark.usefixtures("spark")
def test_an_ingest_into_a_table_with_a_damaged_metadata_file_exits_2(testing_catalog, tmp_path, capsys) -> None:
    table, identifier = _table(testing_catalog)
    damaged = _damage(table, "metadata-truncated")
    source = tmp_path / "in"
    source.mkdir()
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array([99], pa.int64()), "category": ["z"]}, schema=SCHEMA), source / "a.parquet")
    files_before = _files_under(_local(table.metadata.location))
    capsys.readouterr()
    argv = ["--catalog", "testing", "--table", identifier, "--source", str(source), "--mode", "upsert", "--key", "id"]
    code = run_job("ingest", lambda: ingest_job.main(argv))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code == EXIT_USAGE and len(lines) == 1 and damaged.name in lines[0] and identifier in lines[0], lines
    assert _files_under(_local(table.metadata.location)) == files_before
