"""Tables our jobs write, read by our reader, Iceberg Java and DuckDB, each against a model of the operations.

Each test runs our jobs in-process (the spark-submit entry points' ``main``, on the session's Spark) on a small
table of the session's ``testing`` catalog, applies the same operations to a ``TableModel``, and checks every
reader's row count and order-independent checksum (each column too) against the model. To keep the suite cheap,
each test checks its table once, after the sequence of operations (a time-travel read stands for an earlier state),
and each test covers several points: every transform appears in a row-level test, and both delete modes appear on
partitioned and unpartitioned tables.
Parametrized by format version; compaction by strategy (``COMPACTION_STRATEGIES``: a strategy added to the compact
job adds one entry there).
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.manifest import DataFileContent

from spark_jobs import compact as compact_job
from spark_jobs import ingest as ingest_job
from spark_jobs import maintain as maintain_job
from tests.support.live_deletes import (
    live_data_file_first_row_ids,
    live_data_file_rows,
    live_deletion_vectors,
    live_position_delete_files,
    read_row_lineage,
)
from tests.support.table_model import Row, TableModel

pytestmark = pytest.mark.spark

CATALOG = "testing"
FORMAT_VERSIONS = [2, 3]
# (id, extra compact.py arguments); every strategy of the compact job belongs here.
COMPACTION_STRATEGIES = [
    ("bin-pack", []),
    ("sort", ["--strategy", "sort", "--sort-order", "s desc nulls last, truncate(s, 2), d, id", "--rewrite-all"]),
    ("z-order", ["--sort-order", "zorder(ts, d, price, s)", "--rewrite-all", "--var-length-contribution", "3"]),
]

ATTRS = pa.struct([("a", pa.int64()), ("b", pa.string())])
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("cat", pa.string()),
        ("s", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("d", pa.date32()),
        ("amount", pa.decimal128(10, 2)),
        ("price", pa.float64()),
        ("tags", pa.list_(pa.string())),
        ("attrs", ATTRS),
        ("props", pa.map_(pa.string(), pa.int64())),
    ]
)
_EPOCH = dt.datetime(2023, 12, 30, 22, tzinfo=dt.UTC)
_batches = itertools.count()


def rows(ids, version: int = 0) -> list[Row]:
    """Deterministic rows for ``ids``; ``version`` changes every non-key value (upserts)."""
    out = []
    for i in ids:
        out.append(
            {
                "id": i,
                "cat": "abc"[i % 3],
                "s": f"s{(i * 7) % 13:02d}-{version}",
                "ts": _EPOCH + dt.timedelta(hours=37 * i + version),
                "d": dt.date(2023, 11, 20) + dt.timedelta(days=9 * i),
                "amount": Decimal(f"{i * 3 - 50}.{(i + version) % 100:02d}"),
                "price": None if i % 10 == 0 else i * 1.25 + version,
                "tags": None if i % 11 == 0 else [f"t{i % 4}", f"v{version}"][: 1 + i % 2],
                "attrs": {"a": i * 10 + version, "b": None if i % 4 == 0 else f"b{i}"},
                "props": [("k", i), ("v", version)] if i % 5 else [],
            }
        )
    return out


def normalize(path: str) -> str:
    """A file URI without its scheme's slashes (Java writes ``file:/x``, we write ``file:///x``)."""
    return path.removeprefix("file:").lstrip("/")


def table_name(format_version: int, name: str) -> str:
    return f"interop_v{format_version}.{name}"


def ingest(tmp_path: Path, table: str, batch: list[Row], mode: str, *args: str, schema: pa.Schema = SCHEMA) -> dict:
    """Run the ingest job on ``batch`` (written as a Parquet source file) and return its result."""
    source = tmp_path / f"batch-{next(_batches)}.parquet"
    pq.write_table(pa.Table.from_pylist(batch, schema=schema), source)
    return ingest_job.main(["--catalog", CATALOG, "--table", table, "--source", str(source), "--mode", mode, *args])


