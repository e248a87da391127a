"""Row filters on variant paths and geo boxes over a table Iceberg Java 1.12 wrote (shredded variants) and our
ingest appended to: files and row groups are pruned where their bounds allow, and the rows are always those an
unfiltered read gives, filtered here in Python from the model.

Java (Spark 4.1, one JVM for the module) writes uniform objects (``$.a`` int, ``$.s`` string, ``$.o.b`` int;
shredded, with the spec's variant bounds per path, a row group every ten rows; values of ``$.o.b`` past 127 do not
fit the int8 column Java shreds it to and stay unshredded), then files whose variants are not objects or hold
``$.a`` with mixed types (no bounds for it, nothing shredded for it) and null geometries.
Java 1.12 writes no bounds for geometry or geography columns; our ingest appends a file whose geometry has them
(and whose variants, unshredded, have none).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import ingest as ingest_job
from spark_jobs import read as read_job
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared import variant_encoding
from spark_jobs.engine.table.catalog import load_catalog
from spark_jobs.job_support import EXIT_USAGE, run_job

pytestmark = pytest.mark.spark

CATALOG = "testing"
TABLE = "filters112.events"
ROW_GROUPS = {  # a row group every 10 rows
    "write.parquet.row-group-size-bytes": "1",
    "write.parquet.row-group-check-min-record-count": "10",
    "write.parquet.row-group-check-max-record-count": "10",
}


def wkb_point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def uniform(i: int) -> dict[str, Any]:
    return {"a": i, "s": f"x{i:03d}", "o": {"b": i * 2}}


def odd_one(i: int) -> Any:
    if i % 3 == 0:
        return "plain"
    if i % 3 == 1:
        return [i, i + 1]
    return {"a": f"n/a-{i}" if i % 2 else i, "m": i}


def model_row(i: int) -> dict[str, Any]:
    """id, the variant as JSON, the geometry point (None for every fourth of the odd file) and the geography point."""
    v = odd_one(i) if 80 <= i < 90 else uniform(i)
    g = None if 80 <= i < 90 and i % 4 == 0 else (float(i), i / 2)
    lon = ((i * 7.5 + 170.0) % 360.0) - 180.0  # crosses the antimeridian
    return {"id": i, "v": v, "g": g, "gg": (lon, float(i % 60) - 30.0)}


JAVA_BATCHES = [range(0, 40), range(40, 80), range(80, 90)]
OUR_BATCH = range(100, 110)
MODEL = [model_row(i) for batch in [*JAVA_BATCHES, OUR_BATCH] for i in batch]


def _java_values(rows: list[dict[str, Any]]) -> str:
    def geometry(point):
        return "null" if point is None else f"st_setsrid(st_geomfromwkb(X'{wkb_point(*point).hex()}'), 4326)"

    return ", ".join(
        f"({r['id']}, parse_json('{json.dumps(r['v'])}'), {geometry(r['g'])}, "
        f"st_geogfromwkb(X'{wkb_point(*r['gg']).hex()}'))"
        for r in rows
    )


OUR_SQL = (
    "SELECT id, parse_json(js) AS v, st_setsrid(st_geomfromwkb(wkb), 4326) AS g, st_geogfromwkb(wkb_gg) AS gg "
    "FROM source"
)


def ingest_ours(folder: Path, rows: list[dict[str, Any]], mode: str, *args: str) -> None:
    """Our ingest job on ``rows`` (JSON text and WKB in a Parquet source, made variants and geo values by SQL)."""
    source = pa.table(
        {
            "id": pa.array([r["id"] for r in rows], pa.int64()),
            "js": [json.dumps(r["v"]) for r in rows],
            "wkb": pa.array([wkb_point(*r["g"]) for r in rows], pa.binary()),
            "wkb_gg": pa.array([wkb_point(*r["gg"]) for r in rows], pa.binary()),
        }
    )
    path = folder / f"{mode}-{rows[0]['id']}.parquet"
    pq.write_table(source, path)
    argv = ["--catalog", CATALOG, "--table", TABLE, "--source", str(path), "--mode", mode, "--sql", OUR_SQL, *args]
    ingest_job.main(argv)


@pytest.fixture(scope="module")
def table(iceberg_java_112, tmp_path_factory) -> Iterator[str]:
    java = iceberg_java_112
    full = f"{CATALOG}.{TABLE}"
    java.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.filters112")
    properties = {"format-version": "3", "write.parquet.shred-variants": "true", **ROW_GROUPS}
    listed = ", ".join(f"'{key}'='{value}'" for key, value in properties.items())
    java.sql(
        f"CREATE TABLE {full} (id bigint, v variant, g geometry(4326), gg geography(4326)) USING iceberg "
        f"TBLPROPERTIES ({listed})"
    )
    by_id = {r["id"]: r for r in MODEL}
    for batch in JAVA_BATCHES:  # one task, so one file per insert
        java.sql(f"INSERT INTO {full} VALUES {_java_values([by_id[i] for i in batch])}")
    ingest_ours(tmp_path_factory.mktemp("filters112"), [by_id[i] for i in OUR_BATCH], "append")
    yield TABLE


def _decoded(pair: dict[str, bytes] | None) -> Any:
    if pair is None:
        return None
    return variant_encoding.decode(variant_encoding.VariantMetadata(pair["metadata"]), pair["value"])


def read(table: str, row_filter: str | None) -> tuple[list[int], Any]:
    """Our reader's ids (sorted) under ``row_filter``, and the scan's metrics."""
    session = open_read_session(load_catalog(CATALOG), table, columns=["id", "v", "g"], row_filter=row_filter)
    rows = session.to_arrow().to_pylist()
    return sorted(r["id"] for r in rows), session.metrics


def at(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def number(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def holds(row: dict[str, Any], keys: tuple[str, ...], test: Callable[[Any], bool], kind=number) -> bool:
    """SQL's rule: a missing path or a value of another kind is NULL, which no comparison holds for."""
    value = kind(at(row["v"], *keys))
    return value is not None and test(value)


