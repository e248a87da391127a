"""Side-by-side benchmark: Iceberg Java and our jobs on the same tables, on the same machine, in one run.

1. Start the runners, each a warm Spark ``local[2]`` session with the same settings (``side_by_side_jobs``):
   ``side_by_side_java.py`` in the Java environment's virtualenv (Iceberg 1.10.2 on pyspark 3.5 and its runtime
   jar), again in the Iceberg 1.12 environment's (Iceberg 1.12.0 on pyspark 4.1; ``--second-java 1.12``, the
   default: a second Java column) and ``side_by_side_ours.py`` in this project's. All open the same catalog (the
   Java environment's SQLite catalog).
2. Have Java build the tables that are missing (``side_by_side_jobs`` module doc; a few minutes the first time).
3. Per job: one untimed run per side (warm-up), then ``--rounds`` rounds; each round runs each side once, Java
   1.10 first in even rounds and ours first in odd ones (Java 1.12 between them), so all see the same machine
   load. Each run's table is prepared before it and restored after it, untimed (fresh ingest targets; commits
   rolled back). The first round's outcome is checked: the same rows on every side (Java 1.10's reader computes
   the checksum of each side's table), the same count and sum for every query.
4. Cold jobs: one ``spark-submit`` per run, as Airflow runs a task (a new JVM, one query, the job's exit),
   alternating Java and ours the same way; timed from launch to exit by this process.
5. Per job: the median seconds of each side, the median of the per-round ratios (ours / Java 1.10 and ours /
   Java 1.12), the CPU seconds of each runner's process tree, and the Spark jobs, stages and tasks each side ran.
   Results go to ``bench/results/side_by_side_<date>.json`` and a Markdown table beside it.

    .venv/bin/python bench/side_by_side.py [--jobs scan,ingest,upsert,compact,rewrite,cold,first_read] [--rounds 3]
        [--queries scan_full_none,scan_range_none] [--spark-parquet-reader on,forced,off] [--ours-all-columns]

The Java environment: ``--java-env project`` (default) is the project's (``tests.support.java_env``: pyspark 3.5
and the official ``iceberg-spark-runtime`` jar from Maven Central, built on first use); ``--java-env recipe`` is
the shared recipe's (``ANCHOR_ROOT=/tmp/iceberg-java bash .../iceberg-java/setup.sh``, ``--anchor-dir``). The
tables, the catalog and the Parquet source live under ``--data-dir`` (default ``bench/data/side_by_side``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
import side_by_side_jobs as sbs  # noqa: E402
from run_info import RunStart, load_average  # noqa: E402

JOB_GROUPS = (
    "scan",
    "scan_aggregate",
    "ingest",
    "upsert",
    "compact",
    "rewrite",
    "cold",
    "cold_aggregate",
    "first_read",
)

# --spark-parquet-reader's ways for ours: the suffix of the row's name and of its description.
READER_SUFFIXES = {
    "on": ("", ""),
    "forced": ("_split_forced", " (ours: delete-free files through Spark's reader whatever their size)"),
    "off": ("_engine_only", " (ours: every file through the engine's reader)"),
}


class Runner:
    """A runner subprocess: requests as JSON lines on its stdin, replies read from its stdout."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.log = log_path.open("ab")
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env, cwd=REPO_ROOT
        )
        ready = self._reply()
        if not ready.ok:
            raise RuntimeError(f"{name} runner did not start: {ready.error} (log {log_path})")
        self.start_seconds = ready.seconds

    def _reply(self) -> sbs.Reply:
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"{self.name} runner exited (code {self.process.poll()}); see {self.log.name}")
            text = line.decode()
            if text.startswith(sbs.RESULT_PREFIX):
                return sbs.Reply(**json.loads(text[len(sbs.RESULT_PREFIX) :]))

    def request(self, op: str, **fields: Any) -> sbs.Reply:
        """Send one request and wait for its reply."""
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"op": op, **fields}) + "\n").encode())
        self.process.stdin.flush()
        return self._reply()

    def must(self, op: str, **fields: Any) -> sbs.Reply:
        """``request``, failing the run when the runner reports an error."""
        reply = self.request(op, **fields)
        if not reply.ok:
            raise RuntimeError(f"{self.name} {op} {fields} failed: {reply.error}")
        return reply

    def close(self) -> None:
        """Ask the runner to stop and wait for it."""
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(b'{"op": "quit"}\n')
            self.process.stdin.close()
            self.process.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
        self.log.close()


@dataclass
class Run:
    """One timed run of one side."""

    seconds: float
    cpu_seconds: float
    spark_jobs: int
    spark_stages: int
    spark_tasks: int
    result: dict[str, Any]