def upsert_by_position(tmp_path: Path, readers, table: str, upserted: list[Row], format_version: int) -> None:
    """Upsert ``upserted`` with position deletes; on v3, with the row lineage Iceberg Java reads before and after:
    a replaced row keeps its ``_row_id`` with the upsert's sequence number (as Java's MERGE), a new key gets an id
    no row had, the other rows keep theirs, and our reader serves the same lineage as Java."""
    if format_version < 3:
        ingest(tmp_path, table, upserted, "upsert", "--key", "id", "--delete-mode", "position")
        return
    from spark_jobs.engine.table.catalog import load_catalog

    before = java_lineage(readers, table)
    ingest(tmp_path, table, upserted, "upsert", "--key", "id", "--delete-mode", "position")
    after = java_lineage(readers, table)
    loaded = load_catalog(CATALOG).load_table(table)
    sequence = loaded.current_snapshot().sequence_number
    batch = {row["id"] for row in upserted}
    replaced, others = sorted(batch & before.keys()), sorted(before.keys() - batch)
    assert replaced and {i: after[i] for i in replaced} == {i: (before[i][0], sequence) for i in replaced}
    assert {i: after[i] for i in others} == {i: before[i] for i in others}
    new_ids = {after[i][0] for i in batch - before.keys()}
    assert not new_ids & {row_id for row_id, _ in before.values()}
    assert len({row_id for row_id, _ in after.values()}) == len(after) == len(before.keys() | batch)
    assert {i: (row_id, seq) for i, row_id, seq in read_row_lineage(loaded)} == after


def java_lineage(readers, table: str) -> dict[int, tuple[int, int]]:
    """Each row's (``_row_id``, ``_last_updated_sequence_number``) as Iceberg Java reads them."""
    query = f"SELECT id, _row_id, _last_updated_sequence_number FROM {CATALOG}.{table}"
    return {i: (row_id, sequence) for i, row_id, sequence in readers.java.sql(query)}


def create_args(format_version: int) -> list[str]:
    """``--create-if-missing`` for a table of ``format_version``."""
    return ["--create-if-missing"] + ([] if format_version == 2 else ["--format-version", str(format_version)])


# Every transform; time transforms on one source column must not repeat (Java refuses redundant ones). The first
# puts each row in its own partition (hour), the second spreads rows over a few dozen.
IDENTITY_BUCKET_TRUNCATE_DAY_HOUR = "cat,bucket(4,id),truncate(2,s),day(d),hour(ts)"
YEAR_MONTH = "year(ts),month(d)"


@pytest.mark.parametrize("format_version", FORMAT_VERSIONS)
def test_appends_overwrites_and_time_travel(spark, readers, tmp_path, format_version) -> None:
    table, model = table_name(format_version, "overwrite_filter"), TableModel(SCHEMA)
    first = ingest(tmp_path, table, rows(range(40)), "append", *create_args(format_version))
    model.append(rows(range(40)))
    model.remember(first["snapshot_id"])
    ingest(tmp_path, table, rows(range(40, 60)), "append")
    model.append(rows(range(40, 60)))
    replacement = [row for row in rows(range(100, 130), version=1) if row["cat"] == "a"]
    ingest(tmp_path, table, replacement, "overwrite", "--overwrite-filter", "cat = 'a'")
    model.overwrite_where(lambda row: row["cat"] == "a", replacement)
    readers.check(table, model)
    readers.check(table, model, snapshot_id=first["snapshot_id"])

    table, model = table_name(format_version, "overwrite_dynamic"), TableModel(SCHEMA)
    ingest(tmp_path, table, rows(range(60)), "append", *create_args(format_version), "--partition-by", "cat")
    model.append(rows(range(60)))
    replacement = [row for row in rows(range(200, 230), version=2) if row["cat"] != "c"]
    ingest(tmp_path, table, replacement, "overwrite")
    model.overwrite_partitions(lambda row: row["cat"], replacement)
    readers.check(table, model)


