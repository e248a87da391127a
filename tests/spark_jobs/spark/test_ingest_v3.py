"""Ingest into format v3 tables on real Spark: row lineage, deletion vectors (merged, one per data file), races with
compaction in both orders, and the refusal of v3 features we do not write."""

from __future__ import annotations

import datetime
import itertools

import pyarrow as pa
import pytest
from pyiceberg.manifest import ManifestContent

from spark_jobs import compact as compact_job
from spark_jobs.engine.commit.producer import CommitConflictError
from spark_jobs.engine.jobs import ingest_job
from spark_jobs.engine.planning.scan_tasks import DeletionVector
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import EngineError
from spark_jobs.engine.table.manifest_entries import (
    first_row_id,
    manifest_first_row_id,
    read_live_entries,
    read_manifest_list,
)
from spark_jobs.spark import compact as spark_compact
from spark_jobs.spark import ingest as spark_ingest
from spark_jobs.spark.ingest import IngestOptions, ingest
from tests.support.live_deletes import live_deletion_vectors, live_row_lineage, read_row_lineage

pytestmark = [pytest.mark.spark, pytest.mark.spark35]

CATALOG = "testing"
UTC = datetime.UTC
_names = itertools.count()


def _table_name(prefix: str) -> str:
    return f"ingest_v3_tests.{prefix}_{next(_names)}"


def _frame(spark, ids, name="v1"):
    rows = [(i, f"{name}-{i}", datetime.datetime(2024, 1, 1 + i % 3, 12, tzinfo=UTC)) for i in ids]
    return spark.createDataFrame(rows, "id long, name string, ts timestamp").coalesce(1)


def _create(spark, table: str, ids) -> None:
    options = IngestOptions(mode="append", create_if_missing=True, format_version=3)
    ingest(spark, CATALOG, table, _frame(spark, ids), options)


def _ids(table: str) -> list[int]:
    return sorted(open_read_session(CATALOG, table).to_arrow().column("id").to_pylist())


def _vectors(testing_catalog, table: str) -> list[tuple[DeletionVector, list[int]]]:
    return live_deletion_vectors(testing_catalog.load_table(table))


def test_a_v3_table_gets_row_lineage_on_every_commit(spark, testing_catalog) -> None:
    table = _table_name("lineage")
    _create(spark, table, range(10))
    ingest(spark, CATALOG, table, _frame(spark, range(10, 25)), IngestOptions(mode="append"))
    ingest(spark, CATALOG, table, _frame(spark, [3, 4], "v2"), IngestOptions(mode="upsert", key=("id",)))
    loaded = testing_catalog.load_table(table)
    assert loaded.metadata.format_version == 3
    first, second, third = [loaded.metadata.snapshot_by_id(s.snapshot_id) for s in loaded.snapshots()]
    assert (first.first_row_id, first.added_rows) == (0, 10)
    assert (second.first_row_id, second.added_rows) == (10, 15)
    assert third.first_row_id == 25 and third.added_rows == 2
    assert loaded.metadata.next_row_id == 27
    ids_seen: list[tuple[int, int]] = []
    for manifest in read_manifest_list(loaded.current_snapshot(), loaded.io):
        if manifest.content != ManifestContent.DATA:
            assert manifest_first_row_id(manifest) is None
            continue
        for entry in read_live_entries(manifest, loaded.io):
            ids_seen.append((first_row_id(entry.data_file), entry.data_file.record_count))
    # The data files' row id ranges are disjoint and cover exactly the ids assigned.
    ranges = sorted(ids_seen)
    assert ranges[0][0] == 0 and sum(count for _, count in ranges) == 27
    assert all(start + count == next_start for (start, count), (next_start, _) in itertools.pairwise(ranges))
    assert _ids(table) == list(range(25))