@dataclass
class JobResult:
    """Every round of one job, both sides, and what the round's checks found."""

    name: str
    description: str
    java: list[Run] = field(default_factory=list)
    ours: list[Run] = field(default_factory=list)
    java112: list[Run] = field(default_factory=list)  # Iceberg 1.12 on Spark 4.1, the second Java column
    loadavg: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    unsupported: str | None = None

    def summary(self) -> dict[str, Any]:
        """Medians of each side and the median of per-round ratios."""

        def median(runs: list[Run], key: str) -> float | None:
            values = [getattr(run, key) for run in runs]
            return round(statistics.median(values), 3) if values else None

        ratios = [o.seconds / j.seconds for j, o in zip(self.java, self.ours, strict=False) if j.seconds > 0]
        ratios_112 = [o.seconds / j.seconds for j, o in zip(self.java112, self.ours, strict=False) if j.seconds > 0]
        return {
            "job": self.name,
            "java_s": median(self.java, "seconds"),
            "ours_s": median(self.ours, "seconds"),
            "ratio": round(statistics.median(ratios), 3) if ratios else None,
            "ratios": [round(ratio, 3) for ratio in ratios],
            "java_cpu_s": median(self.java, "cpu_seconds"),
            "ours_cpu_s": median(self.ours, "cpu_seconds"),
            "java_spark": _spark_shape(self.java),
            "ours_spark": _spark_shape(self.ours),
            "java112_s": median(self.java112, "seconds"),
            "ratio_112": round(statistics.median(ratios_112), 3) if ratios_112 else None,
            "ratios_112": [round(ratio, 3) for ratio in ratios_112],
            "java112_cpu_s": median(self.java112, "cpu_seconds"),
            "java112_spark": _spark_shape(self.java112),
            "unsupported": self.unsupported,
        }


def _spark_shape(runs: list[Run]) -> str:
    """Spark jobs / stages / tasks of the last run."""
    if not runs:
        return "-"
    last = runs[-1]
    return f"{last.spark_jobs}/{last.spark_stages}/{last.spark_tasks}"


def as_run(reply: sbs.Reply) -> Run:
    """A timed reply as a Run."""
    return Run(reply.seconds, reply.cpu_seconds, reply.spark_jobs, reply.spark_stages, reply.spark_tasks, reply.result)


