"""Planning and maintenance at production sizes: Iceberg Java 1.10.2 and ours (and pyiceberg) on the same tables.

1. Build the tables that are missing (``scale_tables`` module doc; ``<data-dir>/tables.json`` records how each was
   built and what it holds): 10^3 .. 10^6 data files, shapes of 1, 10 and 100 manifests (Java's ``add_files`` with
   manifest merging on and off), unpartitioned and partitioned, a merge-on-read DELETE's position deletes (v3:
   deletion vectors) as the second snapshot. Java builds them (``scale_java.py``, a warm Spark 3.5 session with
   ``ScaleBench.java`` compiled by this script on first use).
2. Run the chosen jobs (``--jobs``), each on every chosen size and shape, Java and ours alternating (the side that
   goes first changes every round, so both see the same machine load):
   - ``plan``: warm planning, one untimed plan per side then ``--rounds`` rounds: Java's ``planTasks`` (timed in its
     JVM), ours ``open_read_session(...).tasks``, pyiceberg's ``plan_files()``; point, partition and no filter, at
     the snapshot before and after the deletes. Same data files required of Java and ours.
   - ``memory``: ours and pyiceberg once each in a fresh process (peak RSS above the process's state before
     planning), Java's heap in its warm JVM around one plan (``ScaleBench.planTasksHeap``).
   - ``profile``: one plan of ours under cProfile: seconds per part of the engine, per data file and per manifest.
   - ``cold``: one ``spark-submit`` per run: Java's count and sum (``scale_java_job.py``) against our read job
     (``read.py --aggregate``), same filters and snapshots; same answers required.
   - ``compact``: compaction planning, Java's ``BinPackRewriteFilePlanner.plan()`` against our compact planner.
   - ``sensor``: the compaction-needed sensor's computation from manifests against Java's ``files`` metadata
     table summed the same way, warm; and ours once in a fresh process.
   - ``orphans``: remove-orphan-files dry runs, one ``spark-submit`` each (100 planted orphans must be found).
   - ``expire``: expire-snapshots over EXPIRE_SNAPSHOTS snapshots, one ``spark-submit`` each, the table restored
     (metadata directory and catalog pointer) before every run.
   - ``upsert``: an upsert of UPSERT_MATCHED + UPSERT_NEW keys, Java's MERGE INTO against ``ingest.py --mode
     upsert``, one ``spark-submit`` each, rolled back after each; same rows required.
   - ``scan``: count and sum(price) through Spark over the whole table and a 0.1% range (tables of 50M+ rows).
3. Write ``bench/results/<name>.json`` (load before and after every job, versions, the exact command) and the
   cost-growth tables (``scale_report.py``) in ``bench/results/<name>.md``; ``--report`` regenerates
   ``bench/results/scale.md`` from one or more result files.

    .venv/bin/python bench/scale_benchmark.py --sizes 1e3,1e4 --jobs build,plan,memory --rounds 3 \\
        --data-dir /tmp/scalebench/data
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
import scale_report  # noqa: E402
import scale_tables as st  # noqa: E402
from run_info import RunStart, load_average  # noqa: E402
from side_by_side import Runner, common_submit_args, java_environment, our_catalog_env  # noqa: E402

JOBS = ("build", "plan", "memory", "profile", "cold", "compact", "sensor", "orphans", "expire", "upsert", "scan")
ORPHANS_PLANTED = 100


def parse_size(text: str) -> int:
    """``1e5``, ``10^5`` or ``100000``."""
    text = text.strip()
    if "^" in text:
        base, exponent = text.split("^")
        return int(base) ** int(exponent)
    return int(float(text))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e3,1e4,1e5", help="data files per table: 1e3,1e4,1e5,1e6")
    parser.add_argument("--shapes", default=",".join(st.SHAPES), help=f"comma list of {', '.join(st.SHAPES)}")
    parser.add_argument("--jobs", default="build,plan,memory,profile", help=f"comma list of {', '.join(JOBS)}")
    parser.add_argument("--filters", default="point,partition,none")
    parser.add_argument("--snapshots", default="base,deletes", help="base (before the deletes), deletes (after)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--pyiceberg-max-files",
        type=parse_size,
        default=100_000,
        help="plan, memory: pyiceberg plans only tables of at most these data files (minutes per plan above)",
    )
    parser.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data" / "scale")
    parser.add_argument("--java-memory", default="6g", help="the Java runner's driver memory")
    parser.add_argument(
        "--cold-planning-modes",
        default="",
        help="cold: also run our read job with these --planning-mode values (e.g. local,distributed)",
    )
    parser.add_argument("--scan-min-rows", type=int, default=50_000_000, help="scan: tables of at least these rows")
    parser.add_argument("--results-name", help="file stem under bench/results (default scale_<UTC date and time>)")
    parser.add_argument(
        "--report",
        nargs="*",
        type=Path,
        help="only regenerate bench/results/scale.md from these result files (later files win on the same key)",
    )
    args = parser.parse_args(argv)
    if args.report is not None:
        return args
    args.data_dir = args.data_dir.resolve()
    args.size_list = [parse_size(size) for size in args.sizes.split(",") if size.strip()]
    args.shape_list = [shape for shape in args.shapes.split(",") if shape]
    args.job_list = [job for job in args.jobs.split(",") if job]
    args.filter_list = [name for name in args.filters.split(",") if name]
    args.snapshot_list = [name for name in args.snapshots.split(",") if name]
    for label, given, known in (
        ("shapes", args.shape_list, st.SHAPES),
        ("jobs", args.job_list, JOBS),
        ("filters", args.filter_list, ("point", "partition", "none")),
        ("snapshots", args.snapshot_list, ("base", "deletes")),
    ):
        unknown = sorted(set(given) - set(known))
        if unknown:
            parser.error(f"unknown {label} {unknown}; known: {', '.join(known)}")
    return args


# ---------------------------------------------------------------------------------------------------------- helpers
def helper_jar(data_dir: Path, runtime_jar: str) -> Path:
    """``ScaleBench.java`` compiled against Iceberg's runtime into a jar named by the source's digest."""
    source = BENCH_DIR / "java" / "ScaleBench.java"
    digest = hashlib.sha256(source.read_bytes() + runtime_jar.encode()).hexdigest()[:12]
    jar = data_dir / "java" / f"scale-bench-{digest}.jar"
    if jar.exists():
        return jar
    classes = data_dir / "java" / f"classes-{digest}"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    for command in (
        ["javac", "--release", "17", "-cp", runtime_jar, "-d", str(classes), str(source)],
        ["jar", "cf", str(jar) + ".partial", "-C", str(classes), "."],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    os.replace(str(jar) + ".partial", jar)
    return jar


def median(values: list[float]) -> float | None:
    """Median rounded to the millisecond's tenth (None for none)."""
    return round(statistics.median(values), 4) if values else None


