"""Our side of the side-by-side benchmark: a warm Spark session running the project's jobs, on request.

Runs in the project's virtualenv, in a session with the settings the project's jobs give theirs
(``job_support.session_defaults``). Same protocol as ``side_by_side_java.py``: one JSON request per line on stdin,
one reply line (``side_by_side_jobs.RESULT_PREFIX``) on stdout. The tables are the Java environment's: its catalog
database is opened by pyiceberg's SqlCatalog under the same name (``anchor``), configured through pyiceberg's
environment variables before Spark starts (Spark's Python workers inherit them).

What each request runs is what a user of the project runs:
- ``query``: ``spark_jobs.read.load`` (columns and row filter given) then count and sum on the DataFrame;
- ``aggregate``: the same count and sum through ``spark_jobs.read.aggregate`` (folded where the rows are decoded);
- ``ingest_generated``: the ingest engine entry on a DataFrame of generated rows (the job's path after its source
  is read); ``ingest_parquet``: the ingest job's ``main`` with ``--source`` (the whole job but the JVM start);
- ``upsert``: the ingest engine entry, mode upsert keyed on ``id`` (position deletes, merge-on-read);
- ``rewrite``: what the compact job's ``main`` runs (load, plan, rewrite on the executors, commit), with options
  by Java's names (``rewrite-all`` has no flag of the job).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))
import side_by_side_jobs as sbs  # noqa: E402


def configure_catalog(catalog_db: Path, warehouse: Path) -> None:
    """The Java environment's SQLite catalog as pyiceberg catalog ``anchor`` (environment, before Spark starts)."""
    prefix = f"PYICEBERG_CATALOG__{sbs.CATALOG.upper()}__"
    os.environ[prefix + "TYPE"] = "sql"
    os.environ[prefix + "URI"] = f"sqlite:///{catalog_db}"
    os.environ[prefix + "WAREHOUSE"] = f"file://{warehouse}"
    os.environ["PYICEBERG_HOME"] = str(catalog_db.parent / "pyiceberg-home")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


def engine_module(*candidates: str) -> Any:
    """The first importable module of ``candidates`` (module homes move as the package is restructured)."""
    for name in candidates:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(f"none of {candidates}")


