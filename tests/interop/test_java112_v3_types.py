"""Format v3 tables Iceberg Java 1.12 wrote with every type new in v3, then written by our jobs, read by both.

Iceberg 1.12 on Spark 4.1 (one JVM for the module, ``java_env --env 1.12``) creates and fills the tables: variant
(plain and shredded), geometry, geography and ``unknown`` columns through Spark SQL; nanosecond timestamps, which
Spark 4.1 cannot hold, and columns with default values through Iceberg's Java API (``java_server``). Our jobs then
append (a column the source lacks takes its write default), upsert by position (deletion vectors), delete by
equality, overwrite by filter, compact and rewrite manifests; after the sequence Java (Spark for the tables Spark
reads, Java's generic reader for the nanosecond table) and our reader return the model's rows exactly.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import compact as compact_job
from spark_jobs import ingest as ingest_job
from spark_jobs import maintain as maintain_job
from spark_jobs.engine.shared import variant_encoding
from spark_jobs.engine.shared.iceberg_model import _nanos_from_iso

pytestmark = pytest.mark.spark

CATALOG = "testing"
NAMESPACE = "java112"


def wkb_point(x: float, y: float) -> bytes:
    """A little-endian WKB point."""
    return struct.pack("<BIdd", 1, 1, x, y)


def variant_value(pair: dict[str, bytes] | None) -> Any:
    """A variant (its ``metadata`` and ``value`` binaries) decoded to Python values, None for SQL NULL."""
    if pair is None:
        return None
    return variant_encoding.decode(variant_encoding.VariantMetadata(pair["metadata"]), pair["value"])


def geo_bytes(value: Any) -> bytes | None:
    """WKB of a geo value as a reader hands it over: Spark's struct of ``srid`` and ``wkb``, or the bytes."""
    if isinstance(value, dict):
        return value["wkb"]
    return value


def ours(table: str, columns: list[str] | None = None) -> list[dict]:
    """Our reader's rows."""
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.engine.table.catalog import load_catalog

    return open_read_session(load_catalog(CATALOG), table, columns=columns).to_arrow().to_pylist()


def by_id(rows: list[dict]) -> dict[int, dict]:
    found = {row["id"]: row for row in rows}
    assert len(found) == len(rows), "a row id occurs twice"
    return found


def ingest(tmp_path: Path, table: str, source: pa.Table, mode: str, *args: str) -> dict:
    """The ingest job on ``source`` (written as a Parquet file), with the job's other arguments."""
    path = tmp_path / f"{table.replace('.', '-')}-{len(list(tmp_path.iterdir()))}.parquet"
    pq.write_table(source, path)
    return ingest_job.main(["--catalog", CATALOG, "--table", table, "--source", str(path), "--mode", mode, *args])


# ------------------------------------------------------------------------------------- variant, geo and unknown
def geo_rows(ids: list[int], version: int) -> list[dict]:
    """The model's rows: ``v`` a JSON value, ``g``/``gg`` WKB points, ``i`` the int column with a default."""
    return [
        {
            "id": i,
            "cat": f"c{i % 2}",
            "v": {"a": i, "b": f"x{i}-{version}", "arr": [1, None, {"z": version}]},
            "g": wkb_point(float(i), 2.0),
            "gg": wkb_point(float(i), 2.0),
            "i": 7,
        }
        for i in ids
    ]


def java_insert_sql(table: str, rows: list[dict]) -> str:
    values = ", ".join(
        f"({r['id']}, '{r['cat']}', parse_json('{json.dumps(r['v'])}'), "
        f"st_setsrid(st_geomfromwkb(X'{r['g'].hex()}'), 4326), st_geogfromwkb(X'{r['gg'].hex()}'), null)"
        for r in rows
    )
    return f"INSERT INTO {table} (id, cat, v, g, gg, u) VALUES {values}"


def our_source(rows: list[dict], *, with_i: bool) -> pa.Table:
    """A Parquet source of ``rows``: JSON text and WKB binary, for ``--sql`` to make variants and geo values."""
    columns: dict[str, Any] = {
        "id": pa.array([r["id"] for r in rows], pa.int64()),
        "cat": [r["cat"] for r in rows],
        "js": [json.dumps(r["v"]) for r in rows],
        "wkb": pa.array([r["g"] for r in rows], pa.binary()),
    }
    if with_i:
        columns["i"] = pa.array([r["i"] for r in rows], pa.int32())
    return pa.table(columns)


