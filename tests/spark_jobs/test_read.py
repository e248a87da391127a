"""The read job's faces on real Spark: ``load`` (Python API), the ``iceberg_mor`` data source, ``read.py``.

Every conformance query must return exactly Java's rows through each: ``load`` without Python filter pushdown reads
with ``mapInArrow``, the data source is read directly (``load`` uses it when pushdown is on). ``read.py`` runs
in-process through ``main`` against the session's Spark, and as a real ``spark-submit`` for the exit-code contract
and the standalone cluster. The Spark 3.5 pass (marker ``spark35``) runs the job on ``SAMPLE_QUERIES`` and ``load`` on
``LOAD_SAMPLE_IDS``; the data source needs Spark 4 (marker ``spark4``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import read as read_job
from spark_jobs.job_contract import missing_result_fields
from spark_jobs.job_support import UsageError
from spark_jobs.spark.types import arrow_schema_of
from tests.support.conformance import ConformanceQuery, load_queries, table_checksum
from tests.support.services import spark_home, spark_process_env

QUERIES = load_queries()


def _sample_queries() -> list[ConformanceQuery]:
    """A query per table plus the first snapshot-id, as-of and filtered ones: the data source route's share, and
    the Spark 3.5 pass's."""
    chosen: dict[str, ConformanceQuery] = {}
    for query in QUERIES:
        chosen.setdefault(query.table, query)
        for kind, present in (
            ("snapshot_id", query.snapshot_id is not None),
            ("as_of", query.as_of_timestamp_ms is not None),
            ("filter", bool(query.where)),
        ):
            if present:
                chosen.setdefault(kind, query)
    return list({query.id: query for query in chosen.values()}.values())


SAMPLE_QUERIES = _sample_queries()
SAMPLE_IDS = {query.id for query in SAMPLE_QUERIES}
# ``load`` takes the read job's mapInArrow route: on Spark 3.5 a time-travel read with deletes and every type suffice.
LOAD_SAMPLE_IDS = {"corpus.mor_v2_pos-as_of_timestamp_delete1", "corpus.types-full_scan"}
REPO_ROOT = Path(__file__).resolve().parents[2]
READ_PY = REPO_ROOT / "spark_jobs" / "read.py"

pytestmark = pytest.mark.spark


def _on_both_lines_when_sampled(queries: list[ConformanceQuery], sample: set[str]) -> list:
    """The queries as parameters, those whose id is in ``sample`` marked for the Spark 3.5 pass as well."""
    return [
        pytest.param(query, id=query.id, marks=[pytest.mark.spark35] if query.id in sample else []) for query in queries
    ]


def _arrow_of(frame) -> pa.Table:
    """A DataFrame's rows as Arrow: ``toArrow`` on Spark 4, Spark 3.5's Arrow collect otherwise."""
    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    batches = frame._collect_as_arrow()
    return pa.Table.from_batches(batches) if batches else arrow_schema_of(frame.schema).empty_table()


def _assert_matches(query: ConformanceQuery, result) -> None:
    assert result.column_names == query.result_columns
    assert result.num_rows == query.row_count
    checksum, columns = table_checksum(result, query.result_columns)
    differing = [c for c in query.result_columns if columns[c] != query.column_checksums.get(c)]
    assert checksum == query.checksum, f"columns that differ: {differing}"


@pytest.mark.parametrize("query", _on_both_lines_when_sampled(QUERIES, LOAD_SAMPLE_IDS))
def test_load_returns_javas_rows(spark, conformance_catalog, query: ConformanceQuery) -> None:
    frame = read_job.load(
        spark,
        "conformance",
        query.table,
        columns=query.select,
        row_filter=query.where,
        snapshot_id=query.snapshot_id,
        as_of=query.as_of_timestamp_ms,
    )
    _assert_matches(query, _arrow_of(frame))