def text(value: Any) -> Any:
    return value if isinstance(value, str) else None


def box_meets(point, xmin, ymin, xmax, ymax, *, wraps=False) -> bool:
    x, y = point
    in_x = (x >= xmin or x <= xmax) if wraps and xmin > xmax else xmin <= x <= xmax
    return in_x and ymin <= y <= ymax


CASES: list[tuple[str, Callable[[dict[str, Any]], bool], int, int]] = [
    # (filter, the model's answer, at least this many data files pruned, at least this many row groups pruned)
    ("variant_get(v, '$.a', 'int') >= 75", lambda r: holds(r, ("a",), lambda a: a >= 75), 1, 1),
    ("variant_get(v, '$.o.b', 'bigint') < 10", lambda r: holds(r, ("o", "b"), lambda b: b < 10), 1, 1),
    ("variant_get(v, \"$['s']\", 'string') = 'x041'", lambda r: holds(r, ("s",), lambda s: s == "x041", text), 1, 1),
    (
        "variant_get(v, '$.s', 'string') IN ('x005', 'x103')",
        lambda r: holds(r, ("s",), lambda s: s in ("x005", "x103"), text),
        1,
        1,
    ),
    # NOT pushed into the comparison: a NULL (missing path) stays out, as in SQL
    (
        "NOT variant_get(v, '$.a', 'int') < 78 AND id < 105",
        lambda r: holds(r, ("a",), lambda a: a >= 78) and r["id"] < 105,
        1,
        1,
    ),
    # a path with mixed types in one file (no bounds there, nothing shredded for it) and one no file has bounds for
    ("variant_get(v, '$.a', 'int') = 86", lambda r: holds(r, ("a",), lambda a: a == 86), 2, 0),
    ("variant_get(v, '$.m', 'int') > 83", lambda r: holds(r, ("m",), lambda m: m > 83), 0, 0),
    ("variant_get(v, '$.a', 'int') IS NULL", lambda r: not holds(r, ("a",), lambda a: True), 0, 0),
    # the root path, and a test of the variant as a whole (its leaves carry no field id: no statistics of its own)
    ("variant_get(v, '$', 'string') = 'plain'", lambda r: r["v"] == "plain", 0, 0),
    ("v IS NOT NULL AND id < 3", lambda r: r["id"] < 3, 0, 0),
    (
        "variant_get(v, '$.a', 'int') != 3 OR id = 3",
        lambda r: holds(r, ("a",), lambda a: a != 3) or r["id"] == 3,
        0,
        0,
    ),
    # values of $.o.b past 127 stay unshredded in Java's files beside the int8 column: its bounds must hold them
    ("variant_get(v, '$.o.b', 'int') >= 150", lambda r: holds(r, ("o", "b"), lambda b: b >= 150), 2, 0),
    # geometry: Java's files have no bounds (kept), ours has (pruned); NULL geometries match neither test
    (
        "st_intersects(g, st_makeenvelope(10, 0, 20.5, 7))",
        lambda r: r["g"] is not None and box_meets(r["g"], 10, 0, 20.5, 7),
        1,
        0,
    ),
    (
        "st_disjoint(g, st_makeenvelope(10, 0, 20.5, 7))",
        lambda r: r["g"] is not None and not box_meets(r["g"], 10, 0, 20.5, 7),
        0,
        0,
    ),
    (
        "st_intersects(g, st_makeenvelope(101, 0, 103, 100)) OR id = 2",
        lambda r: r["id"] == 2 or (r["g"] is not None and box_meets(r["g"], 101, 0, 103, 100)),
        0,
        0,
    ),
    # geography: an envelope across the antimeridian
    (
        "st_intersects(gg, st_makeenvelope(170, -30, -175, 0))",
        lambda r: box_meets(r["gg"], 170, -30, -175, 0, wraps=True),
        0,
        0,
    ),
]