@pytest.mark.parametrize("format_version", FORMAT_VERSIONS)
def test_upsert_and_delete_with_position_deletes(spark, readers, tmp_path, format_version) -> None:
    """Unpartitioned; on v3 the delete adds positions to data files the upsert's vectors already cover (a merge)."""
    table, model = table_name(format_version, "row_level_position"), TableModel(SCHEMA)
    key = ["--key", "id", "--delete-mode", "position"]
    ingest(tmp_path, table, rows(range(50)), "append", *create_args(format_version))
    ingest(tmp_path, table, rows(range(50, 90)), "append")
    model.append(rows(range(90)))
    upserted = rows([*range(10, 30), *range(100, 105)], version=1)
    upsert_by_position(tmp_path, readers, table, upserted, format_version)
    model.upsert(upserted, ["id"])
    deleted = rows([*range(0, 6), *range(60, 63), 12])
    ingest(tmp_path, table, deleted, "delete", *key)
    model.delete(deleted, ["id"])
    alive = readers.check(table, model, java_positions=format_version >= 3)
    if format_version >= 3:
        # Deletion vectors only, at most one live per data file, and Java drops exactly the positions they hold.
        from spark_jobs.engine.table.catalog import load_catalog

        iceberg_table = load_catalog(CATALOG).load_table(table)
        vectors = live_deletion_vectors(iceberg_table)
        assert vectors and len(vectors) == len({v.referenced_data_file for v, _ in vectors})
        assert max(len(positions) for _, positions in vectors) == 26  # ids 0-5 and 10-29 of the first file
        alive_by_file = {normalize(path): positions for path, positions in alive.items()}
        java_deleted = {}
        for path, row_count in live_data_file_rows(iceberg_table).items():
            gone = sorted(set(range(row_count)) - alive_by_file.get(normalize(path), set()))
            if gone:
                java_deleted[normalize(path)] = gone
        assert java_deleted == {normalize(v.referenced_data_file): positions for v, positions in vectors}


@pytest.mark.parametrize("format_version", FORMAT_VERSIONS)
def test_upsert_and_delete_with_equality_deletes(spark, readers, tmp_path, format_version) -> None:
    """Partitioned by identity, bucket, truncate, day and hour: an upserted row moves to another partition."""
    table, model = table_name(format_version, "row_level_equality"), TableModel(SCHEMA)
    key = ["--key", "id", "--delete-mode", "equality"]
    create = [*create_args(format_version), "--partition-by", IDENTITY_BUCKET_TRUNCATE_DAY_HOUR]
    ingest(tmp_path, table, rows(range(25)), "append", *create)  # one data file per row: keep the table small
    ingest(tmp_path, table, rows(range(25, 40)), "append")
    model.append(rows(range(40)))
    upserted = rows([*range(10, 20), *range(100, 103)], version=1)
    ingest(tmp_path, table, upserted, "upsert", *key)
    model.upsert(upserted, ["id"])
    deleted = rows([*range(0, 4), *range(30, 33)]) + rows([12], version=1)
    ingest(tmp_path, table, deleted, "delete", *key)
    model.delete(deleted, ["id"])
    readers.check(table, model)


@pytest.mark.parametrize("format_version", FORMAT_VERSIONS)
def test_added_top_level_and_nested_columns(spark, readers, tmp_path, format_version) -> None:
    """Files of the old schema read with null in the added columns and fields; the upsert writes equality deletes."""
    table, model = table_name(format_version, "schema_evolution"), TableModel(SCHEMA)
    ingest(tmp_path, table, rows(range(30)), "append", *create_args(format_version))
    model.append(rows(range(30)))
    more = pa.struct([("x", pa.int64()), ("y", pa.list_(pa.string()))])
    wider = pa.schema([*SCHEMA, ("extra", pa.string()), ("more", more)])

    def widen(batch: list[Row]) -> list[Row]:
        return [
            {
                **row,
                "extra": f"x{row['id']}" if row["id"] % 3 else None,
                "more": None if row["id"] % 4 == 0 else {"x": row["id"] * 2, "y": [f"y{row['id']}"]},
            }
            for row in batch
        ]

    added = widen(rows(range(30, 45)))
    ingest(tmp_path, table, added, "append", "--allow-schema-evolution", schema=wider)
    model.add_columns(wider)
    model.append(added)
    # Fields added inside existing structs (a nested one too), with the upsert that first writes them.
    attrs_c = pa.struct([*ATTRS, ("c", pa.int32())])
    more_z = pa.struct([*more, ("z", pa.struct([("w", pa.string())]))])
    widest = pa.schema([*(f.with_type(attrs_c) if f.name == "attrs" else f for f in SCHEMA), ("extra", pa.string())])
    widest = widest.append(pa.field("more", more_z))
    upserted = [
        {
            **row,
            "attrs": {**row["attrs"], "c": row["id"] % 7 or None},
            "more": row["more"] and {**row["more"], "z": {"w": f"w{row['id']}"} if row["id"] % 2 else None},
        }
        for row in widen(rows([*range(5, 12), 40], version=3))
    ]
    ingest(
        tmp_path,
        table,
        upserted,
        "upsert",
        "--key",
        "id",
        "--delete-mode",
        "equality",
        "--allow-schema-evolution",
        schema=widest,
    )
    model.add_columns(widest)
    model.upsert(upserted, ["id"])
    readers.check(table, model)