OUR_GEO_SQL = (
    "SELECT id, cat, parse_json(js) AS v, st_setsrid(st_geomfromwkb(wkb), 4326) AS g, st_geogfromwkb(wkb) AS gg{extra} "
    "FROM source"
)


def geo_view(rows: list[dict]) -> dict[int, tuple]:
    """Rows as comparable tuples: variants decoded, geo values as WKB."""
    return {
        r["id"]: (r["cat"], _plain(r["v"]), geo_bytes(r["g"]), geo_bytes(r["gg"]), r.get("u"), r["i"]) for r in rows
    }


def _plain(value: Any) -> Any:
    """A variant value as the model holds it (decoded values: dicts, lists, ints, strings)."""
    return value if not isinstance(value, dict) or set(value) != {"metadata", "value"} else variant_value(value)


def java_geo_rows(java, table: str) -> list[dict]:
    read = java.read_arrow(table, columns=["id", "cat", "v", "g", "gg", "u", "i"]).to_pylist()
    return [{**r, "v": variant_value(r["v"])} for r in read]


def test_our_writes_to_a_java_table_of_variant_geo_and_unknown_columns(iceberg_java_112, tmp_path):
    java = iceberg_java_112
    table = f"{NAMESPACE}.geo"
    full = f"{CATALOG}.{table}"
    java.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
    java.sql(
        f"CREATE TABLE {full} (id bigint, cat string, v variant, g geometry(4326), gg geography(4326), u void) "
        "USING iceberg PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')"
    )
    first = geo_rows(range(6), 0)
    java.sql(java_insert_sql(full, first))
    java.call("add_column", table=table, name="i", type="int", default="7")
    model = {r["id"]: r for r in first}
    java.sql(f"DELETE FROM {full} WHERE id = 3")  # a deletion vector of Java's
    del model[3]

    appended = geo_rows([10, 11], 1)  # no i in the source: its write default
    ingest(tmp_path, table, our_source(appended, with_i=False), "append", "--sql", OUR_GEO_SQL.format(extra=""))
    model.update({r["id"]: r for r in appended})
    upserted = [{**r, "i": 40 + r["id"]} for r in geo_rows([1, 4, 12], 2)]
    ingest(
        tmp_path, table, our_source(upserted, with_i=True), "upsert", "--key", "id",
        "--sql", OUR_GEO_SQL.format(extra=", i"),
    )  # fmt: skip
    model.update({r["id"]: r for r in upserted})
    ingest(tmp_path, table, pa.table({"id": pa.array([2, 10], pa.int64())}), "delete", "--key", "id",
           "--delete-mode", "equality")  # fmt: skip
    del model[2], model[10]
    replacement = geo_rows([0], 3)
    ingest(
        tmp_path, table, our_source(replacement, with_i=False), "overwrite", "--overwrite-filter", "id < 1",
        "--sql", OUR_GEO_SQL.format(extra=""),
    )  # fmt: skip
    model[0] = replacement[0]
    expected = geo_view([{**r, "u": None} for r in model.values()])
    assert geo_view(java_geo_rows(java, table)) == expected
    assert geo_view(ours(table)) == expected

    compact_job.main(["--catalog", CATALOG, "--table", table, "--rewrite-all"])
    maintain_job.main(["rewrite-manifests", "--catalog", CATALOG, "--table", table])
    assert geo_view(java_geo_rows(java, table)) == expected
    assert geo_view(ours(table)) == expected
    _assert_java_types_kept(table)


def _assert_java_types_kept(table: str) -> None:
    """The table's current schema still spells the types as Java wrote them (our commits keep its text)."""
    from spark_jobs.engine.table.catalog import load_catalog

    location = load_catalog(CATALOG).load_table(table).metadata_location
    metadata = json.loads(Path(urlparse(location).path).read_text())
    types = {f["name"]: f["type"] for f in metadata["schemas"][-1]["fields"]}
    assert types["g"] == "geometry(OGC:CRS84)" and types["gg"] == "geography(OGC:CRS84, spherical)"
    assert types["v"] == "variant" and types["u"] == "unknown"