@pytest.mark.parametrize(("row_filter", "expected", "files_pruned", "row_groups_pruned"), CASES)
def test_filtered_reads_prune_and_return_the_unpruned_rows(
    table, row_filter, expected, files_pruned, row_groups_pruned
):
    everything, _ = read(table, None)
    assert everything == sorted(r["id"] for r in MODEL)
    ids, metrics = read(table, row_filter)
    assert ids == sorted(r["id"] for r in MODEL if expected(r)), row_filter
    assert metrics.data_files_pruned >= files_pruned, metrics
    assert metrics.row_groups_pruned_by_statistics >= row_groups_pruned, metrics


def test_unfiltered_rows_hold_the_model(table):
    session = open_read_session(load_catalog(CATALOG), table, columns=["id", "v"])
    assert {r["id"]: _decoded(r["v"]) for r in session.to_arrow().to_pylist()} == {r["id"]: r["v"] for r in MODEL}


@pytest.mark.parametrize(
    ("row_filter", "reason"),
    [
        ("variant_get(v, '$.a') > 1", "variant_get takes 3 arguments"),
        ("variant_get(v, '$.a', 'integr') > 1", "unknown variant_get type 'integr'"),
        ("variant_get(v, 'a.b', 'int') > 1", "must start with '$'"),
        ("variant_get(v, '$.a', 'int') > 'x'", "is not a number"),
        ("variant_get(id, '$.a', 'int') > 1", "variant_get needs a variant column"),
        ("st_intersects(g, st_makeenvelope(1, 2, 3)) ", "st_makeenvelope takes 4 arguments"),
        ("st_intersects(g, st_makeenvelope(5, 0, 1, 1))", "only a geography's box may wrap"),
        ("st_intersects(v, st_makeenvelope(0, 0, 1, 1))", "need a geometry or geography column"),
    ],
)
def test_a_bad_filter_exits_2_naming_the_option(table, tmp_path, capsys, row_filter, reason):
    output = tmp_path / "out"
    argv = ["--catalog", CATALOG, "--table", table, "--filter", row_filter, "--output", str(output)]
    assert run_job("read", lambda: read_job.main(argv)) == EXIT_USAGE
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "--filter" in errors[0] and reason in errors[0], errors
    assert not output.exists()


def test_our_geometry_bounds_prune_our_file(table):
    _, metrics = read(table, "st_intersects(g, st_makeenvelope(200, 0, 300, 1000))")
    assert metrics.data_files_pruned == 1  # ours; Java's three have no geo bounds


def test_the_read_job_on_spark_with_distributed_planning_filters_alike(table, tmp_path):
    """Spark tasks and executor-side manifest pruning get the filter's predicates shipped to them."""
    row_filter = "variant_get(v, '$.a', 'int') >= 75 AND st_disjoint(g, st_makeenvelope(70, 0, 76.5, 100))"
    output = tmp_path / "out"
    argv = [
        "--catalog",
        CATALOG,
        "--table",
        table,
        "--filter",
        row_filter,
        "--columns",
        "id",
        "--output",
        str(output),
        "--driver-max-bytes",
        "0",
        "--planning-mode",
        "distributed",
    ]
    result = read_job.main(argv)
    assert result["ran_in"] != "driver", result
    expected = [
        r["id"]
        for r in MODEL
        if holds(r, ("a",), lambda a: a >= 75) and r["g"] is not None and not box_meets(r["g"], 70, 0, 76.5, 100)
    ]
    assert sorted(pq.read_table(output).column("id").to_pylist()) == sorted(expected)
    assert result["counters"]["data_files_pruned"] >= 1, result


def test_zz_an_overwrite_by_a_variant_filter_keeps_the_rows_it_is_null_on(table, tmp_path):
    """Last in the module: it changes the table. Rows whose path is missing or of another kind are kept."""
    replacement = [model_row(200), model_row(201)]
    ingest_ours(tmp_path, replacement, "overwrite", "--overwrite-filter", "variant_get(v, '$.a', 'int') >= 105")
    kept = [r["id"] for r in MODEL if not holds(r, ("a",), lambda a: a >= 105)]
    assert read(table, None)[0] == sorted([*kept, 200, 201])
    assert any(80 <= i < 90 for i in kept)  # the odd file's rows, whose $.a is NULL, are among them