class OurRunner:
    """One warm Spark session running our jobs."""

    def __init__(self, driver_memory: str) -> None:
        import pyspark
        from pyspark import SparkConf
        from pyspark.sql import SparkSession

        from spark_jobs.job_support import session_defaults

        builder = SparkSession.builder.appName("side-by-side-ours")
        # What the project's jobs add to a session they start (Python workers over a Unix socket on Spark 4.1+;
        # README asks the same of a session of one's own that calls ``load``), then the benchmark's settings.
        settings = session_defaults(SparkConf(loadDefaults=False), pyspark.__version__)
        settings.update({**sbs.SPARK_CONF, "spark.driver.memory": driver_memory})
        for key, value in settings.items():
            builder = builder.config(key, value)
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("WARN")
        self.ingest_engine = engine_module("spark_jobs.spark.ingest", "spark_jobs.spark.ingest")

    def identifier(self, table: str) -> str:
        """``namespace.table``."""
        return f"{sbs.NAMESPACE}.{table}"

    def table(self, table: str) -> Any:
        """The pyiceberg table, freshly loaded."""
        from pyiceberg.catalog import load_catalog

        return load_catalog(sbs.CATALOG).load_table(self.identifier(table))

    def query(self, request: dict[str, Any]) -> dict[str, Any]:
        """count(*) and sum(price) through ``spark_jobs.read.load`` (columns and filter given to the engine)."""
        from pyspark.sql import functions as F  # noqa: N812

        from spark_jobs.read import load
        from spark_jobs.spark.plain_parquet import ENABLED_CONF, MIN_BYTES_CONF

        self.spark.conf.set(ENABLED_CONF, str(bool(request.get("spark_parquet_reader", True))).lower())
        if request.get("spark_parquet_min_bytes") is not None:
            self.spark.conf.set(MIN_BYTES_CONF, str(int(request["spark_parquet_min_bytes"])))
        else:
            self.spark.conf.unset(MIN_BYTES_CONF)
        frame = load(
            self.spark,
            sbs.CATALOG,
            self.identifier(request["table"]),
            columns=None if request.get("all_columns") else ["price"],
            row_filter=request.get("row_filter"),
            snapshot_id=request.get("snapshot_id"),
        )
        row = frame.agg(F.count(F.lit(1)).alias("n"), F.sum("price").alias("s")).first()
        return {"count": row["n"], "sum_price": row["s"]}

    def aggregate(self, request: dict[str, Any]) -> dict[str, Any]:
        """count(*) and sum(price) through ``spark_jobs.read.aggregate`` (one Spark stage, no row to the JVM)."""
        from spark_jobs.read import aggregate

        values, _counters = aggregate(
            self.spark,
            sbs.CATALOG,
            self.identifier(request["table"]),
            ["count(*)", "sum(price)"],
            row_filter=request.get("row_filter"),
            snapshot_id=request.get("snapshot_id"),
        )
        return {"count": values["count(*)"], "sum_price": values["sum(price)"]}

    def _ingest(self, table: str, frame: Any, mode: str, key: tuple[str, ...] = ()) -> dict[str, Any]:
        options = self.ingest_engine.IngestOptions(mode=mode, key=key)
        result = self.ingest_engine.ingest(self.spark, sbs.CATALOG, self.identifier(table), frame, options)
        return {"phases": result.get("seconds"), "rows_added": result.get("rows_added")}

    def ingest_generated(self, request: dict[str, Any]) -> dict[str, Any]:
        """Generated rows through the ingest engine entry, mode append."""
        frame = self.spark.range(0, int(request["rows"])).selectExpr(*sbs.GENERATED_COLUMNS)
        return self._ingest(request["table"], frame, "append")

    def ingest_parquet(self, request: dict[str, Any]) -> dict[str, Any]:
        """The ingest job's ``main`` reading the Parquet source, mode append."""
        from spark_jobs import ingest

        result = ingest.main(
            [
                "--catalog",
                sbs.CATALOG,
                "--table",
                self.identifier(request["table"]),
                "--source",
                request["source"],
                "--mode",
                "append",
            ]
        )
        return {"phases": result.get("seconds"), "rows_added": result.get("rows_added")}

    def upsert(self, request: dict[str, Any]) -> dict[str, Any]:
        """The upsert batch through the ingest engine entry, mode upsert keyed on ``id`` (position deletes)."""
        batch = self.spark.range(0, sbs.UPSERT_MATCHED + sbs.UPSERT_NEW).withColumnRenamed("id", "i")
        return self._ingest(request["table"], batch.selectExpr(*sbs.upsert_batch_select()), "upsert", ("id",))

    def rewrite(self, request: dict[str, Any]) -> dict[str, Any]:
        """What the compact job runs (load, plan, rewrite on the executors, commit), with Java's option names."""
        from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite

        catalog_module = engine_module("spark_jobs.engine.table.catalog", "spark_jobs.engine.table.catalog")
        load_catalog, load_table = catalog_module.load_catalog, catalog_module.load_table
        spark_compact = engine_module("spark_jobs.spark.compact", "spark_jobs.spark.compact")
        table = load_table(load_catalog(sbs.CATALOG), self.identifier(request["table"]))
        given = {key.replace("-", "_"): value for key, value in request["options"].items()}
        typed = {key: (value == "true") if value in ("true", "false") else int(value) for key, value in given.items()}
        plan = plan_rewrite(table, table.current_snapshot(), RewriteOptions.resolve(table.properties, **typed))
        outcome = spark_compact.run_rewrite(self.spark, table, plan)
        return {
            "groups": len(plan.groups),
            "rows_written": outcome.rows_written,
            "commits": len(outcome.commits),
            "seconds": {key: round(value, 3) for key, value in outcome.seconds.items()},
        }

    def first_read(self, request: dict[str, Any]) -> dict[str, Any]:
        """Our in-process read of price with the engine's caches emptied (a first read), against pyarrow's floor.

        Interleaved rounds of: ``floor`` (``pq.read_table`` of the table's data files, price only, deletes
        ignored), ``floor_with_key`` (the same reading ``id`` too, the equality delete key), ``ours_cold`` (caches
        emptied first) and ``ours_warm``; the ratios are medians of per-round ratios.
        """
        import statistics

        from bench_env import Query
        from readers import clear_engine_caches, run_floor

        open_read_session = engine_module(
            "spark_jobs.engine.read.session", "spark_jobs.engine.read.session"
        ).open_read_session
        table = self.table(request["table"])
        # pyiceberg cannot plan a table with equality deletes: the data files come from our planner.
        planned = open_read_session(sbs.CATALOG, table, columns=["price"])
        paths = sorted({piece.path.removeprefix("file:") for task in planned.tasks for piece in task.slices})
        full = Query("full", None, None)

        def ours(cold: bool) -> int:
            if cold:
                clear_engine_caches()
            return open_read_session(sbs.CATALOG, table, columns=["price"]).to_arrow().num_rows

        readers = {
            "floor": lambda: run_floor(paths, full).count,
            "floor_with_key": lambda: run_floor(paths, full, extra_columns=("id",)).count,
            "ours_cold": lambda: ours(True),
            "ours_warm": lambda: ours(False),
        }
        times: dict[str, list[float]] = {name: [] for name in readers}
        for index in range(int(request.get("rounds", 9)) + 1):
            for name, reader in readers.items():
                started = time.perf_counter()
                reader()
                if index:  # the first round warms the page cache
                    times[name].append(time.perf_counter() - started)
        rounds = range(len(times["floor"]))
        return {
            "median_s": {name: round(statistics.median(values), 4) for name, values in times.items()},
            "ours_cold_over_floor": round(
                statistics.median(times["ours_cold"][i] / times["floor"][i] for i in rounds), 3
            ),
            "ours_cold_over_floor_with_key": round(
                statistics.median(times["ours_cold"][i] / times["floor_with_key"][i] for i in rounds), 3
            ),
            "ours_warm_over_floor": round(
                statistics.median(times["ours_warm"][i] / times["floor"][i] for i in rounds), 3
            ),
        }

    def rollback(self, request: dict[str, Any]) -> dict[str, Any]:
        """Make ``snapshot_id`` the table's current snapshot again (pyiceberg)."""
        self.table(request["table"]).manage_snapshots().set_current_snapshot(int(request["snapshot_id"])).commit()
        return {}

    def snapshot(self, request: dict[str, Any]) -> dict[str, Any]:
        """The table's current snapshot id."""
        current = self.table(request["table"]).current_snapshot()
        return {"snapshot_id": current.snapshot_id if current else None}

    def create_like(self, request: dict[str, Any]) -> dict[str, Any]:
        """A fresh, empty v2 table with the schema of ``like`` (an ingest target), dropped and purged first."""
        from pyiceberg.catalog import load_catalog

        catalog = load_catalog(sbs.CATALOG)
        identifier = self.identifier(request["table"])
        if catalog.table_exists(identifier):
            catalog.purge_table(identifier)
        schema = catalog.load_table(self.identifier(request["like"])).schema()
        catalog.create_table(identifier, schema=schema, properties={"format-version": "2"})
        return {}

    def drop(self, request: dict[str, Any]) -> dict[str, Any]:
        """Drop and purge a table."""
        from pyiceberg.catalog import load_catalog

        catalog = load_catalog(sbs.CATALOG)
        if catalog.table_exists(self.identifier(request["table"])):
            catalog.purge_table(self.identifier(request["table"]))
        return {}


