"""Our side of the scale benchmark (and pyiceberg's): planning in a warm process, or once in a fresh one for memory.

Runs in the project's virtualenv. The catalog is the Java environment's SQLite catalog, opened by pyiceberg's
SqlCatalog under the same name (``scale_tables.CATALOG``), configured through pyiceberg's environment variables.
Ours is called only through entry points that stay while the planning layer changes:
``spark_jobs.engine.read.session.open_read_session(catalog, table, ...).tasks``, the compaction planner
(``spark_jobs.engine.compaction.plan_rewrite``), the sensor's computation
(``airflow_iceberg_provider.compaction_stats.assess``) and, for the scans, ``spark_jobs.read.aggregate``.

Two modes:
- ``serve``: requests as JSON lines on stdin, replies on stdout (``side_by_side_jobs`` protocol). Requests: ``plan``
  (ours), ``pyiceberg_plan``, ``profile`` (one plan of ours under cProfile, time per part of the engine),
  ``compact_plan``, ``sensor``, ``scan`` (count and sum through Spark; the session starts on the first scan).
- ``once``: one measurement in this fresh process, printed as one JSON line: the peak resident memory above the
  process's state just before the work (``/proc/self/status`` VmHWM after resetting it through
  ``/proc/self/clear_refs``), the resident memory left with the result still held, and the seconds.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))
import scale_tables as st  # noqa: E402
import side_by_side_jobs as sbs  # noqa: E402

# Where the planning time goes: the first pattern a function's file matches names its part. The patterns follow
# what each part does, so that they survive modules being renamed or moved within their package. Library code
# (pyarrow, numpy, the standard library, built-ins) has no part of its own: its time goes to its callers' parts.
PROFILE_PARTS = (
    ("manifest decode", r"pyiceberg/avro/|fastavro|/avro|manifest_(decode|reader|avro|columns)"),
    ("manifest entries", r"spark_jobs/engine/table/manifest|pyiceberg/manifest\.py"),
    (
        "metrics and partition pruning",
        r"pruning|expressions|evaluator|metrics_filter|entry_filter|file_statistics|conversions|/filters?",
    ),
    ("delete index", r"delete_index|/deletes/"),
    ("tasks and splitting", r"scan_tasks|splitting|planned_files|bin_pack|packing"),
    ("planner (other)", r"spark_jobs/engine/planning/"),
    ("read session", r"spark_jobs/engine/read/"),
    ("catalog and table", r"spark_jobs/engine/table/|pyiceberg/(table|catalog)"),
    ("file io", r"fsspec|pyiceberg/io"),
    ("pyiceberg (other)", r"pyiceberg/"),
)


def configure_catalog(data_dir: Path) -> None:
    """The Java environment's SQLite catalog as pyiceberg catalog ``anchor`` (environment variables)."""
    prefix = f"PYICEBERG_CATALOG__{st.CATALOG.upper()}__"
    os.environ[prefix + "TYPE"] = "sql"
    os.environ[prefix + "URI"] = f"sqlite:///{data_dir / 'catalog.db'}"
    os.environ[prefix + "WAREHOUSE"] = f"file://{data_dir / 'warehouse'}"
    os.environ["PYICEBERG_HOME"] = str(data_dir / "pyiceberg-home")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


def load_table(name: str) -> Any:
    """The pyiceberg Table ``scale.<name>``, freshly loaded."""
    from pyiceberg.catalog import load_catalog

    return load_catalog(st.CATALOG).load_table(f"{st.NAMESPACE}.{name}")