def test_an_overwrite_by_filter_keeps_the_lineage_of_the_rows_it_writes_back(spark, testing_catalog) -> None:
    """The rows of a replaced file the filter does not match are written back with the row ids and sequence numbers
    they had; the new rows get new ids (null in the file, assigned by the commit)."""
    table = _table_name("overwrite_lineage")
    _create(spark, table, range(10))
    before = live_row_lineage(testing_catalog.load_table(table))
    options = IngestOptions(mode="overwrite", overwrite_filter="id >= 3 and id < 6")
    ingest(spark, CATALOG, table, _frame(spark, [4, 30], "v2"), options)
    after = live_row_lineage(testing_catalog.load_table(table))
    kept = [0, 1, 2, 6, 7, 8, 9]
    assert sorted(after) == sorted([*kept, 4, 30]) and {i: after[i] for i in kept} == {i: before[i] for i in kept}
    new_ids = sorted(after[i][0] for i in (4, 30))
    assert new_ids[0] >= 10 and after[4][1] == after[30][1] > before[0][1]
    assert _ids(table) == sorted([*kept, 4, 30])


def _moved_frame(spark, ids, name):
    """Rows ``ids`` named ``name``, each a day later than ``_frame``'s (another partition of a table by day)."""
    rows = [(i, f"{name}-{i}", datetime.datetime(2024, 1, 1 + (i + 1) % 3, 12, tzinfo=UTC)) for i in ids]
    return spark.createDataFrame(rows, "id long, name string, ts timestamp").coalesce(1)


def _lineage(testing_catalog, table: str) -> dict[int, tuple[int, int]]:
    rows = read_row_lineage(testing_catalog.load_table(table))
    assert len({i for i, _, _ in rows}) == len(rows), f"a key live twice: {rows}"
    return {i: (row_id, sequence) for i, row_id, sequence in rows}


@pytest.mark.parametrize("partition_by", [None, "day(ts)"], ids=["unpartitioned", "by-day"])
def test_a_v3_upsert_keeps_the_row_ids_of_the_rows_it_replaces(
    spark, testing_catalog, monkeypatch, partition_by
) -> None:
    """As Iceberg Java's MERGE: a replaced row's ``_row_id`` goes with the row written in its place (moved to another
    partition too), whose sequence number is the commit's; a new key's row gets a new id. Twice: once with the
    batch's keys shipped to the key scan, once joined in Spark."""
    table = _table_name("upsert_lineage")
    options = IngestOptions(mode="append", create_if_missing=True, format_version=3, partition_by=partition_by)
    ingest(spark, CATALOG, table, _frame(spark, range(10)), options)
    before = _lineage(testing_catalog, table)
    assert sorted(row_id for row_id, _ in before.values()) == list(range(10))
    upsert = IngestOptions(mode="upsert", key=("id",))
    ingest(spark, CATALOG, table, _moved_frame(spark, [3, 4, 7, 30, 31], "v2"), upsert)
    loaded = testing_catalog.load_table(table)
    first = _lineage(testing_catalog, table)
    sequence = loaded.current_snapshot().sequence_number
    assert {i: first[i] for i in (3, 4, 7)} == {i: (before[i][0], sequence) for i in (3, 4, 7)}
    assert {i: first[i] for i in (0, 1, 2, 5, 6, 8, 9)} == {i: before[i] for i in (0, 1, 2, 5, 6, 8, 9)}
    new_ids = [first[i][0] for i in (30, 31)]
    assert min(new_ids) >= 10 and first[30][1] == first[31][1] == sequence
    assert len({row_id for row_id, _ in first.values()}) == len(first) == 12
    assert all(row_id < loaded.metadata.next_row_id for row_id, _ in first.values())

    monkeypatch.setattr(spark_ingest, "SHIPPED_KEYS_MAX", 0)  # the batch's keys joined with the key scan in Spark
    ingest(spark, CATALOG, table, _frame(spark, [3, 30, 40], "v3"), upsert)
    second = _lineage(testing_catalog, table)
    sequence = testing_catalog.load_table(table).current_snapshot().sequence_number
    assert second[3] == (before[3][0], sequence) and second[30] == (first[30][0], sequence)
    assert second[40][0] not in {row_id for row_id, _ in first.values()}
    assert {i: second[i] for i in (4, 7, 31)} == {i: first[i] for i in (4, 7, 31)}
    assert len({row_id for row_id, _ in second.values()}) == len(second) == 13
    read = open_read_session(CATALOG, table, columns=["id", "name"]).to_arrow().to_pylist()
    rows = {row["id"]: row["name"] for row in read}
    assert (rows[3], rows[4], rows[30], rows[40], rows[0]) == ("v3-3", "v2-4", "v3-30", "v3-40", "v1-0")