def test_compaction_of_a_java_table_of_shredded_variants(iceberg_java_112):
    java = iceberg_java_112
    table = f"{NAMESPACE}.shredded"
    full = f"{CATALOG}.{table}"
    java.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
    java.sql(
        f"CREATE TABLE {full} (id bigint, v variant) USING iceberg "
        "TBLPROPERTIES ('format-version'='3', 'write.parquet.shred-variants'='true')"
    )
    for batch in range(2):
        java.sql(
            f'INSERT INTO {full} SELECT id, parse_json(concat(\'{{"a":\', id, \',"b":"x\', id, \'","c":[\', id, '
            f"']}}')) FROM range({batch * 10}, {batch * 10 + 10})"
        )
    expected = {i: {"a": i, "b": f"x{i}", "c": [i]} for i in range(20)}
    before = {r["id"]: variant_value(r["v"]) for r in java.read_arrow(table).to_pylist()}
    assert before == expected
    compact_job.main(["--catalog", CATALOG, "--table", table, "--rewrite-all"])
    assert {r["id"]: variant_value(r["v"]) for r in java.read_arrow(table).to_pylist()} == expected
    assert {r["id"]: variant_value(r["v"]) for r in ours(table)} == expected


# ------------------------------------------------------------------ nanosecond timestamps, unknown, defaults
NANOS_SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "tn", "required": False, "type": "timestamp_ns"},
        {"id": 3, "name": "tzn", "required": False, "type": "timestamptz_ns"},
        {"id": 4, "name": "u", "required": False, "type": "unknown"},
    ],
}
NANOS_SPEC = {"spec-id": 0, "fields": [{"name": "tn_day", "transform": "day", "source-id": 2, "field-id": 1000}]}
BASE_NANOS = 1_704_164_645_123_456_789  # 2024-01-02T03:04:05.123456789


def iso_nanos(nanos: int, zone: bool) -> str:
    from spark_jobs.engine.shared.iceberg_model import _iso_from_nanos

    return _iso_from_nanos(nanos, with_zone=zone)


def java_nanos_rows(java, table: str) -> dict[int, tuple]:
    rows = java.call("generic_rows", table=table)
    return {
        r["1"]: (
            None if r.get("2") is None else _nanos_from_iso(r["2"], with_zone=False),
            None if r.get("3") is None else _nanos_from_iso(r["3"], with_zone=True),
            r.get("4"),
            r.get("5"),
        )
        for r in rows
    }


def our_nanos_rows(table: str) -> dict[int, tuple]:
    """Our reader's rows, timestamps as integer nanoseconds."""
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.engine.table.catalog import load_catalog

    read = open_read_session(load_catalog(CATALOG), table).to_arrow()
    columns = {name: read.column(name) for name in read.column_names}
    for name in ("tn", "tzn"):
        columns[name] = columns[name].cast(pa.int64())
    return {r["id"]: (r["tn"], r["tzn"], r["u"], r["s"]) for r in pa.table(columns).to_pylist()}