def timed_command(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run a cold job to its end: wall seconds from launch to exit, the last stdout line as JSON."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=REPO_ROOT)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(
            f"{shlex.join(command[:3])} ... exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        result = {"last_line": lines[-1]}
    short = {
        key: {"count": len(value), "first": value[:3]} if isinstance(value, list) and len(value) > 20 else value
        for key, value in result.items()
    }
    return {"seconds": round(seconds, 3), "result": short}


class Tables:
    """``<data-dir>/tables.json``: what each built table holds and how it was built."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "tables.json"
        self.built: dict[str, dict[str, Any]] = json.loads(self.path.read_text()) if self.path.exists() else {}

    def get(self, name: str) -> dict[str, Any]:
        """The record of a built table (fails clearly when it was not built)."""
        if name not in self.built:
            raise SystemExit(f"table {name} was not built: run with --jobs build (and its size and shape) first")
        return self.built[name]

    def save(self, record: dict[str, Any]) -> None:
        """Record a built table (written at once: a long build stopped midway keeps what it made), keeping what
        another run on the same data directory recorded meanwhile."""
        on_disk = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.built = {**on_disk, **self.built, record["name"]: record}
        partial = self.path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps(self.built, indent=1, sort_keys=True) + "\n")
        os.replace(partial, self.path)


# ---------------------------------------------------------------------------------------------------------- the run
class ScaleBenchmark:
    """The runners, the tables and the jobs; ``records`` collects every measurement."""

    def __init__(self, args: argparse.Namespace, java: Runner, ours: Runner, java_python: str) -> None:
        self.args, self.java, self.ours, self.java_python = args, java, ours, java_python
        self.tables = Tables(args.data_dir)
        self.records: list[dict[str, Any]] = []
        self.submit: dict[str, Any] | None = None

    # ------------------------------------------------------------------ build
    def build(self) -> None:
        """Build every missing table of the chosen sizes and shapes, each size's seeds first (``scale_tables``)."""
        for files in sorted(self.args.size_list):
            for shape in self.args.shape_list:
                self.build_table(files, shape)

    def build_table(self, files: int, shape: str) -> dict[str, Any] | None:
        """The table of ``files`` and ``shape``, built when missing (its seed first); None when not built."""
        name = st.table_name(files, shape)
        if name in self.tables.built:
            return self.tables.built[name]
        seed = st.seed_shape(shape)
        if files > st.REAL_MAX_FILES and st.SHAPES[shape].format_version != 2:
            print(f"build {name}: skipped (above {st.REAL_MAX_FILES:,} files only v2 shapes are built)", flush=True)
            return None
        if files <= st.REAL_MAX_FILES and shape == seed:
            request: dict[str, Any] = {"op": "build", "files": files, "shape": shape}
        else:
            seed_files = min(files, st.REAL_MAX_FILES)
            source = self.build_table(seed_files, seed)
            if source is None:
                return None
            request = {
                "op": "build_from",
                "files": files,
                "shape": shape,
                "source": source["name"],
                "source_base_snapshot": source["base_snapshot"],
                "copies": files // seed_files,
            }
        print(f"build {name} ({st.SHAPES[shape].describe()}; load {load_average()})", flush=True)
        started = time.monotonic()
        reply = self.java.must(request.pop("op"), **request)
        record = {**reply.result, "build_seconds": round(time.monotonic() - started, 1), "load_after": load_average()}
        self.tables.save(record)
        print(f"  {name}: {_facts(record)} in {record['build_seconds']} s", flush=True)
        return record

    # ------------------------------------------------------------------ iteration
    def cases(self, shapes: list[str] | None = None) -> list[tuple[int, str, dict[str, Any]]]:
        """(files, shape, table record) of every chosen size and shape that was built."""
        out = []
        for files in sorted(self.args.size_list):
            for shape in shapes or self.args.shape_list:
                name = st.table_name(files, shape)
                if name in self.tables.built:
                    out.append((files, shape, self.tables.built[name]))
                else:
                    print(f"  {name} not built: skipped", flush=True)
        return out

    def snapshots(self, record: dict[str, Any]) -> list[tuple[str, int]]:
        """(label, snapshot id) of the chosen snapshots of a table."""
        ids = {"base": record["base_snapshot"], "deletes": record["delete_snapshot"]}
        return [(label, ids[label]) for label in self.args.snapshot_list if ids[label] is not None]

    def filters(self, files: int) -> list[st.Filter]:
        """The chosen filters."""
        return [f for f in st.filters(files) if f.name in self.args.filter_list]

    def alternate(self, sides: list[tuple[str, Callable[[], dict[str, Any]]]], rounds: int, warmup: bool) -> dict:
        """Run each side once per round, rotating which goes first; an untimed run of each first if ``warmup``."""
        if warmup:
            for _name, run in sides:
                run()
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in sides}
        for index in range(rounds):
            shift = index % len(sides)
            for name, run in sides[shift:] + sides[:shift]:
                runs[name].append(run())
        return runs

    def record(self, job: str, files: int, shape: str, *, case: dict[str, Any], runs: dict, load_before: str) -> dict:
        """Store one measurement with medians and the median of per-round ratios ours / Java."""
        summary: dict[str, Any] = {}
        for side, side_runs in runs.items():
            seconds = [run["seconds"] for run in side_runs if "seconds" in run]
            summary[f"{side}_s"] = median(seconds)
        if runs.get("java") and runs.get("ours"):
            ratios = [
                o["seconds"] / j["seconds"] for j, o in zip(runs["java"], runs["ours"], strict=False) if j["seconds"]
            ]
            summary["ratio"] = median(ratios)
            summary["ratios"] = [round(ratio, 3) for ratio in ratios]
            cpu_ratios = [
                o["cpu_seconds"] / j["cpu_seconds"]
                for j, o in zip(runs["java"], runs["ours"], strict=False)
                if j.get("cpu_seconds") and "cpu_seconds" in o
            ]
            if cpu_ratios:  # CPU seconds of each process: what the work cost, whatever else the machine ran
                summary["cpu_ratio"] = median(cpu_ratios)
        entry = {
            "job": job,
            "files": files,
            "shape": shape,
            **case,
            "summary": summary,
            "runs": runs,
            "load": [load_before, load_average()],
        }
        self.records.append(entry)
        print(
            f"  {job} {st.table_name(files, shape)} {case}: "
            + " ".join(f"{key} {value}" for key, value in summary.items() if key != "ratios")
            + f"  load {load_average()}",
            flush=True,
        )
        return entry

    # ------------------------------------------------------------------ planning
    def plan(self) -> None:
        """Warm planning, Java / ours / pyiceberg alternating (module doc, ``plan``)."""
        for files, shape, record in self.cases():
            name = record["name"]
            for label, snapshot in self.snapshots(record):
                for flt in self.filters(files):
                    load_before = load_average()
                    java_request = {"table": name, "snapshot_id": snapshot, "filter": flt.java}
                    our_request = {"table": name, "snapshot_id": snapshot, "row_filter": flt.row_filter}
                    sides: list[tuple[str, Callable[[], dict[str, Any]]]] = [
                        ("java", lambda r=java_request: self.java.must("plan", **r).result),
                        ("ours", lambda r=our_request: self.ours.must("plan", **r).result),
                    ]
                    if files <= self.args.pyiceberg_max_files:
                        sides.append(("pyiceberg", lambda r=our_request: self.ours.must("pyiceberg_plan", **r).result))
                    runs = self.alternate(
                        sides,
                        self.args.rounds,
                        warmup=True,
                    )
                    entry = self.record(
                        "plan",
                        files,
                        shape,
                        case={"snapshot": label, "filter": flt.name},
                        runs=runs,
                        load_before=load_before,
                    )
                    entry["checks"] = same_files(runs)

    def memory(self) -> None:
        """Peak memory of one plan: ours and pyiceberg in fresh processes, Java's heap in its warm JVM."""
        for files, shape, record in self.cases():
            name = record["name"]
            for label, snapshot in self.snapshots(record):
                for flt in self.filters(files):
                    load_before = load_average()
                    our_request = {"table": name, "snapshot_id": snapshot, "row_filter": flt.row_filter}
                    java_request = {"table": name, "snapshot_id": snapshot, "filter": flt.java}
                    sides: list[tuple[str, Callable[[], dict[str, Any]]]] = [
                        ("java", lambda r=java_request: self.java.must("plan_heap", **r).result),
                        ("ours", lambda r=our_request: self.once("ours", r)),
                    ]
                    if files <= self.args.pyiceberg_max_files:
                        sides.append(("pyiceberg", lambda r=our_request: self.once("pyiceberg", r)))
                    runs = self.alternate(
                        sides,
                        1,
                        warmup=False,
                    )
                    self.record(
                        "memory",
                        files,
                        shape,
                        case={"snapshot": label, "filter": flt.name},
                        runs=runs,
                        load_before=load_before,
                    )

    def once(self, work: str, request: dict[str, Any]) -> dict[str, Any]:
        """One measurement of ``work`` in a fresh process of ours (``scale_ours.py once``)."""
        command = [
            sys.executable,
            str(BENCH_DIR / "scale_ours.py"),
            "once",
            "--data-dir",
            str(self.args.data_dir),
            "--work",
            work,
            "--request",
            json.dumps(request),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO_ROOT, env=self.our_env())
        if done.returncode:
            raise RuntimeError(f"{shlex.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def our_env(self) -> dict[str, str]:
        """Our processes' environment: the repository first on the path, the benchmark's catalog."""
        return {**os.environ, "PYTHONPATH": str(REPO_ROOT), **our_catalog_env(self.args.data_dir)}

    def profile(self) -> None:
        """Where our planning time goes: one plan under cProfile per case (point and no filter)."""
        for files, shape, record in self.cases():
            for label, snapshot in self.snapshots(record):
                for flt in self.filters(files):
                    if flt.name == "partition":
                        continue
                    load_before = load_average()
                    request = {"table": record["name"], "snapshot_id": snapshot, "row_filter": flt.row_filter}
                    self.ours.must("plan", **request)  # warm, as the timed plans are
                    result = self.ours.must("profile", **request).result
                    manifests = record["data_manifests"] + (record["delete_manifests"] if label == "deletes" else 0)
                    result["manifests"] = manifests
                    result["table_data_files"] = record["data_files"]
                    self.record(
                        "profile",
                        files,
                        shape,
                        case={"snapshot": label, "filter": flt.name},
                        runs={"ours": [result]},
                        load_before=load_before,
                    )

    # ------------------------------------------------------------------ cold jobs
    def spark_submit(self) -> dict[str, Any]:
        """Jars and settings of Java's cold jobs (asked once)."""
        if self.submit is None:
            self.submit = self.java.must("spark_submit_args").result
        return self.submit

    def java_job(self, *job_args: str) -> list[str]:
        """The command of a cold Java job (``scale_java_job.py``)."""
        submit = self.spark_submit()
        command = [str(Path(self.java_python).parent / "spark-submit"), *common_submit_args(), "--jars", submit["jars"]]
        for key, value in submit["conf"].items():
            command += ["--conf", f"{key}={value}"]
        return [*command, str(BENCH_DIR / "scale_java_job.py"), *job_args]

    def java_env(self) -> dict[str, str]:
        """The Java job's environment (its venv's Python for Spark)."""
        return {**os.environ, "PYSPARK_PYTHON": self.java_python, "PYSPARK_DRIVER_PYTHON": self.java_python}

    def our_job(self, script: str, *job_args: str) -> list[str]:
        """The command of one of our jobs as Airflow submits it."""
        from airflow_iceberg_provider.engine_package import engine_zip

        command = [str(Path(sys.executable).parent / "spark-submit"), *common_submit_args()]
        command += ["--py-files", str(engine_zip())]
        return [*command, str(REPO_ROOT / "spark_jobs" / script), *job_args, "--catalog", st.CATALOG]

    def cold(self) -> None:
        """One spark-submit per run: count and sum at each filter and snapshot; same answer on both sides."""
        for files, shape, record in self.cases():
            name = record["name"]
            for label, snapshot in self.snapshots(record):
                for flt in self.filters(files):
                    load_before = load_average()
                    java_args = ["aggregate", "--table", f"{st.CATALOG}.{st.NAMESPACE}.{name}"]
                    java_args += ["--snapshot-id", str(snapshot)] + (
                        ["--where", flt.where_sql] if flt.where_sql else []
                    )
                    our_args = ["--table", f"{st.NAMESPACE}.{name}", "--aggregate", "count(*),sum(price)"]
                    our_args += ["--snapshot-id", str(snapshot)] + (
                        ["--filter", flt.row_filter] if flt.row_filter else []
                    )
                    sides = [
                        ("java", lambda a=java_args: timed_command(self.java_job(*a), self.java_env())),
                        ("ours", lambda a=our_args: timed_command(self.our_job("read.py", *a), self.our_env())),
                    ]
                    for mode in filter(None, self.args.cold_planning_modes.split(",")):
                        mode_args = [*our_args, "--planning-mode", mode]
                        sides.append(
                            (
                                f"ours_{mode}",
                                lambda a=mode_args: timed_command(self.our_job("read.py", *a), self.our_env()),
                            )
                        )
                    runs = self.alternate(sides, self.args.rounds, warmup=False)
                    entry = self.record(
                        "cold",
                        files,
                        shape,
                        case={"snapshot": label, "filter": flt.name},
                        runs=runs,
                        load_before=load_before,
                    )
                    entry["checks"] = same_answers(runs)

    # ------------------------------------------------------------------ maintenance
    def compact(self) -> None:
        """Compaction planning of the current snapshot: Java's bin-pack planner against ours, warm, alternating."""
        for files, shape, record in self.cases():
            request = {"table": record["name"], "options": {}}
            load_before = load_average()
            runs = self.alternate(
                [
                    ("java", lambda r=request: self.java.must("rewrite_plan", **r).result),
                    ("ours", lambda r=request: self.ours.must("compact_plan", **r).result),
                ],
                self.args.rounds,
                warmup=True,
            )
            once = self.once("compact", {"table": record["name"]})
            entry = self.record(
                "compact", files, shape, case={"snapshot": "current"}, runs=runs, load_before=load_before
            )
            entry["once"] = once
            java, ours = runs["java"][0], runs["ours"][0]
            entry["checks"] = [
                f"groups Java {java['groups']} ours {ours['groups']}; files Java {java['files']} ours {ours['files']}"
                + ("" if (java["groups"], java["files"]) == (ours["groups"], ours["files"]) else " (DIFFER)")
            ]

    def sensor(self) -> None:
        """The compaction-needed sensor's computation, warm, against Iceberg Java summing the same live files from
        its ``files`` metadata table (the sensor's defaults: small under 384 MiB, fragments under 64 MiB); once
        more in a fresh process (memory). Both must count the same data and delete files."""
        thresholds = {"small": 384 * 1024 * 1024, "fragment": 64 * 1024 * 1024}
        for files, shape, record in self.cases():
            request = {"table": record["name"]}
            load_before = load_average()
            runs = self.alternate(
                [
                    ("java", lambda r=request: self.java.must("file_sums", **r, **thresholds).result),
                    ("ours", lambda r=request: self.ours.must("sensor", **r).result),
                ],
                self.args.rounds,
                warmup=True,
            )
            runs["ours_once"] = [self.once("sensor", request)]
            entry = self.record(
                "sensor", files, shape, case={"snapshot": "current"}, runs=runs, load_before=load_before
            )
            java, ours = runs["java"][0], runs["ours"][0]
            counted = [(side["data_files"], side["delete_files"]) for side in (java, ours)]
            entry["checks"] = [
                f"data and delete files: Java {counted[0]}, ours {counted[1]}"
                + ("" if counted[0] == counted[1] else " (DIFFER)")
            ]

    def orphans(self) -> None:
        """remove-orphan-files dry runs with ORPHANS_PLANTED old orphans planted; both must find exactly those."""
        cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(hours=25)
        for files, shape, record in self.cases():
            name = record["name"]
            plant_orphans(Path(record["location"]), self.args.data_dir)
            load_before = load_average()
            java_args = [
                "sql",
                "--statement",
                f"CALL {st.CATALOG}.system.remove_orphan_files(table => '{st.NAMESPACE}.{name}', "
                f"older_than => TIMESTAMP '{cutoff.strftime('%Y-%m-%d %H:%M:%S')}', dry_run => true)",
            ]
            our_args = [
                "remove-orphan-files",
                "--table",
                f"{st.NAMESPACE}.{name}",
                "--older-than",
                cutoff.isoformat(timespec="seconds"),
                "--dry-run",
            ]
            runs = self.alternate(
                [
                    ("java", lambda a=java_args: timed_command(self.java_job(*a), self.java_env())),
                    ("ours", lambda a=our_args: timed_command(self.our_job("maintain.py", *a), self.our_env())),
                ],
                self.args.rounds,
                warmup=False,
            )
            entry = self.record(
                "orphans",
                files,
                shape,
                case={"listed_files": count_files(Path(record["location"]))},
                runs=runs,
                load_before=load_before,
            )
            java_found = runs["java"][0]["result"].get("rows")
            ours_found = _orphans_found(runs["ours"][0]["result"])
            entry["checks"] = [
                f"orphans found: Java {java_found}, ours {ours_found} (planted {ORPHANS_PLANTED})"
                + ("" if java_found == ours_found == ORPHANS_PLANTED else " (DIFFER)")
            ]

    def expire(self) -> None:
        """expire-snapshots over EXPIRE_SNAPSHOTS snapshots; the table restored before each run."""
        for files in sorted(self.args.size_list):
            name = st.expire_table_name(files)
            if name not in self.tables.built:
                source = self.build_table(files, "u1")
                if source is None:
                    continue
                print(f"build {name} (load {load_average()})", flush=True)
                started = time.monotonic()
                reply = self.java.must("build_expire", files=files, source_base_snapshot=source["base_snapshot"])
                record = {**reply.result, "build_seconds": round(time.monotonic() - started, 1)}
                backup_table(self.args.data_dir, record)
                self.tables.save(record)
                print(f"  {name}: {_facts(record)} in {record['build_seconds']} s", flush=True)
            record = self.tables.get(name)
            load_before = load_average()

            def run(side: str, record: dict[str, Any] = record) -> dict[str, Any]:
                restore_table(self.args.data_dir, record)
                now = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
                if side == "java":
                    statement = (
                        f"CALL {st.CATALOG}.system.expire_snapshots(table => '{st.NAMESPACE}.{record['name']}', "
                        f"older_than => TIMESTAMP '{now.strftime('%Y-%m-%d %H:%M:%S')}', retain_last => 1)"
                    )
                    return timed_command(self.java_job("sql", "--statement", statement), self.java_env())
                our_args = [
                    "expire-snapshots",
                    "--table",
                    f"{st.NAMESPACE}.{record['name']}",
                    "--older-than",
                    now.isoformat(timespec="seconds"),
                    "--retain-last",
                    "1",
                ]
                return timed_command(self.our_job("maintain.py", *our_args), self.our_env())

            runs = self.alternate(
                [("java", lambda: run("java")), ("ours", lambda: run("ours"))], self.args.rounds, warmup=False
            )
            restore_table(self.args.data_dir, record)
            entry = self.record(
                "expire",
                files,
                "expire",
                case={"snapshots": st.EXPIRE_SNAPSHOTS + 1},
                runs=runs,
                load_before=load_before,
            )
            java_counts = runs["java"][0]["result"].get("first_row") or {}
            ours_counts = runs["ours"][0]["result"]
            pairs = [
                (
                    "manifest lists",
                    java_counts.get("deleted_manifest_lists_count"),
                    ours_counts.get("deleted_manifest_lists"),
                ),
                ("manifests", java_counts.get("deleted_manifest_files_count"), ours_counts.get("deleted_manifests")),
                ("data files", java_counts.get("deleted_data_files_count"), ours_counts.get("deleted_data_files")),
            ]
            entry["checks"] = [
                "deleted "
                + ", ".join(f"{what}: Java {java_count}, ours {our_count}" for what, java_count, our_count in pairs)
                + ("" if all(j == o for _w, j, o in pairs) else " (DIFFER)")
            ]

    def upsert(self) -> None:
        """An upsert of 10,000 keys: Java's MERGE INTO against our ingest job; rolled back after each run."""
        for files, shape, record in self.cases(shapes=[s for s in self.args.shape_list if s.startswith("u")]):
            name = record["name"]
            batch = self.args.data_dir / "upsert" / str(files)
            if not (batch / "batch.parquet").exists():
                import scale_files

                scale_files.write_upsert_batch(batch, files)
            base = self.java.must("describe", table=name).result["snapshot_id"]
            after: dict[str, Any] = {}
            load_before = load_average()

            def run(
                side: str, name: str = name, batch: Path = batch, base: int = base, after: dict[str, Any] = after
            ) -> dict[str, Any]:
                if side == "java":
                    statement = (
                        f"MERGE INTO {st.CATALOG}.{st.NAMESPACE}.{name} t USING (SELECT * FROM parquet.`{batch}`) s "
                        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
                    )
                    outcome = timed_command(self.java_job("sql", "--statement", statement), self.java_env())
                else:
                    outcome = timed_command(
                        self.our_job(
                            "ingest.py",
                            "--table",
                            f"{st.NAMESPACE}.{name}",
                            "--source",
                            str(batch),
                            "--mode",
                            "upsert",
                            "--key",
                            "id",
                        ),
                        self.our_env(),
                    )
                if side not in after:
                    after[side] = self.java.must("query", table=name).result
                    after[side].pop("seconds", None)
                self.java.must("rollback", table=name, snapshot_id=base)
                return outcome

            runs = self.alternate(
                [("java", lambda: run("java")), ("ours", lambda: run("ours"))], self.args.rounds, warmup=False
            )
            entry = self.record(
                "upsert",
                files,
                shape,
                case={"keys": st.UPSERT_MATCHED + st.UPSERT_NEW},
                runs=runs,
                load_before=load_before,
            )
            entry["checks"] = [
                f"after the upsert: Java {after.get('java')}, ours {after.get('ours')}"
                + ("" if _same_answer(after.get("java"), after.get("ours")) else " (DIFFER)")
            ]

    def scan(self) -> None:
        """count and sum(price) through Spark, whole table and a 0.1% range, warm sessions, alternating."""
        for files, shape, record in self.cases():
            if record["rows"] < self.args.scan_min_rows:
                continue
            name = record["name"]
            for label, snapshot in self.snapshots(record):
                for flt in (st.Filter("full", None, None, None), st.range_filter(files)):
                    load_before = load_average()
                    java_request = {"table": name, "snapshot_id": snapshot, "where": flt.where_sql}
                    our_request = {"table": name, "snapshot_id": snapshot, "row_filter": flt.row_filter}
                    runs = self.alternate(
                        [
                            ("java", lambda r=java_request: self.java.must("query", **r).result),
                            ("ours", lambda r=our_request: self.ours.must("scan", **r).result),
                        ],
                        self.args.rounds,
                        warmup=True,
                    )
                    entry = self.record(
                        "scan",
                        files,
                        shape,
                        case={"snapshot": label, "filter": flt.name},
                        runs=runs,
                        load_before=load_before,
                    )
                    entry["checks"] = [
                        "same answer"
                        if _same_answer(runs["java"][0], runs["ours"][0])
                        else f"DIFFER: Java {runs['java'][0]}, ours {runs['ours'][0]}"
                    ]


def our_versions() -> dict[str, str]:
    """Versions of our side's libraries (this virtualenv)."""
    import platform
    from importlib.metadata import version

    return {
        "python": platform.python_version(),
        **{name: version(name) for name in ("pyiceberg", "pyspark", "pyarrow")},
    }


# ---------------------------------------------------------------------------------------------------------- checks
def same_files(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Java and ours planned the same data files (and delete attachments, and tasks)."""
    java, ours = runs["java"][0], runs["ours"][0]
    checks = []
    for key in ("data_files", "deletes", "tasks"):
        if key in ours:
            same = java.get(key) == ours.get(key)
            checks.append(f"{key}: Java {java.get(key)}, ours {ours.get(key)}" + ("" if same else " (DIFFER)"))
    pyiceberg = runs.get("pyiceberg", [{}])[0]
    if "data_files" in pyiceberg:
        same = pyiceberg["data_files"] == java.get("data_files")
        checks.append(f"pyiceberg data_files {pyiceberg['data_files']}" + ("" if same else " (DIFFER)"))
    return checks


def same_answers(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Both cold jobs gave the same count and sum(price)."""
    java = runs["java"][0]["result"]
    ours = runs["ours"][0]["result"]
    ours_answer = ours.get("aggregates", ours)
    answer = {"count": ours_answer.get("count(*)"), "sum_price": ours_answer.get("sum(price)")}
    same = _same_answer(java, answer)
    return [
        f"Java {java.get('count')} rows, sum {java.get('sum_price')}; ours {answer}" + ("" if same else " (DIFFER)")
    ]


def _same_answer(java: dict[str, Any] | None, ours: dict[str, Any] | None) -> bool:
    if not java or not ours or java.get("count") != ours.get("count"):
        return False
    return math.isclose(float(java.get("sum_price") or 0), float(ours.get("sum_price") or 0), rel_tol=1e-9)


def _orphans_found(result: dict[str, Any]) -> int | None:
    value = result.get("orphan_files")
    return value if isinstance(value, int) else None


def _facts(record: dict[str, Any]) -> str:
    return (
        f"{record['data_files']:,} data files, {record['delete_files']:,} delete files, {record['rows']:,} rows, "
        f"{record['data_manifests']} data manifests ({record['data_manifest_bytes'] / 2**20:.1f} MiB), "
        f"{record['delete_manifests']} delete manifests"
    )


# ---------------------------------------------------------------------------------------------------------- table state
def plant_orphans(location: Path, data_dir: Path) -> None:
    """ORPHANS_PLANTED files under ``data/orphans/`` no metadata references, ten days old (idempotent)."""
    directory = location / "data" / "orphans"
    directory.mkdir(parents=True, exist_ok=True)
    old = time.time() - 10 * 86_400
    for index in range(ORPHANS_PLANTED):
        path = directory / f"orphan-{index:04d}.parquet"
        if not path.exists():
            path.write_bytes(b"PAR1" + bytes(16) + b"PAR1")
            os.utime(path, (old, old))


def count_files(location: Path) -> int:
    """Files under a table's location (what an orphan listing walks)."""
    return sum(len(names) for _root, _dirs, names in os.walk(location))


def _catalog_row(data_dir: Path, name: str) -> tuple[str, str]:
    with sqlite3.connect(data_dir / "catalog.db") as connection:
        row = connection.execute(
            "SELECT metadata_location, previous_metadata_location FROM iceberg_tables "
            "WHERE table_namespace = ? AND table_name = ?",
            (st.NAMESPACE, name),
        ).fetchone()
    if row is None:
        raise SystemExit(f"{name} is not in the catalog")
    return row[0], row[1]


def backup_table(data_dir: Path, record: dict[str, Any]) -> None:
    """Keep a copy of the table's metadata directory and its catalog pointers (``restore_table``)."""
    backup = data_dir / "backups" / record["name"]
    shutil.rmtree(backup, ignore_errors=True)
    backup.mkdir(parents=True)
    shutil.copytree(Path(record["location"]) / "metadata", backup / "metadata")
    metadata, previous = _catalog_row(data_dir, record["name"])
    (backup / "catalog.json").write_text(json.dumps({"metadata_location": metadata, "previous": previous}))


def restore_table(data_dir: Path, record: dict[str, Any]) -> None:
    """Put the metadata directory and catalog pointers back as ``backup_table`` kept them (data files stay: an
    expiry of appends deletes none)."""
    backup = data_dir / "backups" / record["name"]
    pointers = json.loads((backup / "catalog.json").read_text())
    metadata_dir = Path(record["location"]) / "metadata"
    shutil.rmtree(metadata_dir, ignore_errors=True)
    shutil.copytree(backup / "metadata", metadata_dir)
    with sqlite3.connect(data_dir / "catalog.db") as connection:
        connection.execute(
            "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
            "WHERE table_namespace = ? AND table_name = ?",
            (pointers["metadata_location"], pointers["previous"], st.NAMESPACE, record["name"]),
        )


# ---------------------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    """Start the runners, build, run the chosen jobs, write the results and the report."""
    args = parse_args(argv)
    results_dir = BENCH_DIR / "results"
    if args.report is not None:
        report = scale_report.markdown([json.loads(path.read_text()) for path in args.report])
        (results_dir / "scale.md").write_text(report)
        print(report)
        return
    run_start = RunStart()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    stem = args.results_name or f"scale_{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d_%H%M')}"
    logs = args.data_dir / "logs"
    logs.mkdir(exist_ok=True)
    environment = java_environment(argparse.Namespace(java_env="project"))
    runtime_jar = next(jar for jar in environment.jars if "iceberg-spark-runtime" in jar)
    jars = [*environment.jars, str(helper_jar(args.data_dir, runtime_jar))]
    java = Runner(
        "java",
        [
            environment.python,
            str(BENCH_DIR / "scale_java.py"),
            "--jars",
            ",".join(jars),
            "--data-dir",
            str(args.data_dir),
            "--conf",
            json.dumps(environment.conf),
            "--driver-memory",
            args.java_memory,
        ],
        {**os.environ, "PYSPARK_PYTHON": environment.python, "PYSPARK_DRIVER_PYTHON": environment.python},
        logs / f"{stem}.java.log",
    )
    ours: Runner | None = None
    try:
        our_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        ours = Runner(
            "ours",
            [sys.executable, str(BENCH_DIR / "scale_ours.py"), "serve", "--data-dir", str(args.data_dir)],
            our_env,
            logs / f"{stem}.ours.log",
        )
        bench = ScaleBenchmark(args, java, ours, environment.python)
        versions = {"java_side": java.must("java_versions").result, "ours_side": our_versions()}

        def write() -> None:
            header = run_start.header(args)
            header["command"] = shlex.join([sys.executable, *sys.argv])
            header["versions"] = versions
            report = {**header, "tables": bench.tables.built, "records": bench.records}
            (results_dir / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
            (results_dir / f"{stem}.md").write_text(scale_report.markdown([report]))

        for job in JOBS:
            if job in args.job_list:
                print(f"{job} (load {load_average()})", flush=True)
                getattr(bench, job)()
                write()  # after every job: a long run stopped midway keeps what it measured
        write()
        print((results_dir / f"{stem}.md").read_text())
    finally:
        java.close()
        if ours is not None:
            ours.close()


if __name__ == "__main__":
    main()