class SideBySide:
    """The runners, the tables' facts, and the jobs."""

    def __init__(
        self, args: argparse.Namespace, java: Runner, ours: Runner, built: dict[str, Any], java112: Runner | None
    ) -> None:
        self.args, self.java, self.ours, self.built, self.java112 = args, java, ours, built, java112
        self.results: list[JobResult] = []

    def wait_for_quiet(self) -> str:
        """Wait (up to ``--quiet-timeout`` s) for the 1-minute load average to drop below ``--max-load``."""
        deadline = time.monotonic() + self.args.quiet_timeout
        while float(load_average().split()[0]) > self.args.max_load and time.monotonic() < deadline:
            time.sleep(5)
        return load_average()

    def rounds(
        self,
        result: JobResult,
        run_java: Any,
        run_ours: Any,
        check: Any = None,
        *,
        warmup: bool = True,
        run_java112: Any = None,
    ) -> JobResult:
        """Warm-up, then alternating rounds (module doc, step 3); ``run_*`` return a Run, ``check`` compares two
        sides' runs (Java 1.10's with ours, and with Java 1.12's when that side runs)."""
        result.loadavg.append(self.wait_for_quiet())
        second = run_java112 if self.java112 is not None else None
        if warmup:
            run_java()
            if second is not None:
                second()
            run_ours()
        for index in range(self.args.rounds):
            sides = [("java", run_java), *([("java112", second)] if second is not None else []), ("ours", run_ours)]
            if index % 2:
                sides.reverse()
            runs = {name: runner() for name, runner in sides}
            result.java.append(runs["java"])
            result.ours.append(runs["ours"])
            if "java112" in runs:
                result.java112.append(runs["java112"])
            if check is not None and index == 0:
                result.checks.append(check(runs["java"], runs["ours"]))
                if "java112" in runs:
                    result.checks.append("Java 1.12: " + check(runs["java"], runs["java112"]))
            second_text = f" java112 {runs['java112'].seconds:.3f}s" if "java112" in runs else ""
            print(
                f"  {result.name} round {index}: java {runs['java'].seconds:.3f}s{second_text} ours "
                f"{runs['ours'].seconds:.3f}s ratio {runs['ours'].seconds / runs['java'].seconds:.2f}  "
                f"load {load_average()}",
                flush=True,
            )
        result.loadavg.append(load_average())
        self.results.append(result)
        return result

    # ---------------------------------------------------------------- reads
    def scan_jobs(self) -> None:
        """count + sum over each table, full and 0.1% range (warm sessions); ours through a DataFrame of ``load``."""
        self._scans("query", "")

    def scan_aggregate_jobs(self) -> None:
        """The same queries, ours through ``read.aggregate`` (partials folded on the executors, one Spark stage)."""
        self._scans("aggregate", " (ours: read.aggregate)")

    def _scans(self, our_op: str, how: str) -> None:
        first = self.built["mor_pos_first_snapshot"]
        chosen = set(self.args.queries.split(",")) if self.args.queries else None
        readers = self.args.spark_parquet_reader
        for query, reader in [(q, r) for q in sbs.queries(self.args.rows) for r in readers]:
            if chosen is not None and query.name not in chosen:
                continue
            snapshot = first if query.at_first_snapshot else None

            def run_java(query: sbs.Query = query, snapshot: int | None = snapshot) -> Run:
                return as_run(self.java.must("query", table=query.table, where=query.where_sql(), snapshot_id=snapshot))

            def run_ours(query: sbs.Query = query, snapshot: int | None = snapshot, reader: str = reader) -> Run:
                return as_run(
                    self.ours.must(
                        our_op,
                        table=query.table,
                        row_filter=query.row_filter(),
                        snapshot_id=snapshot,
                        spark_parquet_reader=reader != "off",
                        spark_parquet_min_bytes=0 if reader == "forced" else None,
                        all_columns=self.args.ours_all_columns,
                    )
                )

            def run_java112(query: sbs.Query = query, snapshot: int | None = snapshot) -> Run:
                assert self.java112 is not None
                where = query.where_sql()
                return as_run(self.java112.must("query", table=query.table, where=where, snapshot_id=snapshot))

            description = f"count(*), sum(price) of {query.table}" + (" at its first snapshot" if snapshot else "")
            description += (f" where {query.where_sql()}" if query.k_range else "") + how
            description += " (ours: every column loaded, Spark aggregates)" if self.args.ours_all_columns else ""
            name = query.name if our_op == "query" else query.name.replace("scan_", "aggregate_", 1)
            if len(readers) > 1:  # ours several ways in one run: *_engine_only, *_split_forced beside the default
                name += READER_SUFFIXES[reader][0]
                description += READER_SUFFIXES[reader][1]
            self.rounds(JobResult(name, description), run_java, run_ours, check=same_answer, run_java112=run_java112)

    # ---------------------------------------------------------------- ingest
    def ingest_jobs(self) -> None:
        """5M generated rows, and 5M rows from Parquet files, into a new v2 table."""
        rows = self.args.rows
        source = str(self.args.data_dir / "source_parquet")
        for name, op, fields, description in (
            ("ingest_generated", "ingest_generated", {"rows": rows}, f"append of {rows:,} generated rows"),
            ("ingest_parquet", "ingest_parquet", {"source": source}, f"append of {rows:,} rows from 4 Parquet files"),
        ):
            self.rounds(
                JobResult(name, description + " into a new, empty v2 table"),
                lambda op=op, fields=fields: self._ingest(self.java, "ingest_java", op, fields),
                lambda op=op, fields=fields: self._ingest(self.ours, "ingest_ours", op, fields),
                check=lambda _j, other: self.same_rows("ingest_java", other.result["table"]),
                run_java112=lambda op=op, fields=fields: self._ingest(self.java112, "ingest_java112", op, fields),
            )
        for table in ("ingest_java", "ingest_ours", "ingest_java112"):
            self.java.must("drop", table=table)

    def _ingest(self, runner: Runner | None, table: str, op: str, fields: dict[str, Any]) -> Run:
        assert runner is not None
        self.java.must("create_table", table=table)  # the same DDL for every side's target
        run = as_run(runner.must(op, table=table, **fields))
        run.result = {**run.result, "table": table}  # which target the check compares with Java 1.10's
        return run

    def same_rows(self, java_table: str, our_table: str) -> str:
        """Java's checksum of both tables; fails the run when they differ."""
        expected = self.java.must("checksum", table=java_table).result
        actual = self.java.must("checksum", table=our_table).result
        if expected != actual:
            raise AssertionError(f"{our_table} holds other rows than {java_table}: {actual} != {expected}")
        return f"same rows: {expected['count']} rows, checksum {expected['checksum']}"

    # ---------------------------------------------------------------- commits on shared tables
    def _on_shared_table(
        self, runner: Runner | None, table: str, op: str, fields: dict[str, Any], after: dict[str, Any]
    ) -> Run:
        """Run ``op`` on ``table``, remember its outcome's checksum, then roll the table back (untimed)."""
        assert runner is not None
        base = self.java.must("snapshot", table=table).result["snapshot_id"]
        run = as_run(runner.must(op, table=table, **fields))
        if runner.name not in after:
            after[runner.name] = self.java.must("checksum", table=table).result
        runner.must("rollback", table=table, snapshot_id=base)
        return run

    def _compare_outcomes(self, after: dict[str, Any], what: str) -> str:
        """Every side's table after ``what`` holds what Java 1.10's did (called once per compared pair)."""
        for side in ("ours", "java112"):
            if side in after and after[side] != after.get("java"):
                raise AssertionError(f"{what}: {side} left {after[side]}, Java 1.10 left {after.get('java')}")
        return f"same rows after {what}: {after['java']}"

    def upsert_jobs(self) -> None:
        """An upsert of 60,000 keys (50,000 matched) into the 5M-row table, merge-on-read."""
        after: dict[str, Any] = {}
        self.rounds(
            JobResult(
                "upsert",
                f"upsert of {sbs.UPSERT_MATCHED + sbs.UPSERT_NEW:,} keys ({sbs.UPSERT_MATCHED:,} matched) into "
                f"{self.args.rows:,} rows; Java MERGE INTO, merge-on-read",
            ),
            lambda: self._on_shared_table(self.java, "upsert", "upsert", {}, after),
            lambda: self._on_shared_table(self.ours, "upsert", "upsert", {}, after),
            check=lambda _j, _o: self._compare_outcomes(after, "the upsert"),
            run_java112=lambda: self._on_shared_table(self.java112, "upsert", "upsert", {}, after),
        )

    def compact_jobs(self) -> None:
        """Bin-pack of the 2,000 small files into one."""
        after: dict[str, Any] = {}
        options = {"min-input-files": "2"}
        self.rounds(
            JobResult(
                "compact_small", f"rewrite_data_files of {sbs.SMALL_FILES:,} files x 100 rows, min-input-files 2"
            ),
            lambda: self._on_shared_table(self.java, "small", "rewrite", {"options": options}, after),
            lambda: self._on_shared_table(self.ours, "small", "rewrite", {"options": options}, after),
            check=lambda _j, _o: self._compare_outcomes(after, "the rewrite"),
            run_java112=lambda: self._on_shared_table(self.java112, "small", "rewrite", {"options": options}, after),
        )

    def rewrite_jobs(self) -> None:
        """rewrite-all of each table with deletes (the deletes folded into the new files)."""
        for table, label in (("mor_pos", "position deletes"), ("mor_eq", "equality deletes"), ("mor_dv", "DVs")):
            after: dict[str, Any] = {}
            result = JobResult(f"rewrite_all_{table}", f"rewrite_data_files rewrite-all of {table} ({label})")
            if table == "mor_dv" and not self.args.rewrite_v3:
                result.unsupported = "ours: format v3 writes not available yet"
                self.results.append(result)
                continue
            self.rounds(
                result,
                lambda table=table, after=after: self._on_shared_table(
                    self.java, table, "rewrite", {"options": {"rewrite-all": "true"}}, after
                ),
                lambda table=table, after=after: self._on_shared_table(
                    self.ours, table, "rewrite", {"options": {"rewrite-all": "true"}}, after
                ),
                check=lambda _j, _o, after=after: self._compare_outcomes(after, "the rewrite"),
                run_java112=lambda table=table, after=after: self._on_shared_table(
                    self.java112, table, "rewrite", {"options": {"rewrite-all": "true"}}, after
                ),
            )

    # ---------------------------------------------------------------- cold runs
    def cold_jobs(self) -> None:
        """One spark-submit per run: a read job writing the query's rows as Parquet (as Airflow runs it).

        With ``--cold-class-archive ours|both``, that side's driver JVM maps a class-data archive (JDK CDS) made by
        one untimed run of the same job first (``-XX:ArchiveClassesAtExit``), as a deployment would make it once.
        """
        submit = self.java.must("spark_submit_args").result
        submit112 = self.java112.must("spark_submit_args").result if self.java112 is not None else {}
        by_name = {query.name: query for query in sbs.queries(self.args.rows)}
        for name in self.args.cold_queries.split(","):
            query = by_name[name]
            outputs = Path(tempfile.mkdtemp(prefix="side-by-side-cold-"))
            try:
                self._make_class_archives(query, submit, outputs)
                self.rounds(
                    JobResult(
                        f"cold_{name}"
                        + ("_on_spark" if self.args.cold_driver_max_bytes == 0 else "")
                        + (
                            ""
                            if self.args.cold_class_archive == "none"
                            else "_class_archive_" + self.args.cold_class_archive
                        ),
                        f"spark-submit of a read job: price of {query.table}"
                        + (f" where {query.where_sql()}" if query.k_range else "")
                        + " written as Parquet"
                        + (
                            ""
                            if self.args.cold_class_archive == "none"
                            else f" (class-data archive: {self.args.cold_class_archive})"
                        ),
                    ),
                    lambda query=query, outputs=outputs: self._cold_java(query, submit, outputs / "java"),
                    lambda query=query, outputs=outputs: self._cold_ours(query, submit, outputs / "ours"),
                    check=lambda j, o: same_output_rows(Path(j.result["output"]), Path(o.result["output"])),
                    warmup=False,
                    run_java112=lambda query=query, outputs=outputs: self._cold_java(
                        query, submit112, outputs / "java112", side="java112"
                    ),
                )
            finally:
                shutil.rmtree(outputs, ignore_errors=True)

    def cold_aggregate_jobs(self) -> None:
        """One spark-submit per run of count(*) and sum(price): Java's job, and our read job with ``--aggregate``."""
        submit = self.java.must("spark_submit_args").result
        submit112 = self.java112.must("spark_submit_args").result if self.java112 is not None else {}
        by_name = {query.name: query for query in sbs.queries(self.args.rows)}
        for name in self.args.cold_queries.split(","):
            query = by_name[name]
            where = f" where {query.where_sql()}" if query.k_range else ""
            self.rounds(
                JobResult(
                    f"cold_aggregate_{name}" + ("_on_spark" if self.args.cold_driver_max_bytes == 0 else ""),
                    f"spark-submit of count(*), sum(price) of {query.table}{where}",
                ),
                lambda query=query: self._cold_java(query, submit, None),
                lambda query=query: self._cold_ours(query, submit, None),
                check=same_answer,
                warmup=False,
                run_java112=lambda query=query: self._cold_java(query, submit112, None, side="java112"),
            )

    def _class_archive(self, side: str) -> Path | None:
        """The class-data archive of ``side``'s driver JVM when ``--cold-class-archive`` covers that side."""
        if self.args.cold_class_archive not in (side, "both"):
            return None
        return self.args.data_dir / "class_archives" / f"{side}.jsa"

    def _make_class_archives(self, query: sbs.Query, submit: dict[str, Any], outputs: Path) -> None:
        """One untimed run per archived side, writing its archive at the JVM's exit (``cold_jobs`` doc)."""
        for side, run in (("java", self._cold_java), ("ours", self._cold_ours)):
            archive = self._class_archive(side)
            if archive is None:
                continue
            archive.parent.mkdir(parents=True, exist_ok=True)
            archive.unlink(missing_ok=True)
            run(query, submit, outputs / f"{side}_archive")
            print(f"  class-data archive of {side}: {archive} ({archive.stat().st_size} bytes)", flush=True)

    def _driver_java_options(self, side: str, base: str) -> tuple[list[str], Path | None]:
        """``--conf spark.driver.extraJavaOptions`` as the provider's hook builds it for ``side``'s archive (its
        ``jvm_class_archive``), and the archive file the run writes when there is none yet."""
        from airflow_iceberg_provider.jvm_class_archive import DRIVER_JAVA_OPTIONS_CONF, class_archive_conf

        archive = self._class_archive(side)
        conf, partial = class_archive_conf(
            {DRIVER_JAVA_OPTIONS_CONF: base} if base else {}, True, str(archive) if archive else None
        )
        options = conf.get(DRIVER_JAVA_OPTIONS_CONF)
        return (["--conf", f"{DRIVER_JAVA_OPTIONS_CONF}={options}"] if options else []), partial

    def _timed_with_archive(self, side: str, command: list[str], env: dict[str, str], partial: Path | None) -> Run:
        """Run a cold job; an archive its driver JVM wrote is renamed into place, as the provider's hook does."""
        from airflow_iceberg_provider.jvm_class_archive import publish_class_archive

        try:
            run = timed_process(command, env)
        except BaseException:
            if partial is not None:
                publish_class_archive(partial, str(self._class_archive(side)), succeeded=False)
            raise
        if partial is not None:
            publish_class_archive(partial, str(self._class_archive(side)), succeeded=True)
        return run

    def _cold_java(self, query: sbs.Query, submit: dict[str, Any], output: Path | None, side: str = "java") -> Run:
        """Java's one-shot job: the query's rows written to ``output``, or (None) its count and sum printed;
        ``side`` ``java112`` for Iceberg 1.12 on Spark 4.1."""
        python = self.args.java112_python if side == "java112" else self.args.java_python
        java_bin = Path(python).parent
        command = [str(java_bin / "spark-submit"), *common_submit_args()]
        command += ["--jars", submit["jars"]]
        java_options = ""
        for key, value in submit["conf"].items():
            if key == "spark.driver.extraJavaOptions":
                java_options = value
                continue
            command += ["--conf", f"{key}={value}"]
        java_options_args, partial = self._driver_java_options(side, java_options)
        command += java_options_args
        command += [
            str(BENCH_DIR / "side_by_side_java_job.py"),
            "read" if output is not None else "aggregate",
            "--table",
            f"{sbs.CATALOG}.bench.{query.table}",
        ]
        if output is not None:
            command += ["--columns", "price", "--output", str(output)]
        if query.where_sql():
            command += ["--where", query.where_sql()]
        env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
        return _with_output(self._timed_with_archive(side, command, env, partial), output)

    def _cold_ours(self, query: sbs.Query, submit: dict[str, Any], output: Path | None) -> Run:
        """Our read job: the query's rows written to ``output``, or (None) ``--aggregate "count(*),sum(price)"``."""
        from airflow_iceberg_provider.engine_package import engine_zip

        command = [str(Path(sys.executable).parent / "spark-submit"), *common_submit_args()]
        java_options_args, partial = self._driver_java_options("ours", "")
        command += java_options_args
        command += ["--py-files", str(engine_zip())]
        command += [
            str(REPO_ROOT / "spark_jobs" / "read.py"),
            "--catalog",
            sbs.CATALOG,
            "--table",
            f"bench.{query.table}",
        ]
        if output is not None:
            command += ["--columns", "price", "--output", str(output), "--mode", "overwrite"]
        else:
            command += ["--aggregate", "count(*),sum(price)"]
        if self.args.cold_driver_max_bytes is not None:
            command += ["--driver-max-bytes", str(self.args.cold_driver_max_bytes)]
        if query.row_filter():
            command += ["--filter", query.row_filter()]
        run = self._timed_with_archive("ours", command, {**os.environ, **our_catalog_env(self.args.data_dir)}, partial)
        return _with_output(run, output)

    # ---------------------------------------------------------------- in-process first read
    def first_read_jobs(self) -> None:
        """Our engine's first read in a process (caches emptied) against pyarrow's read of the same files."""
        reply = self.ours.must("first_read", table="mor_eq", rounds=self.args.rounds * 3)
        result = JobResult("first_read_inprocess_mor_eq", "in-process read of price, caches emptied, vs pyarrow")
        result.checks.append(json.dumps(reply.result))
        self.results.append(result)