@pytest.mark.spark4
@pytest.mark.parametrize("query", SAMPLE_QUERIES, ids=[q.id for q in SAMPLE_QUERIES])
def test_data_source_returns_javas_rows(spark, conformance_catalog, query: ConformanceQuery) -> None:
    from spark_jobs.job_support import engine_on_executors
    from spark_jobs.spark.scan import dataframe_from_source

    engine_on_executors(spark)
    options = {
        "catalog": "conformance",
        "table": query.table,
        "columns": ",".join(query.select) if query.select else None,
        "filter": query.where,
        "snapshot_id": query.snapshot_id,
        "as_of": query.as_of_timestamp_ms,
        "parallelism": 2,
    }
    _assert_matches(query, dataframe_from_source(spark, options).toArrow())


@pytest.mark.spark35
def test_load_reads_the_snapshot_current_when_it_was_called(spark, testing_catalog) -> None:
    """Without pushdown, every action on a loaded DataFrame reads the same snapshot, whatever was committed since."""
    import pyarrow as pa

    testing_catalog.create_namespace_if_not_exists("read_pinning")
    table = testing_catalog.create_table("read_pinning.events", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array(range(10), pa.int64())}))
    frame = read_job.load(spark, "testing", "read_pinning.events")
    table.append(pa.table({"id": pa.array(range(10, 25), pa.int64())}))
    assert frame.count() == 10
    assert read_job.load(spark, "testing", "read_pinning.events").count() == 25


@pytest.mark.parametrize("ran_in", ["spark", "driver"])
@pytest.mark.parametrize("query", _on_both_lines_when_sampled(QUERIES, SAMPLE_IDS))
def test_read_job_writes_javas_rows(spark, conformance_catalog, tmp_path, query: ConformanceQuery, ran_in) -> None:
    output = tmp_path / "out"
    argv = ["--catalog", "conformance", "--table", query.table, "--output", str(output)]
    argv += ["--driver-max-bytes", "0"] if ran_in == "spark" else []
    if query.select:
        argv += ["--columns", ",".join(query.select)]
    if query.where:
        argv += ["--filter", query.where]
    if query.snapshot_id is not None:
        argv += ["--snapshot-id", str(query.snapshot_id)]
    if query.as_of_timestamp_ms is not None:
        argv += ["--as-of", str(query.as_of_timestamp_ms)]
    result = read_job.main(argv)
    assert result["ran_in"] == ran_in
    assert result["rows_out"] == query.row_count
    assert result["snapshot_id"] == (query.resolves_to_snapshot_id or query.snapshot_id or result["snapshot_id"])
    _assert_matches(query, pq.read_table(output))


@pytest.mark.parametrize("ran_in", ["spark", "driver"])
def test_read_job_selects_metadata_columns_by_name(spark, conformance_catalog, tmp_path, ran_in) -> None:
    """``--columns`` takes the metadata columns by name, with the values the engine's read gives (which the interop
    suite compares with Iceberg Java 1.12's), on Spark and in the driver, at an old snapshot and the current one."""
    from spark_jobs.engine.read.session import open_read_session

    table = "corpus.mor_v3_dv"
    columns = ["id", "_file", "_pos", "_spec_id", "_partition", "_row_id", "_last_updated_sequence_number"]
    snapshots = [snapshot.snapshot_id for snapshot in conformance_catalog.load_table(table).snapshots()]
    for snapshot_id in (snapshots[0], snapshots[-1]):
        output = tmp_path / f"out-{snapshot_id}"
        argv = ["--catalog", "conformance", "--table", table, "--columns", ",".join(columns)]
        argv += ["--snapshot-id", str(snapshot_id), "--output", str(output)]
        argv += ["--driver-max-bytes", "0"] if ran_in == "spark" else []
        assert read_job.main(argv)["ran_in"] == ran_in
        written = pq.read_table(output)
        expected = open_read_session("conformance", table, columns=columns, snapshot_id=snapshot_id).to_arrow()
        assert written.column_names == columns

        def by_position(row: dict) -> tuple[str, int]:
            return row["_file"], row["_pos"]

        rows = sorted(written.to_pylist(), key=by_position)
        assert rows == sorted(expected.to_pylist(), key=by_position) and rows
        assert len({row["_row_id"] for row in rows}) == len(rows) and None not in {row["_row_id"] for row in rows}


