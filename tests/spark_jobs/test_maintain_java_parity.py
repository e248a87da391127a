"""The maintain job beside Iceberg Java's procedures on tables Java wrote (v2 and v3): the same decisions.

One Iceberg Java session for the module (its own SQLite catalog ``parity``). Orphans: our dry run and Java's
``remove_orphan_files`` dry run name the same files on the same table state (statistics and partition statistics
files, deletion vectors or position deletes, metadata files dropped from the log, files only a branch or tag
references, strays of several ages, hidden names, escaped partition directories); after our real run Java still
reads every ref and every snapshot. Expiry: twin tables built by the same Java statements, Java's
``expire_snapshots`` on one and ours on the other, expire the same snapshots and refs and delete the same number of
files of each kind; afterwards neither twin has an orphan Java would take. Rewrites: our position delete and
manifest rewrites after Java's compaction leave what Java reads unchanged and no dangling delete file.

The orphan and expiry tables start as v2 and are upgraded to v3 midway (``2to3``), so one table holds position
delete files and deletion vectors both; ``AIP_MAINTAIN_PARITY_VERSIONS=2,3,2to3`` also runs pure v2 and v3 ones.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from spark_jobs import maintain as maintain_job
from tests.support import java_env
from tests.support.iceberg_java import IcebergJava

pytestmark = pytest.mark.spark

CATALOG = "parity"
DAY_S = 24 * 60 * 60
VERSIONS = [v.strip() for v in os.environ.get("AIP_MAINTAIN_PARITY_VERSIONS", "2to3").split(",") if v.strip()]


@dataclass
class Parity:
    """Java's session, our catalog over the same database, and the warehouse folder."""

    java: IcebergJava
    catalog: SqlCatalog
    warehouse: Path

    def sql(self, query: str) -> list[list]:
        return self.java.sql(query.replace("T.", f"{CATALOG}.m."))

    def folder(self, name: str) -> Path:
        return self.warehouse / "m" / name


@pytest.fixture(scope="module")
def parity(tmp_path_factory) -> Iterator[Parity]:
    root = tmp_path_factory.mktemp("maintain-java-parity")
    uri, warehouse = f"sqlite:///{root}/catalog.db", root / "warehouse"
    catalog = SqlCatalog(CATALOG, uri=uri, warehouse=f"file://{warehouse}")  # creates the catalog's tables
    java = IcebergJava(
        java_env.ensure(), catalog=CATALOG, catalog_uri=uri, warehouse=f"file://{warehouse}", log_path=root / "java.log"
    )
    try:
        java.sql(f"CREATE NAMESPACE {CATALOG}.m")
        yield Parity(java, catalog, warehouse)
    finally:
        java.close()


@pytest.fixture
def job_catalog(parity, monkeypatch):
    """The maintain job finds the ``parity`` catalog through pyiceberg's configuration."""
    monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE", "sql")
    monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI", parity.catalog.properties["uri"])
    monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__WAREHOUSE", f"file://{parity.warehouse}")


def _plain(location: str) -> str:
    return location.removeprefix("file://").removeprefix("file:")


def _timestamp(epoch_ms: int) -> str:
    seconds = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch_ms // 1000))
    return f"TIMESTAMP '{seconds}.{epoch_ms % 1000:03d}'"


def _age_all(folder: Path, days: float) -> None:
    moment = time.time() - days * DAY_S
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, (moment, moment))


def _java_orphans(parity: Parity, name: str, older_than_ms: int) -> set[str]:
    rows = parity.sql(
        f"CALL {CATALOG}.system.remove_orphan_files(table => 'm.{name}', older_than => {_timestamp(older_than_ms)}, "
        "dry_run => true)"
    )
    return {_plain(row[0]) for row in rows}


def _ref_reads(parity: Parity, name: str) -> dict[str, list]:
    """Row count and a hash sum of what Java reads at every ref and every snapshot of the table (one query)."""
    refs = parity.sql(f"SELECT name FROM T.{name}.refs")
    snapshots = parity.sql(f"SELECT snapshot_id FROM T.{name}.snapshots")
    versions = [(f"ref {ref}", f"'{ref}'") for (ref,) in refs] + [(f"snapshot {s}", str(s)) for (s,) in snapshots]
    query = " UNION ALL ".join(
        f"SELECT '{label}', count(*), sum(xxhash64(*)) FROM T.{name} VERSION AS OF {version}"
        for label, version in versions
    )
    return {label: [rows, checksum] for label, rows, checksum in parity.sql(query)}