@pytest.mark.parametrize("strategy", [s[0] for s in COMPACTION_STRATEGIES])
@pytest.mark.parametrize("format_version", FORMAT_VERSIONS)
def test_compaction(spark, readers, tmp_path, format_version, strategy) -> None:
    table, model = table_name(format_version, f"compaction_{strategy.replace('-', '_')}"), TableModel(SCHEMA)
    ingest(tmp_path, table, rows(range(40)), "append", *create_args(format_version), "--partition-by", "cat")
    ingest(tmp_path, table, rows(range(40, 80)), "append")
    model.append(rows(range(80)))
    upserted = rows(range(10, 25), version=1)
    ingest(tmp_path, table, upserted, "upsert", "--key", "id")
    model.upsert(upserted, ["id"])
    deleted = rows([30, 31, 50, 77])
    ingest(tmp_path, table, deleted, "delete", "--key", "id", "--delete-mode", "equality")
    model.delete(deleted, ["id"])
    extra = dict(COMPACTION_STRATEGIES)[strategy]
    result = compact_job.main(["--catalog", CATALOG, "--table", table, "--min-input-files", "2", *extra])
    assert result["data_files_removed"] > 0 and result["rows_written"] == len(model.rows), result
    readers.check(table, model)


# On v3 the deletes are deletion vectors (no position delete files to rewrite); rewrite-manifests writes v3 manifests
# whose data files keep their first_row_id.
@pytest.mark.parametrize("format_version", FORMAT_VERSIONS)
def test_position_delete_and_manifest_rewrites(spark, readers, tmp_path, format_version) -> None:
    table, model = table_name(format_version, "maintenance_rewrites"), TableModel(SCHEMA)
    ingest(tmp_path, table, rows(range(45)), "append", *create_args(format_version), "--partition-by", "cat")
    ingest(tmp_path, table, rows(range(45, 90)), "append")
    model.append(rows(range(90)))
    for batch, version in (([3, 4, 33, 64, 80, 95], 1), ([5, 34, 65, 66, 7, 33, 95], 2)):  # 33, 95 twice
        upserted = rows(batch, version=version)
        upsert_by_position(tmp_path, readers, table, upserted, format_version)
        model.upsert(upserted, ["id"])
    # a compaction of one partition leaves position deletes naming files it removed
    compact_job.main(["--catalog", CATALOG, "--table", table, "--where", "cat = 'a'", "--rewrite-all"])
    deletes = maintain_job.main(
        ["rewrite-position-deletes", "--catalog", CATALOG, "--table", table, "--min-input-files", "2"]
    )
    assert (deletes.get("delete_files_removed", 0) > 0) == (format_version == 2), deletes
    # one check of the readers covers both rewrites: the manifest rewrite carries the rewritten deletes as they are
    manifests = maintain_job.main(["rewrite-manifests", "--catalog", CATALOG, "--table", table])
    assert manifests["operation"] == "replace" and manifests["manifests_after"] < manifests["manifests_before"]
    readers.check(table, model)


@pytest.mark.parametrize("format_version", FORMAT_VERSIONS)
def test_expire_snapshots_and_remove_orphan_files(spark, readers, tmp_path, format_version) -> None:
    """Partitioned by year and month; the upsert writes position deletes (deletion vectors on v3)."""
    table, model = table_name(format_version, "expiry"), TableModel(SCHEMA)
    ingest(tmp_path, table, rows(range(30)), "append", *create_args(format_version), "--partition-by", YEAR_MONTH)
    ingest(tmp_path, table, rows(range(30, 60)), "append")
    model.append(rows(range(60)))
    upserted = rows([*range(0, 40, 3), 70], version=1)
    ingest(tmp_path, table, upserted, "upsert", "--key", "id")
    model.upsert(upserted, ["id"])
    now_ms = str(int(time.time() * 1000) + 1)
    result = maintain_job.main(
        ["expire-snapshots", "--catalog", CATALOG, "--table", table, "--older-than", now_ms, "--retain-last", "1"]
    )
    assert len(result["expired_snapshot_ids"]) == 2, result
    # Orphan removal with a cutoff in the future: only the planted file goes, every live file (v3: the Puffin files of
    # the deletion vectors) stays, which the readers' check below proves.
    from spark_jobs.engine.table.catalog import load_catalog

    location = load_catalog(CATALOG).load_table(table).location()
    planted = Path(location.removeprefix("file:").removeprefix("//")) / "data" / "left-by-a-failed-write.parquet"
    planted.write_bytes(b"orphan")
    future_ms = str(int(time.time() * 1000) + 60_000)
    orphans = ["remove-orphan-files", "--catalog", CATALOG, "--table", table, "--older-than", future_ms]
    removed = maintain_job.main([*orphans, "--allow-short-retention"])
    assert removed["deleted_orphan_files"] == 1 and not planted.exists(), removed
    readers.check(table, model)