@pytest.mark.spark4
def test_pushed_spark_filters_give_the_same_rows_as_spark_filtering(spark, conformance_catalog) -> None:
    """With Python filter pushdown on, Spark's own filters are pushed where exact and the result does not change."""
    from spark_jobs.spark.scan import FILTER_PUSHDOWN_CONF

    condition = "category IN ('a', 'c') AND id >= 20000 AND id < 60000 AND note IS NOT NULL AND qty != 7"
    spark.conf.set(FILTER_PUSHDOWN_CONF, "false")
    try:
        expected = read_job.load(spark, "conformance", "corpus.mor_v2_pos").filter(condition).toArrow()
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
        pushed_frame = read_job.load(spark, "conformance", "corpus.mor_v2_pos").filter(condition)
        plan = pushed_frame._jdf.queryExecution().executedPlan().toString()
        pushed = pushed_frame.toArrow()
    finally:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "false")
    assert "BatchScan" in plan
    assert expected.num_rows > 0
    columns = expected.column_names
    assert table_checksum(pushed, columns) == table_checksum(expected, columns)


@pytest.mark.spark35
def test_read_job_refuses_bad_input_and_writes_nothing(spark, conformance_catalog, tmp_path) -> None:
    output = tmp_path / "never"
    with pytest.raises(UsageError):
        read_job.main(
            [
                "--catalog",
                "conformance",
                "--table",
                "corpus.v1_cow",
                "--output",
                str(output),
                "--snapshot-id",
                "1",
                "--ref",
                "main",
            ]
        )
    with pytest.raises(Exception, match="has no column 'nope'"):
        read_job.main(
            ["--catalog", "conformance", "--table", "corpus.v1_cow", "--output", str(output), "--columns", "id,nope"]
        )
    assert not output.exists()