def _upgrade_midway(parity: Parity, name: str, versions: str) -> None:
    if versions == "2to3":
        parity.sql(f"ALTER TABLE T.{name} SET TBLPROPERTIES ('format-version'='3')")


def _build_with_every_kind_of_file(parity: Parity, name: str, versions: str) -> None:
    """A Java table whose metadata references every kind of file Java writes, and old metadata off the log."""
    format_version = versions[0]
    parity.sql(
        f"CREATE TABLE T.{name} (id bigint, _p string, q string) USING iceberg PARTITIONED BY (_p, q) "
        f"TBLPROPERTIES ('format-version'='{format_version}', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.metadata.previous-versions-max'='3')"
    )
    for i in range(3):
        rows = [(i, "'a'", "'x/y z'"), (i + 10, "'_b'", "'%25'"), (i + 20, "null", "'='")]
        values = ", ".join(f"({n}, {p}, {q}), ({n + 100}, {p}, {q})" for n, p, q in rows)  # two rows per file
        parity.sql(f"INSERT INTO T.{name} VALUES {values}")
    parity.sql(f"DELETE FROM T.{name} WHERE id IN (1, 11)")
    parity.sql(f"ALTER TABLE T.{name} CREATE TAG t1")
    _upgrade_midway(parity, name, versions)
    parity.sql(f"ALTER TABLE T.{name} CREATE BRANCH b1")
    parity.sql(f"INSERT INTO T.{name}.branch_b1 VALUES (100, 'a', 'branch only')")
    parity.sql(f"DELETE FROM T.{name}.branch_b1 WHERE id = 20")
    parity.sql(f"UPDATE T.{name} SET q = 'x/y z' WHERE id = 21")
    parity.sql(f"CALL {CATALOG}.system.compute_table_stats(table => 'm.{name}')")
    parity.sql(f"CALL {CATALOG}.system.compute_partition_stats(table => 'm.{name}')")
    parity.sql(f"INSERT INTO T.{name} VALUES (50, 'c', 'last')")


@pytest.mark.parametrize("versions", VERSIONS)
def test_orphans_are_the_files_java_names_and_every_ref_still_reads(parity, job_catalog, versions):
    name = f"orphans_v{versions}"
    _build_with_every_kind_of_file(parity, name, versions)
    folder = parity.folder(name)
    table = parity.catalog.load_table(f"m.{name}")
    assert table.metadata.statistics and table.metadata.partition_statistics
    formats = {row[0] for row in parity.sql(f"SELECT DISTINCT file_format FROM T.{name}.all_delete_files")}
    assert formats == {"2": {"PARQUET"}, "3": {"PUFFIN"}, "2to3": {"PARQUET", "PUFFIN"}}[versions]
    strays = [
        "data/stray.parquet",
        "data/_p=a/q=x%2Fy+z/stray.parquet",
        "data/_p=_b/stray-in-a-partition-dir.parquet",
        "metadata/stray-m0.avro",
        "metadata/00000-stray.metadata.json",
        "other/dir/notes.txt",
    ]
    hidden = ["data/.other.parquet.crc", "data/_SUCCESS", "data/_x=1/stray.parquet", "_temporary/0/part.parquet"]
    for relative in [*strays, *hidden, "data/fresh.parquet"]:
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(b"no metadata references this")
    (folder / "data/.stray.parquet.crc").write_bytes(b"the checksum Java's file system keeps beside a file")
    _age_all(folder, days=4)
    fresh = time.time() - 1 * DAY_S
    os.utime(folder / "data/fresh.parquet", (fresh, fresh))
    older_than_ms = int((time.time() - 2 * DAY_S) * 1000)
    reads_before = _ref_reads(parity, name)

    table_args = ["--catalog", CATALOG, "--table", f"m.{name}", "--older-than", str(older_than_ms)]
    planned = maintain_job.main(["remove-orphan-files", *table_args, "--dry-run"])
    ours = {_plain(location) for location in planned["orphan_file_locations"]}
    assert ours == _java_orphans(parity, name, older_than_ms)
    old_metadata = {p for p in ours if p.endswith(".metadata.json") and "stray" not in p}
    assert old_metadata  # the metadata files the log dropped are orphans for both
    assert {str(folder / relative) for relative in strays} == ours - old_metadata

    done = maintain_job.main(["remove-orphan-files", *table_args])
    assert done["deleted_orphan_files"] == len(ours) and done["files_failed"] == {}
    assert _ref_reads(parity, name) == reads_before
    assert _java_orphans(parity, name, older_than_ms) == set()
    assert all((folder / relative).exists() for relative in [*hidden, "data/fresh.parquet"])
    assert not (folder / "data/.stray.parquet.crc").exists()  # went with its file, as in Java


