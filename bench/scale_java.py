"""Iceberg Java's side of the scale benchmark: a warm Spark 3.5 session with Iceberg 1.10.2, answering requests.

Runs in the Java environment's virtualenv (``tests/support/java_env.py``), with ``ScaleBench.java`` (compiled by
``scale_benchmark.py``) on Spark's class path. Same protocol as ``side_by_side_java.py``: one JSON request per line
on stdin, one reply line (``side_by_side_jobs.RESULT_PREFIX``) on stdout.

Requests (``op``):
- ``build`` (a seed table by ``add_files``; ``scale_tables`` module doc), ``build_from`` (a shape from a seed's
  data files), ``build_expire`` (EXPIRE_SNAPSHOTS one-file appends on a copy of a table's data files);
- ``plan`` / ``plan_heap``: ``TableScan.planTasks`` at a snapshot with a filter, timed in the JVM (with the heap);
- ``rewrite_plan``: ``BinPackRewriteFilePlanner.plan`` (what ``rewrite_data_files`` plans) with options;
- ``query``: count(*) and sum(price) through Iceberg's Spark source (the scans at 50M+ rows);
- ``describe``, ``rollback``, ``spark_submit_args``, ``quit``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import scale_files  # noqa: E402
import scale_tables as st  # noqa: E402
import side_by_side_jobs as sbs  # noqa: E402
from readers import process_tree_cpu_seconds  # noqa: E402
from side_by_side_java import CATALOG_DDL, catalog_conf, spark_session  # noqa: E402


class ScaleJavaRunner:
    """One warm Spark session with Iceberg Java and the benchmark's helper class."""

    def __init__(self, jars: list[str], data_dir: Path, extra_conf: dict[str, str], memory: str) -> None:
        self.data_dir = data_dir
        catalog_db, warehouse = data_dir / "catalog.db", data_dir / "warehouse"
        warehouse.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(catalog_db) as connection:
            for ddl in CATALOG_DDL:
                connection.execute(ddl)
        self.jars = jars
        self.conf = {**catalog_conf(catalog_db, warehouse), **extra_conf}
        self.spark = spark_session(jars, self.conf, memory)
        self.jvm = self.spark._jvm
        self.helper = self.jvm.scalebench.ScaleBench
        self.sql(f"CREATE NAMESPACE IF NOT EXISTS {st.CATALOG}.{st.NAMESPACE}")
        self.tables: dict[str, Any] = {}

    # ---------------------------------------------------------------- helpers
    def sql(self, text: str) -> Any:
        """Run Spark SQL."""
        return self.spark.sql(text)

    def fq(self, table: str) -> str:
        """``anchor.scale.<table>``."""
        return f"{st.CATALOG}.{st.NAMESPACE}.{table}"

    def jvm_table(self, table: str, refresh: bool = False) -> Any:
        """``org.apache.iceberg.Table`` of ``table`` (kept across requests, as a warm process keeps it)."""
        if refresh or table not in self.tables:
            self.tables[table] = self.jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
                self.spark._jsparkSession, self.fq(table)
            )
            self.tables[table].refresh()
        return self.tables[table]

    def expression(self, spec: list[Any] | None) -> Any:
        """An Iceberg ``Expression`` from ``scale_tables.Filter.java`` (None: no filter)."""
        if spec is None:
            return None
        method, column, value = spec
        expressions = self.jvm.org.apache.iceberg.expressions.Expressions
        literal = self.jvm.java.lang.Long.valueOf(value) if isinstance(value, int) else value
        if method == "equal":
            return expressions.equal(column, literal)
        if method == "range":
            low, high = (self.jvm.java.lang.Long.valueOf(v) for v in value)
            return expressions.And(expressions.greaterThanOrEqual(column, low), expressions.lessThan(column, high))
        raise ValueError(f"unknown filter {spec}")

    def versions(self) -> dict[str, str]:
        """Spark, Java and Iceberg versions of this session."""
        return {
            "spark": self.spark.version,
            "java": self.jvm.System.getProperty("java.version"),
            "iceberg_java": self.sql(f"SELECT {st.CATALOG}.system.iceberg_version()").first()[0],
        }

    def create(self, table: str, shape: st.Shape) -> str:
        """A fresh table of ``shape``; returns its location as a local path."""
        self.sql(f"DROP TABLE IF EXISTS {self.fq(table)} PURGE")
        self.tables.pop(table, None)
        properties = ", ".join(f"'{key}'='{value}'" for key, value in shape.properties().items())
        partitioning = " PARTITIONED BY (d)" if shape.partitioned else ""
        self.sql(
            f"CREATE TABLE {self.fq(table)} {st.COLUMNS_DDL} USING iceberg{partitioning} TBLPROPERTIES ({properties})"
        )
        location = str(self.jvm_table(table, refresh=True).location())
        local = Path(location.removeprefix("file://").removeprefix("file:"))
        if (local / "data").exists():  # a purge leaves directories behind
            shutil.rmtree(local / "data")
        return str(local)

    def facts(self, table: str) -> dict[str, Any]:
        """Manifests, files, rows and snapshots of the table's current snapshot (Java's metadata tables)."""
        self.sql(f"REFRESH TABLE {self.fq(table)}")
        manifests = self.sql(
            f"SELECT content, count(*) AS n, sum(length) AS bytes FROM {self.fq(table)}.manifests GROUP BY content"
        ).collect()
        files = self.sql(
            f"SELECT content, count(*) AS n, sum(record_count) AS rows FROM {self.fq(table)}.files GROUP BY content"
        ).collect()
        by_content = {row["content"]: row for row in files}
        manifest_by_content = {row["content"]: row for row in manifests}
        return {
            "data_files": int(by_content[0]["n"]) if 0 in by_content else 0,
            "rows": int(by_content[0]["rows"]) if 0 in by_content else 0,
            "delete_files": sum(int(row["n"]) for content, row in by_content.items() if content),
            "data_manifests": int(manifest_by_content[0]["n"]) if 0 in manifest_by_content else 0,
            "data_manifest_bytes": int(manifest_by_content[0]["bytes"]) if 0 in manifest_by_content else 0,
            "delete_manifests": int(manifest_by_content[1]["n"]) if 1 in manifest_by_content else 0,
        }

    def current_snapshot(self, table: str) -> int:
        """The table's current snapshot id."""
        return int(self.jvm_table(table, refresh=True).currentSnapshot().snapshotId())

    # ---------------------------------------------------------------- builds
    def build(self, request: dict[str, Any]) -> dict[str, Any]:
        """Real files registered by ``add_files`` in the shape's commits, then a merge-on-read DELETE."""
        files, shape = int(request["files"]), st.SHAPES[request["shape"]]
        name = st.table_name(files, shape.name)
        seconds: dict[str, float] = {}
        started = time.monotonic()
        source = scale_files.write_source_files(self.data_dir, files, shape.partitioned, log=_log)
        seconds["write_source_files"] = round(time.monotonic() - started, 1)
        location = self.create(name, shape)
        started = time.monotonic()
        commit_dirs = link_commit_dirs(source, Path(location) / "data", files, shape)
        seconds["hard_links"] = round(time.monotonic() - started, 1)
        started = time.monotonic()
        self.sql("SET spark.sql.shuffle.partitions=1")  # add_files writes one manifest per shuffle partition
        try:
            for index, directory in enumerate(commit_dirs):
                self.sql(
                    f"CALL {st.CATALOG}.system.add_files(table => '{st.NAMESPACE}.{name}', "
                    f"source_table => '`parquet`.`{directory}`', check_duplicate_files => false, parallelism => 4)"
                ).collect()
                if index % 10 == 9:
                    _log(f"  {name}: {index + 1} of {len(commit_dirs)} add_files commits")
        finally:
            self.sql(f"SET spark.sql.shuffle.partitions={sbs.SPARK_CONF['spark.sql.shuffle.partitions']}")
        seconds["add_files"] = round(time.monotonic() - started, 1)
        base = self.current_snapshot(name)
        started = time.monotonic()
        self.sql(f"DELETE FROM {self.fq(name)} WHERE {st.DELETE_PREDICATE}")
        seconds["delete"] = round(time.monotonic() - started, 1)
        deletes = self.current_snapshot(name)
        how = "add_files of real files (pyarrow), DELETE by Java"
        return self._built(
            name, files=files, shape=shape, how=how, location=location, base=base, deletes=deletes, seconds=seconds
        )

    def build_from(self, request: dict[str, Any]) -> dict[str, Any]:
        """A shape's table from the data files of ``source`` (its seed, built by ``add_files``) through Java's API.

        ``copies`` hard-linked copies of each data file are registered with their Java-computed metrics and
        partitions (``DataFiles.builder().copy()``) in the shape's commits through ``newAppend`` (what ``add_files``
        does for the files it lists, without reading their footers again). Then the deletes: with one copy, Java's
        merge-on-read DELETE; with more (above 10^5 files, where a DELETE would read every row), pyarrow-written
        position delete files for the same rows, registered through Java's API in one row delta.
        """
        files, shape = int(request["files"]), st.SHAPES[request["shape"]]
        copies, source_name = int(request["copies"]), request["source"]
        if copies > 1 and shape.format_version != 2:
            raise ValueError(f"tables above {st.REAL_MAX_FILES:,} files are built for v2 shapes only")
        name = st.table_name(files, shape.name)
        location = self.create(name, shape)
        seconds: dict[str, float] = {}
        started = time.monotonic()
        source = self.jvm_table(source_name, refresh=True)
        target = self.jvm_table(name, refresh=True)
        base_of_source = int(request["source_base_snapshot"])
        added = self.helper.appendCopies(source, base_of_source, target, f"file:{location}/data", copies, shape.commits)
        seconds["append_copies"] = round(time.monotonic() - started, 1)
        base = self.current_snapshot(name)
        how = (
            f"{source_name}'s data files ({copies} hard-linked cop{'y' if copies == 1 else 'ies'} of each; "
            f"{added:,} files) registered through Java's API with their add_files metrics in {shape.commits} appends"
        )
        if copies == 1:
            started = time.monotonic()
            self.sql(f"DELETE FROM {self.fq(name)} WHERE {st.DELETE_PREDICATE}")
            seconds["delete"] = round(time.monotonic() - started, 1)
            how += ", DELETE by Java"
        else:
            self._register_deletes(name, location, shape, seconds)
            how += "; pyarrow-written position deletes of the same rows registered through Java's API (RowDelta)"
        deletes = self.current_snapshot(name)
        return self._built(
            name, files=files, shape=shape, how=how, location=location, base=base, deletes=deletes, seconds=seconds
        )

    def _register_deletes(self, name: str, location: str, shape: st.Shape, seconds: dict[str, float]) -> None:
        """Position delete files for DELETE_PREDICATE's rows of every (copied) data file, registered in one commit."""
        started = time.monotonic()
        columns = "file_path, partition" if shape.partitioned else "file_path"  # no partition column otherwise
        rows = self.sql(f"SELECT {columns} FROM {self.fq(name)}.files").collect()
        data_paths = []
        for row in rows:
            first_id = _first_id_of_copy(row["file_path"])
            partition = f"d={row['partition']['d'].isoformat()}" if shape.partitioned else ""
            data_paths.append((row["file_path"], first_id, partition))
        tsv_lines = scale_files.write_position_deletes(data_paths, Path(location) / "data" / "deletes")
        tsv = Path(location).parent / f"{name}-deletes.tsv"
        tsv.write_text("\n".join(tsv_lines) + "\n")
        seconds["write_position_deletes"] = round(time.monotonic() - started, 1)
        started = time.monotonic()
        self.helper.registerPositionDeletes(self.jvm_table(name, refresh=True), str(tsv))
        seconds["register_position_deletes"] = round(time.monotonic() - started, 1)

    def build_expire(self, request: dict[str, Any]) -> dict[str, Any]:
        """EXPIRE_SNAPSHOTS one-file appends over a copy of a u1 table's data files (expire-snapshots target)."""
        files = int(request["files"])
        source_name = st.table_name(files, "u1")
        shape = st.Shape("expire", False, 1, True)
        name = st.expire_table_name(files)
        self.sql(f"DROP TABLE IF EXISTS {self.fq(name)} PURGE")
        self.tables.pop(name, None)
        self.sql(
            f"CREATE TABLE {self.fq(name)} {st.COLUMNS_DDL} USING iceberg TBLPROPERTIES ("
            "'format-version'='2', 'write.metadata.delete-after-commit.enabled'='true', "
            "'write.metadata.previous-versions-max'='10')"
        )
        location = str(self.jvm_table(name, refresh=True).location()).removeprefix("file:")
        if (Path(location) / "data").exists():
            shutil.rmtree(Path(location) / "data")
        seconds: dict[str, float] = {}
        started = time.monotonic()
        source = self.jvm_table(source_name, refresh=True)
        source_base = int(request["source_base_snapshot"])
        self.helper.appendCopies(source, source_base, self.jvm_table(name, refresh=True), f"file:{location}/data", 1, 1)
        seconds["append_copies"] = round(time.monotonic() - started, 1)
        base = self.current_snapshot(name)
        template = self.sql(f"SELECT file_path FROM {self.fq(name)}.files LIMIT 1").first()[0]
        started = time.monotonic()
        self.helper.appendSnapshots(
            self.jvm_table(name, refresh=True), template, f"file:{location}/data", st.EXPIRE_SNAPSHOTS
        )
        seconds["append_snapshots"] = round(time.monotonic() - started, 1)
        how = (
            f"{source_name}'s data files registered through Java's API (one append), then {st.EXPIRE_SNAPSHOTS:,} "
            "appends of one file each (merge on, default min-count-to-merge 100)"
        )
        deletes = self.current_snapshot(name)
        return self._built(
            name, files=files, shape=shape, how=how, location=location, base=base, deletes=deletes, seconds=seconds
        )

    def _built(
        self,
        name: str,
        *,
        files: int,
        shape: st.Shape,
        how: str,
        location: str,
        base: int,
        deletes: int | None,
        seconds: dict[str, float],
    ) -> dict[str, Any]:
        facts = self.facts(name)
        return st.BuiltTable(
            name=name,
            files=files,
            shape=shape.name,
            how=how,
            description=shape.describe(),
            location=location,
            base_snapshot=base,
            delete_snapshot=deletes,
            data_files=facts["data_files"],
            delete_files=facts["delete_files"],
            rows=facts["rows"],
            data_manifests=facts["data_manifests"],
            delete_manifests=facts["delete_manifests"],
            data_manifest_bytes=facts["data_manifest_bytes"],
            seconds=seconds,
            java_versions=self.versions(),
        ).as_dict()

    # ---------------------------------------------------------------- measurements
    def plan(self, request: dict[str, Any]) -> dict[str, Any]:
        """``TableScan.planTasks`` once, timed in the JVM (default split settings of the table)."""
        table = self.jvm_table(request["table"])
        nanos, tasks, slices, files, deletes, cpu_nanos = self.helper.planTasks(
            table, int(request.get("snapshot_id") or -1), self.expression(request.get("filter"))
        )
        return {
            "seconds": nanos / 1e9,
            "cpu_seconds": cpu_nanos / 1e9,
            "tasks": tasks,
            "slices": slices,
            "data_files": files,
            "deletes": deletes,
        }

    def plan_heap(self, request: dict[str, Any]) -> dict[str, Any]:
        """``planTasks`` with the heap measured around it (``ScaleBench.planTasksHeap``)."""
        table = self.jvm_table(request["table"])
        nanos, tasks, before, peak, retained = self.helper.planTasksHeap(
            table, int(request.get("snapshot_id") or -1), self.expression(request.get("filter"))
        )
        return {
            "seconds": nanos / 1e9,
            "tasks": tasks,
            "heap_before_mib": round(before / 2**20, 1),
            "heap_peak_above_mib": round((peak - before) / 2**20, 1),
            "heap_retained_above_mib": round((retained - before) / 2**20, 1),
        }

    def rewrite_plan(self, request: dict[str, Any]) -> dict[str, Any]:
        """Java's bin-pack compaction planning of the current snapshot, timed in the JVM."""
        table = self.jvm_table(request["table"], refresh=True)
        options = self.jvm.java.util.HashMap()
        for key, value in request.get("options", {}).items():
            options.put(key, str(value))
        nanos, groups, files, size = self.helper.rewritePlan(table, options)
        return {"seconds": nanos / 1e9, "groups": groups, "files": files, "bytes": size}

    def query(self, request: dict[str, Any]) -> dict[str, Any]:
        """count(*) and sum(price) through Iceberg's Spark source, at a snapshot, with a filter."""
        reader = self.spark.read.format("iceberg")
        if request.get("snapshot_id"):
            reader = reader.option("snapshot-id", str(request["snapshot_id"]))
        frame = reader.load(self.fq(request["table"]))
        if request.get("where"):
            frame = frame.where(request["where"])
        started = time.perf_counter()
        row = frame.selectExpr("count(*) AS n", "sum(price) AS s").first()
        return {"seconds": time.perf_counter() - started, "count": row["n"], "sum_price": row["s"]}

    def file_sums(self, request: dict[str, Any]) -> dict[str, Any]:
        """The compaction-needed sensor's input as Iceberg Java gives it: the current snapshot's live files summed
        per partition and content from the table's ``files`` metadata table (files, rows, bytes, small and fragment
        files, the data files' sizes), collected to the driver; planning and the scan timed together."""
        small, fragment = int(request["small"]), int(request["fragment"])
        jvm_pid = int(self.jvm.java.lang.ProcessHandle.current().pid())
        cpu_started = process_tree_cpu_seconds(jvm_pid)  # every thread of the JVM, as ours counts its process's
        started = time.perf_counter()
        files_table = f"{self.fq(request['table'])}.files"
        # An unpartitioned table's files table has no partition column: one group per content.
        partition = "partition" if "partition" in self.spark.table(files_table).columns else "NULL"
        rows = self.sql(
            f"SELECT {partition} AS partition, content, count(*) AS files, sum(record_count) AS records, "
            f"sum(file_size_in_bytes) AS bytes, count_if(file_size_in_bytes < {small}) AS small_files, "
            f"count_if(file_size_in_bytes < {fragment}) AS fragment_files, "
            "collect_list(file_size_in_bytes) FILTER (WHERE content = 0) AS sizes "
            f"FROM {files_table} GROUP BY 1, content"
        ).collect()
        seconds = time.perf_counter() - started
        return {
            "seconds": seconds,
            "cpu_seconds": process_tree_cpu_seconds(jvm_pid) - cpu_started,
            "partitions": len({row["partition"] for row in rows}),
            "data_files": sum(row["files"] for row in rows if row["content"] == 0),
            "delete_files": sum(row["files"] for row in rows if row["content"] != 0),
        }

    def java_versions(self, request: dict[str, Any]) -> dict[str, Any]:
        """Spark, Java and Iceberg versions of this session."""
        return self.versions()

    def describe(self, request: dict[str, Any]) -> dict[str, Any]:
        """The current snapshot's facts (manifests, files, rows)."""
        return {"snapshot_id": self.current_snapshot(request["table"]), **self.facts(request["table"])}

    def rollback(self, request: dict[str, Any]) -> dict[str, Any]:
        """Make ``snapshot_id`` current again (undoes a timed commit)."""
        self.sql(
            f"CALL {st.CATALOG}.system.rollback_to_snapshot('{st.NAMESPACE}.{request['table']}', "
            f"{int(request['snapshot_id'])})"
        ).collect()
        self.tables.pop(request["table"], None)
        return {}

    def spark_submit_args(self, request: dict[str, Any]) -> dict[str, Any]:
        """The jars and settings a cold ``spark-submit`` of a Java job needs."""
        return {"jars": ",".join(self.jars), "conf": self.conf}