def _spark_submit(
    args: list[str], *, master: str = "local[2]", timeout: int = 600, conf: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    command = [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        master,
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.driver.host=127.0.0.1",
        *[argument for setting in conf for argument in ("--conf", setting)],
        str(READ_PY),
        *args,
    ]
    return subprocess.run(
        command, env=spark_process_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _last_json_line(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.spark35
def test_spark_submit_read_prints_counters_as_its_last_line(conformance_catalog, tmp_path) -> None:
    query = next(q for q in QUERIES if q.id == "corpus.v2_eq_deletes-filter_projection")
    output = tmp_path / "out"
    done = _spark_submit(
        [
            "--catalog",
            "conformance",
            "--table",
            query.table,
            "--columns",
            ",".join(query.select),
            "--filter",
            query.where,
            "--output",
            str(output),
            "--output-format",
            "parquet",
        ],
        conf=("spark.sql.parquet.compression.codec=gzip",),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = _last_json_line(done.stdout)
    assert result["status"] == "ok" and missing_result_fields(result) == []
    assert result["rows_out"] == query.row_count
    # A read this small runs in the driver: no Spark session was started (spark/driver_read.py).
    assert result["ran_in"] == "driver" and "spark_start" not in result["seconds"]
    assert "read in the driver: no Spark session" in done.stderr + done.stdout
    # The driver writes with the codec spark-submit set, named as Spark names it.
    [part] = output.glob("part-00000-*-c000.gz.parquet")
    assert pq.ParquetFile(part).metadata.row_group(0).column(0).compression == "GZIP"
    counters = result["counters"]
    assert counters["rows_deleted_by_equality_deletes"] > 0
    assert counters["files_opened"] > 0
    _assert_matches(query, pq.read_table(output))


@pytest.mark.spark35
def test_spark_submit_aggregates_and_counts_of_a_small_table_run_in_the_driver(conformance_catalog) -> None:
    table = "corpus.v2_eq_deletes"
    aggregates = "count(*),sum(qty),max(ts)"
    expected, _ = read_job.aggregate(None, "conformance", table, aggregates, row_filter="qty > 2")
    done = _spark_submit(
        ["--catalog", "conformance", "--table", table, "--aggregate", aggregates, "--filter", "qty > 2"],
        conf=("spark.sql.ansi.enabled=false",),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = _last_json_line(done.stdout)
    assert result["ran_in"] == "driver" and "spark_start" not in result["seconds"]
    assert result["aggregates"] == {
        "count(*)": expected["count(*)"],
        "sum(qty)": expected["sum(qty)"],
        "max(ts)": expected["max(ts)"].isoformat(),
    }
    done = _spark_submit(["--catalog", "conformance", "--table", table, "--count"])
    assert done.returncode == 0, done.stderr[-4000:]
    result = _last_json_line(done.stdout)
    assert result["ran_in"] == "driver" and result["count"] == next(
        q.row_count for q in QUERIES if q.id == f"{table}-full_scan"
    )


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--table", "corpus.v1_cow"], "the following arguments are required: --catalog"),
        (["--catalog", "conformance", "--table", "corpus.v1_cow", "--snapshot-id", "123"], "corpus.v1_cow"),
        (["--catalog", "conformance", "--table", "corpus.missing"], "corpus.missing"),
        (["--catalog", "conformance", "--table", "corpus.v1_cow", "--filter", "id >"], "does not parse"),
    ],
    ids=["missing-catalog", "unknown-snapshot", "unknown-table", "bad-filter"],
)
def test_spark_submit_bad_input_exits_2_with_one_line(conformance_catalog, tmp_path, args, reason) -> None:
    output = tmp_path / "out"
    done = _spark_submit([*args, "--output", str(output)])
    assert done.returncode == 2, done.stderr[-4000:]
    # spark-submit merges the Python driver's stderr into its stdout, and the JVM may print after Python exits:
    # the reason is the one line that starts with "error: ".
    reasons = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error: ")]
    assert len(reasons) == 1 and reason in reasons[0], done.stderr[-4000:]
    assert not output.exists()


@pytest.mark.standalone
@pytest.mark.spark35
def test_spark_submit_read_on_the_standalone_cluster(spark_standalone, conformance_catalog, tmp_path) -> None:
    query = next(q for q in QUERIES if q.id == "corpus.mor_v3_dv-full_scan")
    output = tmp_path / "out"
    done = _spark_submit(
        ["--catalog", "conformance", "--table", query.table, "--output", str(output), "--driver-max-bytes", "0"],
        master=spark_standalone.master_url,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = _last_json_line(done.stdout)
    assert result["ran_in"] == "spark" and "spark_start" in result["seconds"]
    assert result["counters"]["rows_deleted_by_deletion_vectors"] > 0
    _assert_matches(query, pq.read_table(output))


@pytest.mark.spark35
def test_read_job_sends_delete_free_files_to_sparks_reader_unless_told_not_to(
    spark, conformance_catalog, tmp_path
) -> None:
    from spark_jobs.spark.plain_parquet import ENABLED_CONF, MIN_BYTES_CONF

    assert read_job.SPARK_PARQUET_READER_CONF == ENABLED_CONF
    results, tables = {}, {}
    spark.conf.set(MIN_BYTES_CONF, "0")  # the conformance table is small: let its delete-free files go
    try:
        for way in ("on", "off"):
            output = tmp_path / way
            argv = ["--catalog", "conformance", "--table", "corpus.v2_eq_deletes_part", "--output", str(output)]
            results[way] = read_job.main([*argv, "--driver-max-bytes", "0", "--spark-parquet-reader", way])
            tables[way] = pq.read_table(output)
    finally:
        spark.conf.unset(MIN_BYTES_CONF)
        spark.conf.unset(ENABLED_CONF)
    assert results["on"]["counters"]["data_files_read_by_spark"] > 0
    assert results["off"]["counters"].get("data_files_read_by_spark", 0) == 0
    assert results["on"]["rows_out"] == results["off"]["rows_out"] == tables["on"].num_rows == tables["off"].num_rows
    key = [(name, "ascending") for name in tables["off"].column_names]
    assert tables["on"].sort_by(key).equals(tables["off"].sort_by(key))