def _twin_history(parity: Parity, name: str, versions: str) -> int:
    """Snapshots on main, a kept tag and branch, a tag and a branch past the table's ref age; returns older_than."""
    format_version = versions[0]
    parity.sql(
        f"CREATE TABLE T.{name} (id bigint, p string) USING iceberg PARTITIONED BY (p) "
        f"TBLPROPERTIES ('format-version'='{format_version}', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'history.expire.max-ref-age-ms'='1')"
    )
    parity.sql(f"INSERT INTO T.{name} VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    parity.sql(f"ALTER TABLE T.{name} CREATE TAG gone_tag")
    parity.sql(f"INSERT INTO T.{name} VALUES (4, 'a'), (5, 'b'), (6, 'a')")
    parity.sql(f"DELETE FROM T.{name} WHERE id = 6")
    _upgrade_midway(parity, name, versions)
    parity.sql(f"ALTER TABLE T.{name} CREATE TAG kept_tag RETAIN 3650 DAYS")
    parity.sql(f"ALTER TABLE T.{name} CREATE BRANCH b RETAIN 3650 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS")
    parity.sql(f"ALTER TABLE T.{name} CREATE BRANCH gone_branch")
    for i in range(3):
        parity.sql(f"INSERT INTO T.{name}.branch_b VALUES ({30 + i}, 'c')")
    parity.sql(f"DELETE FROM T.{name}.branch_b WHERE id = 4")
    parity.sql(f"INSERT INTO T.{name}.branch_gone_branch VALUES (40, 'd')")
    parity.sql(f"DELETE FROM T.{name} WHERE id = 2")
    parity.sql(f"CALL {CATALOG}.system.compute_table_stats(table => 'm.{name}')")
    parity.sql(f"CALL {CATALOG}.system.compute_partition_stats(table => 'm.{name}')")
    parity.sql(f"INSERT OVERWRITE T.{name} SELECT * FROM T.{name} WHERE p = 'a'")
    (older_than_ms,) = parity.sql(f"SELECT unix_millis(max(committed_at)) FROM T.{name}.snapshots")[0]
    parity.sql(f"UPDATE T.{name} SET id = 10 WHERE id = 1")
    parity.sql(f"CALL {CATALOG}.system.compute_table_stats(table => 'm.{name}')")
    return int(older_than_ms)


def _ordinals(parity: Parity, name: str) -> list[int]:
    return [row[0] for row in parity.sql(f"SELECT snapshot_id FROM T.{name}.snapshots ORDER BY committed_at")]


def _files_by_kind(folder: Path) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for path in folder.rglob("*"):
        if not path.is_file() or path.name.startswith("."):
            continue
        stem = path.name
        if stem.startswith("snap-"):
            kind = "manifest list"
        elif stem.endswith(".avro"):
            kind = "manifest"
        elif stem.endswith(".stats") or stem.startswith("partition-stats"):
            kind = "statistics"
        elif "deletes" in stem:
            kind = "delete"
        elif stem.endswith(".parquet"):
            kind = "data"
        else:
            kind = "metadata"
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


@pytest.mark.parametrize("versions", VERSIONS)
def test_expiry_of_twin_histories_matches_javas(parity, job_catalog, versions):
    java_name, our_name = f"expire_java_v{versions}", f"expire_ours_v{versions}"
    java_older_than = _twin_history(parity, java_name, versions)
    our_older_than = _twin_history(parity, our_name, versions)
    java_before, our_before = _ordinals(parity, java_name), _ordinals(parity, our_name)
    assert len(java_before) == len(our_before)

    (java_counts,) = parity.sql(
        f"CALL {CATALOG}.system.expire_snapshots(table => 'm.{java_name}', older_than => {_timestamp(java_older_than)})"
    )
    ours = maintain_job.main(
        ["expire-snapshots", "--catalog", CATALOG, "--table", f"m.{our_name}", "--older-than", str(our_older_than)]
    )
    java_kept = set(_ordinals(parity, java_name))
    assert [i for i, s in enumerate(our_before) if s in ours["expired_snapshot_ids"]] == [
        i for i, s in enumerate(java_before) if s not in java_kept
    ]
    assert ours["expired_snapshot_ids"]  # the history expires something on every path the rules take
    assert ours["removed_refs"] == ["gone_branch", "gone_tag"]
    assert sorted(r[0] for r in parity.sql(f"SELECT name FROM T.{java_name}.refs")) == ["b", "kept_tag", "main"]
    keys = [
        "deleted_data_files",
        "deleted_position_delete_files",
        "deleted_equality_delete_files",
        "deleted_manifests",
        "deleted_manifest_lists",
        "deleted_statistics_files",
    ]
    assert [ours[key] for key in keys] == list(java_counts)
    assert ours["files_failed"] == {} and ours["deleted_statistics_files"] == 2
    assert _files_by_kind(parity.folder(our_name)) == _files_by_kind(parity.folder(java_name))
    java_reads, our_reads = _ref_reads(parity, java_name), _ref_reads(parity, our_name)
    assert {r: v for r, v in java_reads.items() if r.startswith("ref")} == {
        r: v for r, v in our_reads.items() if r.startswith("ref")
    }
    assert all(rows > 0 for rows, _ in our_reads.values())
    for name in (java_name, our_name):
        _age_all(parity.folder(name), days=4)
        assert _java_orphans(parity, name, int((time.time() - 2 * DAY_S) * 1000)) == set()


@pytest.mark.parametrize("format_version", [2, 3])
def test_rewrites_after_javas_compaction_keep_what_java_reads(parity, job_catalog, format_version):
    name = f"rewrites_v{format_version}"
    parity.sql(
        f"CREATE TABLE T.{name} (id bigint, p string) USING iceberg PARTITIONED BY (p) "
        f"TBLPROPERTIES ('format-version'='{format_version}', 'write.delete.mode'='merge-on-read')"
    )
    for i in range(3):
        parity.sql(f"INSERT INTO T.{name} VALUES ({i}, 'a'), ({i + 10}, 'b'), ({i + 20}, 'a')")
    parity.sql(f"DELETE FROM T.{name} WHERE id IN (1, 11)")
    parity.sql(f"DELETE FROM T.{name} WHERE id IN (0, 20)")
    parity.sql(f"CALL {CATALOG}.system.rewrite_data_files(table => 'm.{name}', where => \"p = 'b'\")")
    rows = parity.java.checksum(f"m.{name}")
    table_args = ["--catalog", CATALOG, "--table", f"m.{name}"]
    maintain_job.main(["rewrite-position-deletes", *table_args, "--rewrite-all"])
    maintain_job.main(["rewrite-manifests", *table_args])
    assert parity.java.checksum(f"m.{name}") == rows
    live_data = {r[0] for r in parity.sql(f"SELECT file_path FROM T.{name}.data_files")}
    deletes = parity.sql(f"SELECT partition.p, referenced_data_file, content FROM T.{name}.delete_files")
    assert deletes and all(content == 1 for _, _, content in deletes)
    assert {p for p, _, _ in deletes} == {"a"}  # the compacted partition's deletes were dangling: none is left
    if format_version >= 3:  # deletion vectors: one per data file, each of a live data file
        referenced = [r[1] for r in deletes]
        assert len(referenced) == len(set(referenced)) and set(referenced) <= live_data
    manifests = parity.sql(f"SELECT content, path FROM T.{name}.manifests")
    assert {content for content, _ in manifests} == {0, 1}