def test_our_writes_to_a_java_table_of_nanosecond_timestamps_and_defaults(iceberg_java_112, tmp_path):
    java = iceberg_java_112
    table = f"{NAMESPACE}.nanos"
    java.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
    java.call("create_table", table=table, schema=json.dumps(NANOS_SCHEMA), spec=json.dumps(NANOS_SPEC),
              properties={"format-version": "3"})  # fmt: skip
    model: dict[int, tuple] = {}
    java_rows = []
    for i in range(4):
        nanos = BASE_NANOS + i * 86_400_000_000_001
        java_rows.append({"1": i, "2": iso_nanos(nanos, False), "3": iso_nanos(nanos, True)})
        model[i] = (nanos, nanos, None, "old")  # written before s was added: its initial default
    java.call("append_rows", table=table, rows=java_rows)
    # Rows written before s existed read its initial default; rows written without it get its write default.
    java.call("add_column", table=table, name="s", type="string", default='"old"', write_default='"new"')
    nanos_source = pa.table(
        {
            "id": pa.array([10, 11], pa.int64()),
            "tn": pa.array([BASE_NANOS + 1, BASE_NANOS + 2], pa.timestamp("ns")),
            "tzn": pa.array([BASE_NANOS + 3, None], pa.timestamp("ns", tz="UTC")),
        }
    )
    ingest(tmp_path, table, nanos_source, "append")  # read by pyarrow in the writing tasks: nanoseconds kept
    model[10] = (BASE_NANOS + 1, BASE_NANOS + 3, None, "new")
    model[11] = (BASE_NANOS + 2, None, None, "new")
    micros_source = pa.table(
        {
            "id": pa.array([1, 12], pa.int64()),
            "tn": pa.array([BASE_NANOS // 1000, BASE_NANOS // 1000 + 5], pa.timestamp("us")),
            "s": ["one", "twelve"],
        }
    )
    ingest(tmp_path, table, micros_source, "upsert", "--key", "id")  # Spark reads: microseconds
    model[1] = (BASE_NANOS // 1000 * 1000, None, None, "one")
    model[12] = ((BASE_NANOS // 1000 + 5) * 1000, None, None, "twelve")
    ingest(tmp_path, table, pa.table({"id": pa.array([2], pa.int64())}), "delete", "--key", "id",
           "--delete-mode", "equality")  # fmt: skip
    del model[2]
    assert java_nanos_rows(java, table) == model
    assert our_nanos_rows(table) == model
    compact_job.main(["--catalog", CATALOG, "--table", table, "--rewrite-all"])
    assert java_nanos_rows(java, table) == model
    assert our_nanos_rows(table) == model


# --------------------------------------------------------------------------------------------- metadata columns
METADATA_COLUMNS = ["_file", "_pos", "_spec_id", "_partition", "_row_id", "_last_updated_sequence_number"]


def _comparable(row: dict) -> tuple:
    """A row's metadata values as both readers give them (Java writes ``file:/x``, we ``file:///x``)."""
    partition = row["_partition"]
    return (
        row["id"],
        urlparse(row["_file"]).path,
        row["_pos"],
        row["_spec_id"],
        tuple(sorted(partition.items())) if partition is not None else None,
        row["_row_id"],
        row["_last_updated_sequence_number"],
    )


def test_metadata_columns_have_javas_values_at_every_snapshot(iceberg_java_112, spark, tmp_path):
    from spark_jobs.read import load

    java = iceberg_java_112
    table = f"{NAMESPACE}.lineage"
    full = f"{CATALOG}.{table}"
    java.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
    java.sql(
        f"CREATE TABLE {full} (id bigint, cat string, d date) USING iceberg PARTITIONED BY (cat) "
        "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    days = "date_add(DATE'2024-01-01', cast(id * 20 AS int))"
    java.sql(f"INSERT INTO {full} SELECT id, concat('c', id % 2), {days} FROM range(6)")
    java.sql(f"ALTER TABLE {full} ADD PARTITION FIELD months(d)")
    java.sql(f"UPDATE {full} SET cat = 'c9' WHERE id = 1")  # Java's deletion vector, a row moved to spec 1
    java.sql(f"ALTER TABLE {full} DROP PARTITION FIELD cat")  # spec 2: months(d) only
    source = pa.table(
        {"id": pa.array([2, 7], pa.int64()), "cat": ["c0", "c1"], "d": pa.array([None, 19800], pa.date32())}
    )
    ingest(tmp_path, table, source, "upsert", "--key", "id")  # our deletion vector and new rows
    from spark_jobs.engine.table.catalog import load_catalog

    snapshots = [s.snapshot_id for s in load_catalog(CATALOG).load_table(table).snapshots()]
    columns = ["id", *METADATA_COLUMNS]
    for snapshot_id in (snapshots[0], snapshots[-2], snapshots[-1]):
        from_java = sorted(
            _comparable(r) for r in java.read_arrow(table, snapshot_id=snapshot_id, columns=columns).to_pylist()
        )
        from spark_jobs.engine.read.session import open_read_session

        session = open_read_session(load_catalog(CATALOG), table, columns=columns, snapshot_id=snapshot_id)
        assert sorted(_comparable(r) for r in session.to_arrow().to_pylist()) == from_java
    through_spark = load(spark, CATALOG, table, columns=columns).collect()
    assert sorted(_comparable(r.asDict(recursive=True)) for r in through_spark) == sorted(
        _comparable(r) for r in java.read_arrow(table, columns=columns).to_pylist()
    )


# ------------------------------------------------------------------ the classic operations, with Java 1.12 too
@pytest.mark.parametrize("format_version", [2, 3])
def test_java_112_reads_what_our_jobs_write(iceberg_java_112, duckdb_connection, spark, tmp_path, format_version):
    """Our jobs' usual sequence (every delete kind, partition transforms, compaction) read by Java 1.12 and DuckDB
    as by our reader (the suite's other modules check the same with Java 1.10)."""
    from tests.interop.test_our_writes import SCHEMA, create_args, rows
    from tests.interop.test_our_writes import ingest as ingest_rows
    from tests.support.interop_readers import Readers
    from tests.support.table_model import TableModel

    readers = Readers(CATALOG, iceberg_java_112, duckdb_connection)
    table, model = f"{NAMESPACE}.ours_v{format_version}", TableModel(SCHEMA)
    partitioning = ["--partition-by", "cat,bucket(4,id),day(d)"]
    ingest_rows(tmp_path, table, rows(range(60)), "append", *create_args(format_version), *partitioning)
    model.append(rows(range(60)))
    upserted = rows([*range(10, 25), 70, 71], version=1)
    ingest_rows(tmp_path, table, upserted, "upsert", "--key", "id")
    model.upsert(upserted, ["id"])
    deleted = rows([1, 2, 3, 40])
    ingest_rows(tmp_path, table, deleted, "delete", "--key", "id", "--delete-mode", "equality")
    model.delete(deleted, ["id"])
    readers.check(table, model)
    compact_job.main(["--catalog", CATALOG, "--table", table, "--rewrite-all"])
    readers.check(table, model)


def test_we_read_what_java_112_writes(iceberg_java_112):
    """Java 1.12's MERGE, UPDATE and DELETE (deletion vectors), a partition evolution and its own compaction of part
    of the table: our reader returns what Java returns, now and at an earlier snapshot."""
    from tests.support.table_model import arrow_checksum

    java = iceberg_java_112
    table = f"{NAMESPACE}.javas"
    full = f"{CATALOG}.{table}"
    java.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
    java.sql(
        f"CREATE TABLE {full} (id bigint, cat string, amount decimal(10,2), tags array<string>, "
        "attrs struct<a: int, b: string>) USING iceberg PARTITIONED BY (bucket(3, id)) "
        "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
    )
    java.sql(
        f"INSERT INTO {full} SELECT id, concat('c', id % 4), cast(id * 1.5 AS decimal(10,2)), array(concat('t', id)), "
        "named_struct('a', cast(id AS int), 'b', IF(id % 3 = 0, NULL, 'b')) FROM range(40)"
    )
    java.sql(f"DELETE FROM {full} WHERE id % 7 = 0")
    java.sql(f"ALTER TABLE {full} ADD PARTITION FIELD cat")
    java.sql(f"UPDATE {full} SET amount = amount + 1 WHERE id < 12")
    java.sql(
        f"MERGE INTO {full} t USING (SELECT id, 'cx' AS cat FROM range(30, 45)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET cat = s.cat "
        "WHEN NOT MATCHED THEN INSERT (id, cat, amount, tags, attrs) VALUES (s.id, s.cat, 0, NULL, NULL)"
    )
    from spark_jobs.engine.table.catalog import load_catalog

    earlier = load_catalog(CATALOG).load_table(table).current_snapshot().snapshot_id
    java.sql(f"CALL {CATALOG}.system.rewrite_data_files(table => '{table}', where => 'id < 20')")
    columns = ["id", "cat", "amount", "tags", "attrs"]
    for snapshot_id in (earlier, None):
        from spark_jobs.engine.read.session import open_read_session

        expected = arrow_checksum(java.read_arrow(table, snapshot_id=snapshot_id, columns=columns), columns)
        session = open_read_session(load_catalog(CATALOG), table, snapshot_id=snapshot_id)
        assert arrow_checksum(session.to_arrow(), columns) == expected