def serve(runner: OurRunner) -> None:
    """Answer requests until ``quit`` or end of input."""
    spark_context = runner.spark.sparkContext
    tracker = spark_context.statusTracker()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request["op"]
        if op == "quit":
            break
        try:
            group = f"req-{uuid.uuid4().hex[:8]}"
            spark_context.setJobGroup(group, op)
            cpu_before = sbs.process_tree_cpu_seconds(os.getpid())
            started = time.perf_counter()
            result = getattr(runner, op)(request)
            seconds = time.perf_counter() - started
            cpu = sbs.process_tree_cpu_seconds(os.getpid()) - cpu_before
            jobs = list(tracker.getJobIdsForGroup(group))
            stages = [stage for job in jobs if (info := tracker.getJobInfo(job)) for stage in info.stageIds]
            tasks = sum(info.numTasks for stage in stages if (info := tracker.getStageInfo(stage)))
            spark_context.setJobGroup("idle", "idle")
            reply = sbs.Reply(True, round(seconds, 4), round(cpu, 3), result, len(jobs), len(stages), tasks)
        except Exception as error:  # the orchestrator decides what a failure means
            traceback.print_exc()
            reply = sbs.Reply(False, error=f"{type(error).__name__}: {error}")
        sbs.write_reply(reply)


def main() -> None:
    """Configure the catalog, start the session and serve requests."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog-db", type=Path, required=True, help="the Java environment's catalog.db")
    parser.add_argument("--warehouse", type=Path, required=True, help="the Java environment's warehouse directory")
    parser.add_argument("--driver-memory", default=sbs.SPARK_CONF["spark.driver.memory"])
    args = parser.parse_args()
    sbs.divert_stdout()
    configure_catalog(args.catalog_db, args.warehouse)
    started = time.perf_counter()
    runner = OurRunner(args.driver_memory)
    sbs.write_reply(sbs.Reply(True, round(time.perf_counter() - started, 3), result={"ready": True}))
    serve(runner)
    runner.spark.stop()


if __name__ == "__main__":
    main()