def link_commit_dirs(source: Path, data_root: Path, files: int, shape: st.Shape) -> list[Path]:
    """Hard-link the source files into ``data_root/cNNN/``, one directory per commit, files in order (partitioned:
    whole days per commit when the commits divide the days). Returns the directories in commit order."""
    directories = []
    for commit in range(shape.commits):
        first, last = files * commit // shape.commits, files * (commit + 1) // shape.commits
        directory = data_root / f"c{commit:03d}"
        for index in range(first, last):
            relative = scale_files.file_relative_path(index, files, shape.partitioned)
            target = directory / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(source / relative, target)
        directories.append(directory)
    return directories


def _first_id_of_copy(location: str) -> int:
    """The first row id of a copied data file, from its name (``x3-f-0000123.parquet``: file 123)."""
    index = int(location.rsplit("/", 1)[-1].split("f-", 1)[1].split(".", 1)[0])
    return index * st.ROWS_PER_FILE


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def serve(runner: ScaleJavaRunner) -> None:
    """Answer requests until ``quit`` or end of input."""
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request["op"] == "quit":
            break
        started = time.perf_counter()
        try:
            result = getattr(runner, request["op"])(request)
            reply = sbs.Reply(True, round(time.perf_counter() - started, 4), result=result)
        except Exception as error:  # the orchestrator decides what a failure means
            import traceback

            traceback.print_exc()
            reply = sbs.Reply(False, error=f"{type(error).__name__}: {error}"[:4000])
        sbs.write_reply(reply)


def main() -> None:
    """Start the session and serve requests."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jars", required=True, help="comma-separated: Iceberg's runtime, SQLite JDBC, ScaleBench")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--conf", default="{}", help="extra Spark settings as a JSON object")
    parser.add_argument("--driver-memory", default="6g")
    args = parser.parse_args()
    sbs.divert_stdout()
    started = time.perf_counter()
    runner = ScaleJavaRunner(args.jars.split(","), args.data_dir, json.loads(args.conf), args.driver_memory)
    sbs.write_reply(sbs.Reply(True, round(time.perf_counter() - started, 3), result={"versions": runner.versions()}))
    serve(runner)
    runner.spark.stop()


if __name__ == "__main__":
    main()