def _with_output(run: Run, output: Path | None) -> Run:
    """``run`` naming the folder its job wrote (the cold checks compare two sides' folders)."""
    if output is not None:
        run.result = {**run.result, "output": str(output)}
    return run


def same_answer(java: Run, ours: Run) -> str:
    """Equal count and (up to summation order) equal sum; fails the run otherwise."""
    j, o = java.result, ours.result
    if j["count"] != o["count"] or not math.isclose(j["sum_price"] or 0, o["sum_price"] or 0, rel_tol=1e-9):
        raise AssertionError(f"answers differ: Java {j}, ours {o}")
    return f"same answer: {j['count']} rows, sum {j['sum_price']:.2f}"


def same_output_rows(java_output: Path, our_output: Path) -> str:
    """Both cold jobs wrote the same number of rows and the same sum of price."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    def answer(path: Path) -> tuple[int, float]:
        table = ds.dataset(str(path), format="parquet", exclude_invalid_files=True).to_table()
        return table.num_rows, pc.sum(table.column("price")).as_py() or 0.0

    java, ours = answer(java_output), answer(our_output)
    if java[0] != ours[0] or not math.isclose(java[1], ours[1], rel_tol=1e-9):
        raise AssertionError(f"cold outputs differ: Java {java}, ours {ours}")
    return f"same output: {java[0]} rows"


def common_submit_args() -> list[str]:
    """The spark-submit options both cold jobs get (those Airflow's operator would pass, plus the shared settings)."""
    args = ["--master", sbs.SPARK_CONF["spark.master"], "--driver-memory", "2g"]
    for key in ("spark.sql.session.timeZone", "spark.ui.showConsoleProgress", "spark.driver.host"):
        args += ["--conf", f"{key}={sbs.SPARK_CONF[key]}"]
    return args


def our_catalog_env(data_dir: Path) -> dict[str, str]:
    """pyiceberg's environment for the benchmark's catalog, and Spark's Python."""
    prefix = f"PYICEBERG_CATALOG__{sbs.CATALOG.upper()}__"
    return {
        prefix + "TYPE": "sql",
        prefix + "URI": f"sqlite:///{data_dir / 'catalog.db'}",
        prefix + "WAREHOUSE": f"file://{data_dir / 'warehouse'}",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


def timed_process(command: list[str], env: dict[str, str]) -> Run:
    """Run a spark-submit to its end; wall seconds from launch to exit, CPU of its process tree (reaped)."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=REPO_ROOT)
    seconds = time.perf_counter() - started
    after = os.times()
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "{}"
    try:
        result = json.loads(last)
    except json.JSONDecodeError:
        result = {"last_line": last}
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    answer = result.get("aggregates") or result  # ours: {"aggregates": {...}}; Java's job: count and sum_price
    count, total = answer.get("count(*)", answer.get("count")), answer.get("sum(price)", answer.get("sum_price"))
    answered = {"count": count, "sum_price": total} if count is not None else {}
    return Run(round(seconds, 3), round(cpu, 3), 0, 0, 0, {"seconds": result.get("seconds"), **answered})


def markdown(header: dict[str, Any], results: list[JobResult]) -> str:
    """The results as a Markdown table."""
    lines = [
        f"# Side by side with Iceberg Java ({header['date']})",
        "",
        f"Machine: nproc {header['machine']['nproc']}, load {header['machine']['loadavg_start']} at the start, "
        f"{header['machine']['loadavg_end']} at the end; engine {header['engine_commit']}.",
        "",
        "Java is Iceberg 1.10.2 on Spark 3.5; Java 1.12 is Iceberg 1.12.0 on Spark 4.1 (`-` where it did not run).",
        "",
        "| job | Java s | Java 1.12 s | ours s | ours/Java | ours/Java 1.12 | per-round ratios (Java, Java 1.12) | "
        "Java CPU s | Java 1.12 CPU s | ours CPU s | Spark jobs/stages/tasks Java | Java 1.12 | ours |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|---|",
    ]
    for result in results:
        s = result.summary()
        if result.unsupported:
            lines.append(f"| {result.name} | - | - | - | {result.unsupported} | | | | | | | | |")
            continue
        if not result.java and not result.ours:
            lines.append(f"| {result.name} | - | - | - | see checks | | | | | | | | |")
            continue
        ratio_112 = f"**{s['ratio_112']}x**" if s["ratio_112"] is not None else "-"
        lines.append(
            f"| {s['job']} | {s['java_s']} | {s['java112_s'] or '-'} | {s['ours_s']} | **{s['ratio']}x** | "
            f"{ratio_112} | {s['ratios']}, {s['ratios_112']} | {s['java_cpu_s']} | {s['java112_cpu_s'] or '-'} | "
            f"{s['ours_cpu_s']} | {s['java_spark']} | {s['java112_spark']} | {s['ours_spark']} |"
        )
    lines += ["", "Checks:", ""]
    lines += [f"- {result.name}: {check}" for result in results for check in result.checks]
    return "\n".join(lines) + "\n"


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default=",".join(JOB_GROUPS), help=f"comma list of {', '.join(JOB_GROUPS)}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=sbs.ROWS)
    parser.add_argument("--queries", help="comma list of scan queries to run (default: all), e.g. scan_full_none")
    parser.add_argument(
        "--ours-all-columns",
        action="store_true",
        help="ours: scans load every column and Spark aggregates price (a user's load() then agg), not price alone",
    )
    parser.add_argument(
        "--spark-parquet-reader",
        type=lambda text: tuple(part.strip() for part in text.split(",")),
        default=("on",),
        help="ours, a comma list run in turn per query: on (delete-free files through Spark's Parquet reader by the "
        "default rule, the default), forced (whatever their size), off (every file through the engine)",
    )
    parser.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data" / "side_by_side")
    parser.add_argument("--java-env", choices=("project", "recipe"), default="project")
    parser.add_argument(
        "--second-java",
        choices=("1.12", "none"),
        default="1.12",
        help="a second Java column: Iceberg 1.12 on Spark 4.1 (the project's java_env 1.12), or none",
    )
    parser.add_argument("--anchor-dir", default="/work/shared/iceberg-java", help="the recipe (anchor_env.py)")
    parser.add_argument("--anchor-root", type=Path, default=Path(os.environ.get("ANCHOR_ROOT", "/tmp/iceberg-java")))
    parser.add_argument("--cold-queries", default="scan_range_eq,scan_full_pos,scan_full_eq")
    parser.add_argument(
        "--cold-driver-max-bytes",
        type=int,
        help="cold runs: our read job's --driver-max-bytes (0: always on Spark; default: the job's)",
    )
    parser.add_argument(
        "--cold-class-archive",
        choices=("none", "ours", "both"),
        default="none",
        help="cold runs: which sides' driver JVMs map a class-data archive made by one untimed run first",
    )
    parser.add_argument("--rewrite-v3", action="store_true", help="also rewrite the v3 table with ours")
    parser.add_argument("--max-load", type=float, default=2.5, help="wait for a 1-minute load below this per job")
    parser.add_argument("--quiet-timeout", type=float, default=120, help="seconds to wait for that at most")
    parser.add_argument("--results-name", help="file name stem under bench/results (default side_by_side_<date>)")
    args = parser.parse_args()
    args.data_dir = args.data_dir.resolve()
    if set(args.spark_parquet_reader) - set(READER_SUFFIXES):
        parser.error(f"--spark-parquet-reader takes {', '.join(READER_SUFFIXES)}")
    unknown = set(args.jobs.split(",")) - set(JOB_GROUPS)
    if unknown:
        parser.error(f"unknown jobs {sorted(unknown)}")
    return args


@dataclass(frozen=True)
class JavaEnvironment:
    """The Java side's interpreter (pyspark 3.5), the jars Spark loads, and settings those jars need."""

    python: str
    jars: list[str]
    conf: dict[str, str]


def java_environment(args: argparse.Namespace, generation: str | None = None) -> JavaEnvironment:
    """The project's Java environment (built on first use; ``generation`` one of ``java_env``'s, else its default),
    or the shared recipe's."""
    if args.java_env == "project" or generation is not None:
        sys.path.insert(0, str(REPO_ROOT))
        from tests.support import java_env

        env = java_env.ensure(generation)
        return JavaEnvironment(env.python, list(env.jars), {"spark.driver.extraJavaOptions": "-Duser.timezone=UTC"})
    os.environ["ANCHOR_ROOT"] = str(args.anchor_root)
    sys.path.insert(0, args.anchor_dir)
    import anchor_env

    return JavaEnvironment(
        str(args.anchor_root / "venv" / "bin" / "python"),
        [*anchor_env.iceberg_jars(), anchor_env.SQLITE_JAR],
        {
            "spark.driver.extraJavaOptions": f"-Djava.library.path={anchor_env.SQLITE_JNI_DIR} -Duser.timezone=UTC",
            "spark.driver.extraLibraryPath": anchor_env.SQLITE_JNI_DIR,
        },
    )


def main() -> None:
    """Start the runners, build the tables, run the chosen jobs, write the results."""
    args = parse_args()
    run_start = RunStart()
    results_dir = BENCH_DIR / "results"
    results_dir.mkdir(exist_ok=True)
    logs_dir = BENCH_DIR / "data" / "side_by_side_logs"  # the runners' stderr (Spark's logs), not kept in git
    logs_dir.mkdir(parents=True, exist_ok=True)
    stem = args.results_name or f"side_by_side_{dt.date.today().isoformat()}"
    java_environment_ = java_environment(args)
    args.java_python = java_environment_.python
    second_java = java_environment(args, "1.12") if args.second_java == "1.12" else None
    args.java112_python = second_java.python if second_java is not None else None
    catalog_db, warehouse = args.data_dir / "catalog.db", args.data_dir / "warehouse"

    def java_runner(name: str, environment: JavaEnvironment) -> Runner:
        """A Java side's runner in its environment's virtualenv, on the shared catalog."""
        return Runner(
            name,
            [
                environment.python,
                str(BENCH_DIR / "side_by_side_java.py"),
                "--jars",
                ",".join(environment.jars),
                "--catalog-db",
                str(catalog_db),
                "--warehouse",
                str(warehouse),
                "--conf",
                json.dumps(environment.conf),
            ],
            {**os.environ, "PYSPARK_PYTHON": environment.python, "PYSPARK_DRIVER_PYTHON": environment.python},
            logs_dir / f"{stem}.{name}.log",
        )

    java = java_runner("java", java_environment_)
    ours = java112 = None
    try:
        source = args.data_dir / "source_parquet"
        built = java.must("build", rows=args.rows, parquet_source=str(source)).result
        print(f"tables: made {built['made'] or 'none'}; {json.dumps(built['files'])}", flush=True)
        if second_java is not None:  # the tables exist now: its build only reports its versions
            java112 = java_runner("java112", second_java)
            built["versions_java112"] = java112.must("build", rows=args.rows, parquet_source=str(source)).result[
                "versions"
            ]
        ours = Runner(
            "ours",
            [
                sys.executable,
                str(BENCH_DIR / "side_by_side_ours.py"),
                "--catalog-db",
                str(catalog_db),
                "--warehouse",
                str(warehouse),
            ],
            {**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            logs_dir / f"{stem}.ours.log",
        )
        bench = SideBySide(args, java, ours, built, java112)
        chosen = args.jobs.split(",")

        def write_results() -> str:
            header = run_start.header(args)
            header["versions"] = built.get("versions")
            header["versions_java112"] = built.get("versions_java112")
            header["runner_start_seconds"] = {
                "java": java.start_seconds,
                "ours": ours.start_seconds,
                **({"java112": java112.start_seconds} if java112 is not None else {}),
            }
            report = {
                **header,
                "summary": [result.summary() for result in bench.results],
                "jobs": [asdict(result) for result in bench.results],
            }
            (results_dir / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
            table = markdown(header, bench.results)
            (results_dir / f"{stem}.md").write_text(table)
            return table

        for group in JOB_GROUPS:
            if group in chosen:
                print(f"{group} (load {load_average()})", flush=True)
                getattr(bench, f"{group}_jobs")()
                write_results()  # after every group: a long run stopped midway keeps what it measured
        print(write_results())
    finally:
        java.close()
        for runner in (java112, ours):
            if runner is not None:
                runner.close()


if __name__ == "__main__":
    main()