def test_a_puffin_file_with_two_vectors_reads_back_with_java(readers, tmp_path) -> None:
    import numpy as np
    from pyiceberg.io.pyarrow import PyArrowFileIO

    from spark_jobs.engine.write.deletion_vector_files import DeletionVectorTarget, write_deletion_vectors

    targets = [
        DeletionVectorTarget("file:///d/a.parquet", 0, (), np.array([5, 1, 2**33])),
        DeletionVectorTarget("file:///d/b.parquet", 0, (), np.array([0, 7])),
    ]
    path = f"file://{tmp_path}/two.puffin"
    described = write_deletion_vectors(targets, PyArrowFileIO(), lambda: path)
    blobs = readers.java.puffin_blobs(path)
    assert [b["type"] for b in blobs] == ["deletion-vector-v1"] * 2
    for blob, item in zip(blobs, described, strict=True):
        assert (blob["offset"], blob["length"]) == (item["content_offset"], item["content_size_in_bytes"])
        assert blob["bytes_read"] == blob["length"] and blob["compression"] is None
        assert blob["properties"]["referenced-data-file"] == item["referenced_data_file"]
        assert blob["properties"]["cardinality"] == str(item["record_count"])
        assert blob["fields"] == [2147483645]


def test_position_deletes_of_a_table_upgraded_to_v3_merge_into_deletion_vectors(
    spark, readers, iceberg_java, tmp_path
) -> None:
    """A v2 table with position deletes (ours file-scoped, Java's partition-scoped), upgraded to v3 by Java.

    Our row-level writes then add deletion vectors holding each data file's old positions too and drop the
    file-scoped delete files they replace (as Java does); partition-scoped ones stay for the files without a vector.
    Java then deletes on top of our vectors, and reads row ids that follow the first row ids our commits assigned
    (the files written before the upgrade included).
    """
    table, model = table_name(2, "upgraded_to_v3"), TableModel(SCHEMA)
    ingest(tmp_path, table, rows(range(30)), "append", *create_args(2), "--partition-by", "cat")
    ingest(tmp_path, table, rows(range(30, 60)), "append")
    model.append(rows(range(60)))
    ours_v2 = rows([3, 4])  # cat a and cat b, one data file each: file-scoped position delete files
    ingest(tmp_path, table, ours_v2, "delete", "--key", "id", "--delete-mode", "position")
    model.delete(ours_v2, ["id"])
    java_table = f"{CATALOG}.{table}"
    iceberg_java.sql(
        f"ALTER TABLE {java_table} SET TBLPROPERTIES "
        "('write.delete.mode'='merge-on-read', 'write.delete.granularity'='partition')"
    )
    iceberg_java.sql(f"DELETE FROM {java_table} WHERE id IN (6, 36, 7, 37)")  # both files of cat a and of cat b
    model.delete(rows([6, 36, 7, 37]), ["id"])
    iceberg_java.sql(f"ALTER TABLE {java_table} SET TBLPROPERTIES ('format-version'='3')")

    files_of = {  # data file -> its ids in file order (row positions)
        path: pq.read_table(path.removeprefix("file:").removeprefix("//"), columns=["id"]).column("id").to_pylist()
        for path in live_data_file_rows(_load(table))
    }
    a_first, a_second = (next(p for p, ids in files_of.items() if i in ids) for i in (3, 36))
    before = live_position_delete_files(_load(table))  # delete file -> the data file it is scoped to, or None
    assert a_first in before.values() and list(before.values()).count(None) == 2, before
    upserted = rows([9, 12, 61], version=1)  # cat a, first file: its vector merges ids 3 and 6
    ingest(tmp_path, table, upserted, "upsert", "--key", "id")
    model.upsert(upserted, ["id"])
    for deleted in (rows([39]), rows([15])):  # the second file of cat a; then the first file's vector again
        ingest(tmp_path, table, deleted, "delete", "--key", "id")
        model.delete(deleted, ["id"])

    loaded = _load(table)
    assert loaded.metadata.format_version == 3
    vectors = dict(
        (vector.referenced_data_file, positions)
        for vector, positions in live_deletion_vectors(loaded, position_delete_files=True)
    )
    assert sorted(vectors) == sorted([a_first, a_second])
    assert [files_of[a_first][p] for p in vectors[a_first]] == [3, 6, 9, 12, 15]
    assert [files_of[a_second][p] for p in vectors[a_second]] == [36, 39]
    # ours for cat a's first file went with the first vector; ours for cat b and Java's partition-scoped files stay
    assert live_position_delete_files(loaded) == {path: s for path, s in before.items() if s != a_first}
    # Java writes on after us (its vector merges ours), and its row ids are the first row ids our commits assigned
    iceberg_java.sql(f"DELETE FROM {java_table} WHERE id = 42")  # cat a, second file
    model.delete(rows([42]), ["id"])
    readers.check(table, model)
    first_row_ids = {normalize(path): first for path, first in live_data_file_first_row_ids(_load(table)).items()}
    lineage = iceberg_java.sql(f"SELECT _file, _pos, _row_id FROM {java_table}")
    assert len(lineage) == len(model.rows) and len({row_id for _, _, row_id in lineage}) == len(lineage)
    assert all(row_id == first_row_ids[normalize(path)] + pos for path, pos, row_id in lineage)

    # rewrite-position-deletes on the upgraded table: every position delete file left becomes deletion vectors in
    # one pass (Java's partition-scoped ones and ours for cat b), the readers return the same rows and row ids
    result = maintain_job.main(["rewrite-position-deletes", "--catalog", CATALOG, "--table", table])
    assert result["delete_files_removed"] == len(live_position_delete_files(loaded)) > 0
    converted = _load(table)
    assert live_position_delete_files(converted) == {}
    vectors = [vector.referenced_data_file for vector, _ in live_deletion_vectors(converted)]
    # one vector per data file with deletes: cat a's two (they had one already) and cat b's two (converted)
    assert len(vectors) == len(set(vectors)) == 4 and {a_first, a_second} <= set(vectors)
    readers.check(table, model)
    assert sorted(iceberg_java.sql(f"SELECT _file, _pos, _row_id FROM {java_table}")) == sorted(lineage)