def test_a_v3_upsert_replacing_a_key_held_twice_keeps_the_smaller_id(spark, testing_catalog) -> None:
    """Two live rows of one key become the batch's one row, with the smaller of their ids: no id is live twice."""
    table = _table_name("upsert_lineage_twice")
    _create(spark, table, range(5))
    ingest(spark, CATALOG, table, _frame(spark, [2]), IngestOptions(mode="append"))
    held = sorted(row_id for i, row_id, _ in read_row_lineage(testing_catalog.load_table(table)) if i == 2)
    assert len(held) == 2
    ingest(spark, CATALOG, table, _frame(spark, [2], "v2"), IngestOptions(mode="upsert", key=("id",)))
    after = _lineage(testing_catalog, table)
    assert after[2][0] == held[0] and sorted(after) == [0, 1, 2, 3, 4]


def test_a_v3_upsert_with_equality_deletes_gives_replaced_rows_new_ids(spark, testing_catalog) -> None:
    """Equality deletes read no row, so, as the spec says, the replacing rows are new rows with new ids."""
    table = _table_name("upsert_lineage_equality")
    _create(spark, table, range(5))
    options = IngestOptions(mode="upsert", key=("id",), delete_mode="equality")
    ingest(spark, CATALOG, table, _frame(spark, [1, 2], "v2"), options)
    after = _lineage(testing_catalog, table)
    assert sorted(after[i][0] for i in (1, 2)) == [5, 6] and sorted(after) == [0, 1, 2, 3, 4]


def test_two_deletes_on_one_data_file_leave_one_vector_holding_both(spark, testing_catalog) -> None:
    table = _table_name("dv_merge")
    _create(spark, table, range(10))
    ingest(spark, CATALOG, table, _frame(spark, [1]), IngestOptions(mode="delete", key=("id",)))
    ((first_vector, first_positions),) = _vectors(testing_catalog, table)
    assert first_positions == [1]
    ingest(spark, CATALOG, table, _frame(spark, [2, 7]), IngestOptions(mode="delete", key=("id",)))
    ((vector, positions),) = _vectors(testing_catalog, table)
    assert positions == [1, 2, 7] and vector.referenced_data_file == first_vector.referenced_data_file
    assert (vector.path, vector.content_offset) != (first_vector.path, first_vector.content_offset)
    summary = testing_catalog.load_table(table).current_snapshot().summary
    assert summary["removed-position-delete-files"] == "1" and summary["added-position-delete-files"] == "1"
    assert _ids(table) == [0, 3, 4, 5, 6, 8, 9]


def test_a_compaction_losing_to_a_v3_upsert_fails_and_keeps_the_upsert(spark, testing_catalog, monkeypatch) -> None:
    table = _table_name("compact_loses")
    _create(spark, table, range(10))
    ingest(spark, CATALOG, table, _frame(spark, range(10, 20)), IngestOptions(mode="append"))
    real_commit = spark_compact.commit_group_rewrites

    def commit_after_an_upsert(*args, **kwargs):
        ingest(spark, CATALOG, table, _frame(spark, [3, 12], "v2"), IngestOptions(mode="upsert", key=("id",)))
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(spark_compact, "commit_group_rewrites", commit_after_an_upsert)
    with pytest.raises(EngineError, match=r"position deletes|deletion vector|no longer"):
        compact_job.main(["--catalog", CATALOG, "--table", table, "--min-input-files", "2"])
    loaded = testing_catalog.load_table(table)
    assert loaded.current_snapshot().summary.operation.value == "overwrite"
    names = open_read_session(CATALOG, table).to_arrow().column("name").to_pylist()
    assert sorted(names) == sorted([f"v1-{i}" for i in range(20) if i not in (3, 12)] + ["v2-3", "v2-12"])