def plan_ours(table: Any, request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Our planning through ``open_read_session(...).tasks`` with Java's default split size; the tasks and counts."""
    from spark_jobs.engine.read.session import open_read_session

    session = open_read_session(
        st.CATALOG,
        table,
        row_filter=request.get("row_filter"),
        snapshot_id=request.get("snapshot_id"),
        split_size=st.SPLIT_SIZE,
    )
    tasks = session.tasks
    return tasks, {"tasks": len(tasks)}


def count_ours(tasks: Any) -> dict[str, Any]:
    """Slices, distinct data files and attached delete files of our tasks (untimed; tolerant of other task types)."""
    try:
        slices = [piece for task in tasks for piece in task.slices]
    except (AttributeError, TypeError):
        return {"tasks": len(tasks)}
    deletes = 0
    for piece in slices:
        deletes += len(getattr(piece, "position_deletes", ()) or ())
        deletes += len(getattr(piece, "equality_deletes", ()) or ())
        deletes += 1 if getattr(piece, "deletion_vector", None) is not None else 0
    return {
        "tasks": len(tasks),
        "slices": len(slices),
        "data_files": len({piece.path for piece in slices}),
        "deletes": deletes,
    }


def plan_pyiceberg(table: Any, request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """pyiceberg's ``table.scan(row_filter=..., snapshot_id=...).plan_files()`` (files, no split packing)."""
    from pyiceberg.expressions import AlwaysTrue

    scan = table.scan(row_filter=request.get("row_filter") or AlwaysTrue(), snapshot_id=request.get("snapshot_id"))
    tasks = list(scan.plan_files())
    return tasks, {"data_files": len(tasks), "deletes": sum(len(task.delete_files) for task in tasks)}


def compact_plan_ours(table: Any, request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The compact job's planner over the current snapshot with Java's option names (``compact.py`` resolves them)."""
    from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite

    given = {key.replace("-", "_"): int(value) for key, value in request.get("options", {}).items()}
    plan = plan_rewrite(table, table.current_snapshot(), RewriteOptions.resolve(table.properties, **given))
    summary = plan.as_dict()
    return plan, {
        "groups": summary["file_groups"],
        "files": summary["rewritten_data_files"],
        "bytes": summary["rewritten_bytes"],
    }


def sensor_ours(table: Any, request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``IcebergCompactionNeededSensor``'s computation from manifests (``compaction_stats.assess``), defaults."""
    from airflow_iceberg_provider.compaction_stats import CompactionThresholds, assess

    decision = assess(table, CompactionThresholds())
    stats = decision["stats"]
    return decision, {
        "needed": decision["needed"],
        "data_files": stats.get("data_files"),
        "delete_files": stats.get("delete_files"),
    }


PREPARED_IMPORTS = (
    "spark_jobs.engine.read.session",
    "spark_jobs.engine.compaction",
    "airflow_iceberg_provider.compaction_stats",
    "pyiceberg.table",
    "pyiceberg.manifest",
    "pyiceberg.expressions.visitors",
)
WORK = {"ours": plan_ours, "pyiceberg": plan_pyiceberg, "compact": compact_plan_ours, "sensor": sensor_ours}


class OurRunner:
    """A warm process: tables stay loaded between requests, as a long-running driver or triggerer keeps them."""

    def __init__(self) -> None:
        self.tables: dict[str, Any] = {}
        self.spark: Any = None

    def table(self, name: str) -> Any:
        """The loaded table (loaded once)."""
        if name not in self.tables:
            self.tables[name] = load_table(name)
        return self.tables[name]

    def _timed(self, work: str, request: dict[str, Any]) -> dict[str, Any]:
        table = self.table(request["table"])
        cpu_started = time.process_time()
        started = time.perf_counter()
        result, counts = WORK[work](table, request)
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started  # every thread of this process: comparable under load
        if work == "ours":
            counts = count_ours(result)
        return {"seconds": seconds, "cpu_seconds": cpu_seconds, **counts}

    def plan(self, request: dict[str, Any]) -> dict[str, Any]:
        """Our planning, once (the orchestrator runs rounds)."""
        return self._timed("ours", request)

    def pyiceberg_plan(self, request: dict[str, Any]) -> dict[str, Any]:
        """pyiceberg's planning, once."""
        return self._timed("pyiceberg", request)

    def compact_plan(self, request: dict[str, Any]) -> dict[str, Any]:
        """Our compaction planning, once."""
        self.tables.pop(request["table"], None)  # the current snapshot, as the job sees it
        return self._timed("compact", request)

    def sensor(self, request: dict[str, Any]) -> dict[str, Any]:
        """The sensor's computation, once."""
        self.tables.pop(request["table"], None)
        return self._timed("sensor", request)

    def profile(self, request: dict[str, Any]) -> dict[str, Any]:
        """One plan of ours under cProfile: seconds per part (PROFILE_PARTS), per data file and per manifest."""
        table = self.table(request["table"])
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        tasks, _ = plan_ours(table, request)
        profiler.disable()
        seconds = time.perf_counter() - started
        return {"seconds_under_profiler": seconds, **count_ours(tasks), **profile_parts(profiler)}

    def scan(self, request: dict[str, Any]) -> dict[str, Any]:
        """count(*) and sum(price) through ``spark_jobs.read.aggregate`` (Spark starts on the first scan)."""
        from spark_jobs.read import aggregate

        if self.spark is None:
            self.spark = start_spark()
        started = time.perf_counter()
        values, _counters = aggregate(
            self.spark,
            st.CATALOG,
            f"{st.NAMESPACE}.{request['table']}",
            ["count(*)", "sum(price)"],
            row_filter=request.get("row_filter"),
            snapshot_id=request.get("snapshot_id"),
        )
        return {
            "seconds": time.perf_counter() - started,
            "count": values["count(*)"],
            "sum_price": values["sum(price)"],
        }


def start_spark() -> Any:
    """A Spark session with the settings the project's jobs give theirs and the side-by-side benchmark's."""
    import pyspark
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    from spark_jobs.job_support import session_defaults

    settings = session_defaults(SparkConf(loadDefaults=False), pyspark.__version__)
    settings.update({**sbs.SPARK_CONF, "spark.driver.memory": "4g"})
    builder = SparkSession.builder.appName("scale-benchmark-ours")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def profile_parts(profiler: cProfile.Profile) -> dict[str, Any]:
    """Own time (tottime) per part of the engine, and the 12 functions with the most own time.

    A function outside every part (built-ins, the standard library) has its own time shared among the parts of its
    callers, in proportion to the time it spent for each (up to three levels up; ``other`` beyond).
    """
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    memo: dict[Any, dict[str, float]] = {}

    def shares(function: Any, depth: int = 0) -> dict[str, float]:
        """The parts ``function``'s time belongs to, as fractions summing to 1."""
        if function in memo:
            return memo[function]
        filename = function[0]
        part = next((label for label, pattern in PROFILE_PARTS if re.search(pattern, filename)), None)
        if part is not None:
            result = {part: 1.0}
        elif depth >= 3 or not stats.get(function, (0, 0, 0, 0, {}))[4]:
            result = {"other": 1.0}
        else:
            callers = stats[function][4]
            total = sum(values[2] for values in callers.values()) or 1.0
            result = {}
            for caller, values in callers.items():
                weight = values[2] / total if total else 1 / len(callers)
                for name, fraction in shares(caller, depth + 1).items():
                    result[name] = result.get(name, 0.0) + weight * fraction
        memo[function] = result
        return result

    parts: dict[str, float] = {}
    functions = []
    for function, (_calls, _primitive, own, _cumulative, _callers) in stats.items():
        for name, fraction in shares(function).items():
            parts[name] = parts.get(name, 0.0) + own * fraction
        functions.append((own, f"{_short(function[0])}:{function[1]}({function[2]})"))
    functions.sort(reverse=True)
    return {
        "parts_seconds": {key: round(value, 4) for key, value in sorted(parts.items(), key=lambda kv: -kv[1])},
        "top_functions": [[round(own, 4), where] for own, where in functions[:12]],
    }


def _short(filename: str) -> str:
    """A file name without the site-packages or repository prefix."""
    for marker in ("site-packages/", "/spark_jobs/", "/airflow_iceberg_provider/"):
        if marker in filename:
            rest = filename.split(marker, 1)[1]
            return rest if marker == "site-packages/" else marker.strip("/") + "/" + rest
    return filename


def serve(runner: OurRunner) -> None:
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


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def once(work: str, request: dict[str, Any]) -> dict[str, Any]:
    """One measurement in this process (module doc, ``once``)."""
    import gc

    for module in PREPARED_IMPORTS:  # what the work imports lazily is not the planning's memory
        __import__(module)
    table = load_table(request["table"])
    gc.collect()
    start_kib = _status_kib("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux 4.0+)
        reset = True
    except OSError:
        reset = False
    started = time.perf_counter()
    result, counts = WORK[work](table, request)
    seconds = time.perf_counter() - started
    peak_kib, now_kib = _status_kib("VmHWM"), _status_kib("VmRSS")
    if work == "ours":
        counts = count_ours(result)
    del result
    return {
        "seconds": seconds,
        "rss_start_mib": round(start_kib / 1024, 1),
        "peak_above_start_mib": round((peak_kib - start_kib) / 1024, 1),
        "retained_above_start_mib": round((now_kib - start_kib) / 1024, 1),
        "peak_reset": reset,
        **counts,
    }


def main() -> None:
    """``serve`` or ``once`` (module doc)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("serve", "once"))
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--work", choices=sorted(WORK), help="once: what to measure")
    parser.add_argument("--request", default="{}", help="once: the request as JSON (table, snapshot_id, row_filter)")
    args = parser.parse_args()
    configure_catalog(args.data_dir.resolve())
    if args.mode == "once":
        print(json.dumps(once(args.work, json.loads(args.request))), flush=True)
        return
    sbs.divert_stdout()
    runner = OurRunner()
    sbs.write_reply(sbs.Reply(True, 0.0, result={"ready": True}))
    serve(runner)
    if runner.spark is not None:
        runner.spark.stop()


if __name__ == "__main__":
    main()