def test_equality_deletes_convert_into_deletion_vectors(spark, readers, tmp_path) -> None:
    """A v3 table's equality deletes (partition-scoped, and on top of deletion vectors) become deletion vectors: first
    in the partitions ``--where`` selects, then everywhere; Java and DuckDB read the model each time."""
    table, model = table_name(3, "equality_to_vectors"), TableModel(SCHEMA)
    ingest(tmp_path, table, rows(range(40)), "append", *create_args(3), "--partition-by", "cat")
    ingest(tmp_path, table, rows(range(40, 70)), "append")
    model.append(rows(range(70)))
    by_position = rows([1, 2, 44])
    ingest(tmp_path, table, by_position, "delete", "--key", "id", "--delete-mode", "position")
    model.delete(by_position, ["id"])
    for deleted in (rows([0, 5, 41, 3, 6]), rows([9, 10, 50])):
        ingest(tmp_path, table, deleted, "delete", "--key", "id", "--delete-mode", "equality")
        model.delete(deleted, ["id"])
    upserted = rows([11, 12, 75], version=1)
    ingest(tmp_path, table, upserted, "upsert", "--key", "id", "--delete-mode", "equality")
    model.upsert(upserted, ["id"])

    def equality_files() -> int:
        loaded = _load(table)
        return sum(
            1
            for manifest in loaded.current_snapshot().manifests(loaded.io)
            for entry in manifest.fetch_manifest_entry(loaded.io)
            if entry.data_file.content == DataFileContent.EQUALITY_DELETES
        )

    before = equality_files()
    first = maintain_job.main(
        ["convert-equality-deletes", "--catalog", CATALOG, "--table", table, "--where", "cat = 'a'"]
    )
    assert first["delete_files_removed"] > 0 and equality_files() == before - first["delete_files_removed"] > 0
    readers.check(table, model)
    maintain_job.main(["convert-equality-deletes", "--catalog", CATALOG, "--table", table])
    assert equality_files() == 0
    vectors = [vector.referenced_data_file for vector, _ in live_deletion_vectors(_load(table))]
    assert len(vectors) == len(set(vectors))
    readers.check(table, model)


def _load(table: str):
    from spark_jobs.engine.table.catalog import load_catalog

    return load_catalog(CATALOG).load_table(table)