def test_a_v3_upsert_losing_to_a_compaction_fails_and_writes_nothing(spark, testing_catalog, monkeypatch) -> None:
    table = _table_name("upsert_loses")
    _create(spark, table, range(10))
    ingest(spark, CATALOG, table, _frame(spark, range(10, 20)), IngestOptions(mode="append"))
    ingest(spark, CATALOG, table, _frame(spark, [5]), IngestOptions(mode="delete", key=("id",)))
    real_commit = ingest_job.commit_change

    def commit_after_a_compaction(table_object, change, **kwargs):
        compact_job.main(["--catalog", CATALOG, "--table", table, "--min-input-files", "2"])
        return real_commit(table_object, change, **kwargs)

    monkeypatch.setattr(ingest_job, "commit_change", commit_after_a_compaction)
    with pytest.raises(CommitConflictError):
        ingest(spark, CATALOG, table, _frame(spark, [3, 12], "v2"), IngestOptions(mode="upsert", key=("id",)))
    loaded = testing_catalog.load_table(table)
    assert loaded.current_snapshot().summary.operation.value == "replace"
    assert _vectors(testing_catalog, table) == []  # the rewrite dropped the vector of the file it replaced
    assert _ids(table) == [i for i in range(20) if i != 5]


def test_rows_lacking_a_column_get_its_write_default_and_the_defaults_stay_as_written(spark, testing_catalog) -> None:
    import json

    table = _table_name("defaults")
    _create(spark, table, range(3))
    # pyiceberg drops defaults when it creates a table: register a copy of the metadata with them, as Java writes it.
    loaded = testing_catalog.load_table(table)
    document = json.loads(loaded.io.new_input(loaded.metadata_location).open().read())
    for field in document["schemas"][-1]["fields"]:
        if field["name"] == "name":
            field["initial-default"] = "x"
            field["write-default"] = "w"
    location = loaded.metadata_location.replace(".metadata.json", "-defaults.metadata.json")
    with loaded.io.new_output(location).create() as out:
        out.write(json.dumps(document).encode())
    with_defaults = table + "_with_defaults"
    testing_catalog.register_table(with_defaults, location)
    lacking_name = _frame(spark, [7, 8]).drop("name")
    ingest(spark, CATALOG, with_defaults, lacking_name, IngestOptions(mode="append"))
    ingest(spark, CATALOG, with_defaults, _frame(spark, [9]), IngestOptions(mode="append"))  # a name given wins
    rows = open_read_session(CATALOG, with_defaults).to_arrow().select(["id", "name"]).to_pylist()
    assert sorted((r["id"], r["name"]) for r in rows) == [
        (0, "v1-0"), (1, "v1-1"), (2, "v1-2"), (7, "w"), (8, "w"), (9, "v1-9"),
    ]  # fmt: skip
    committed = testing_catalog.load_table(with_defaults)
    text = committed.io.new_input(committed.metadata_location).open().read().decode()
    assert '"initial-default":"x"' in text.replace(" ", "") and '"write-default":"w"' in text.replace(" ", "")


def test_variant_geometry_and_nanosecond_columns_round_trip_as_the_running_sparks_types(spark, testing_catalog) -> None:
    """Spark's own forms in and out on every Spark line: a variant from ``parse_json`` (Spark 4; a Spark 3.5 source
    lacks it), a geometry from WKB (Spark 4.1+'s ``GeometryType`` too), nanoseconds from ``timestamp_ntz``."""
    import pyspark
    from pyiceberg.schema import Schema
    from pyiceberg.types import GeometryType, LongType, NestedField, TimestampNanoType

    from spark_jobs import read as read_job
    from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes
    from spark_jobs.engine.shared.iceberg_model import VariantType

    spark_line = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
    # Spark 4.1 has its geo types off unless spark.sql.geospatial.enabled is set (4.2 on): WKB binary then
    geo_types = spark_line >= (4, 1) and spark.conf.get("spark.sql.geospatial.enabled") == "true"
    allow_v3_metadata_writes()
    table = _table_name("types")
    testing_catalog.create_namespace_if_not_exists("ingest_v3_tests")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "v", VariantType()),
        NestedField(3, "g", GeometryType()),
        NestedField(4, "tn", TimestampNanoType()),
    )
    testing_catalog.create_table(table, schema, properties={"format-version": "3"})
    points = {i: _wkb_point(i, -i) for i in range(3)}
    rows = [(i, f'{{"n": {i}, "s": "x{i}"}}', points[i], datetime.datetime(2024, 5, 1, 8, i, 1, 250)) for i in range(3)]
    source = spark.createDataFrame(rows, "id long, js string, wkb binary, tn timestamp_ntz").coalesce(1)
    geometry = "st_setsrid(st_geomfromwkb(wkb), 4326)" if geo_types else "wkb"
    variant = ["parse_json(js) AS v"] if spark_line >= (4, 0) else []
    source = source.selectExpr("id", *variant, f"{geometry} AS g", "tn")
    ingest(spark, CATALOG, table, source, IngestOptions(mode="append"))

    frame = read_job.load(spark, CATALOG, table)
    types = {field.name: field.dataType.typeName() for field in frame.schema.fields}
    assert types["id"] == "long" and types["tn"] == "timestamp_ntz"
    assert types["v"] == ("variant" if spark_line >= (4, 0) else "struct")
    assert types["g"] == ("geometry" if geo_types else "binary")
    variant_json = "to_json(v)" if spark_line >= (4, 0) else "cast(null AS string)"
    geometry_wkb = "st_asbinary(g)" if geo_types else "g"
    read_back = frame.selectExpr("id", f"{variant_json} AS js", f"{geometry_wkb} AS wkb", "tn").collect()
    assert sorted((r.id, r.js, bytes(r.wkb), r.tn) for r in read_back) == [
        (i, f'{{"n":{i},"s":"x{i}"}}' if spark_line >= (4, 0) else None, points[i], rows[i][3]) for i in range(3)
    ]
    written = open_read_session(CATALOG, table).to_arrow()
    assert written.schema.field("tn").type == pa.timestamp("ns")  # the table's nanoseconds, Spark's microseconds in
    assert sorted(written.column("tn").to_pylist()) == [rows[i][3] for i in range(3)]


def _wkb_point(x: float, y: float) -> bytes:
    """A WKB point, little-endian."""
    import struct

    return struct.pack("<BIdd", 1, 1, x, y)


def test_puffin_file_with_two_vectors_reads_back_with_pyiceberg(tmp_path) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.table.puffin import PuffinFile

    from spark_jobs.engine.deletes.deletion_vectors import decode_deletion_vector_blob
    from spark_jobs.engine.write.deletion_vector_files import DeletionVectorTarget, write_deletion_vectors

    targets = [
        DeletionVectorTarget("file:///d/a.parquet", 0, (), pa.array([5, 1, 1, 2**33]).to_numpy()),
        DeletionVectorTarget("file:///d/b.parquet", 0, (), pa.array([0, 7]).to_numpy()),
    ]
    path = f"file://{tmp_path}/two.puffin"
    described = write_deletion_vectors(targets, PyArrowFileIO(), lambda: path)
    content = (tmp_path / "two.puffin").read_bytes()
    puffin = PuffinFile(content)
    assert [b.type for b in puffin.footer.blobs] == ["deletion-vector-v1"] * 2
    for blob, item, want in zip(puffin.footer.blobs, described, [[1, 5, 2**33], [0, 7]], strict=True):
        assert (blob.offset, blob.length) == (item["content_offset"], item["content_size_in_bytes"])
        assert blob.properties["referenced-data-file"] == item["referenced_data_file"]
        payload = content[blob.offset : blob.offset + blob.length]
        positions = decode_deletion_vector_blob(
            payload, puffin_path=path, data_file_path=item["referenced_data_file"], expected_cardinality=len(want)
        )
        assert positions.tolist() == want and item["record_count"] == len(want)
    vectors = puffin.to_vector()
    assert {k: v.to_pylist() for k, v in vectors.items()} == {
        "file:///d/a.parquet": [1, 5, 2**33],
        "file:///d/b.parquet": [0, 7],
    }
