"""What every spark-submit entry point shares: argument errors, exit codes, the final JSON line, Spark setup.

``run_job`` keeps the contract ``job_contract`` states: on success the last line of stdout is one JSON object; on
bad input the exit code is 2 and the output carries exactly one line ``error: <one-line reason>`` (written to
stderr, which spark-submit merges into its stdout; the JVM may still print after it); on any other failure the exit
code is 1 with the same kind of line after the traceback.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import importlib.util
import json
import logging
import marshal
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.job_contract import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, error_line
from spark_jobs.job_failures import classify, clear_subject, exception_texts, set_typed_arguments, typed_arguments
from spark_jobs.job_log import SPARK_START_PHASE, log_summary

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    from spark_jobs.engine.jobs.executor import TaskExecutor
    from spark_jobs.engine.jobs.placement import Placement

__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "JobArgumentParser",
    "UsageError",
    "emit_result",
    "exception_texts",
    "run_job",
]
ENGINE_ZIP_NAME = "spark_jobs.zip"
log = logging.getLogger("spark_jobs")
# Sessions ``spark_session`` created (not found running): ``run_job`` stops them before printing the result.
_SESSIONS_STARTED: list[SparkSession] = []
# Seconds each of those took to start, reported apart from the job's own phases.
_START_SECONDS: list[float] = []
# Spark's own log level unless the job is submitted with ``spark.log.level`` (Spark 3.5+), e.g. ``INFO``.
SPARK_LOG_LEVEL_CONF = "spark.log.level"
DEFAULT_SPARK_LOG_LEVEL = "WARN"
# Python workers talk to their executor over a Unix domain socket where Spark offers one (4.1+): over loopback TCP
# every Python task of this machine waited ~40 ms for its input (BENCHMARKS.md), a selective read's largest fixed
# cost. A value given to spark-submit (``--conf``) wins.
PYTHON_WORKER_UNIX_SOCKET_CONF = "spark.python.unix.domain.socket.enabled"
PYTHON_WORKER_UNIX_SOCKET_SINCE = (4, 1)


class UsageError(UserInputError):
    """A command-line argument is missing, malformed or contradicts another."""


class JobArgumentParser(argparse.ArgumentParser):
    """argparse that raises UsageError (exit code 2, one line) instead of printing usage and exiting itself, and
    records the options as typed, so that an error about one names it (``job_failures.naming_the_argument``)."""

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """Parse ``args`` (default: the command line), recording the options typed."""
        argv = sys.argv[1:] if args is None else [str(arg) for arg in args]
        set_typed_arguments(typed_arguments(self, argv))
        return super().parse_args(argv, namespace)

    def error(self, message: str) -> NoReturn:
        """Turn argparse's complaint into a UsageError naming the job."""
        raise UsageError(f"{self.prog}: {message}")


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number of bytes, at least 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of bytes, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more bytes, got {value}")
    return value


# The file size and group options of a rewrite (compact, rewrite-position-deletes), named as the options' fields.
REWRITE_SIZE_OPTIONS = (
    "target_file_size_bytes",
    "min_file_size_bytes",
    "max_file_size_bytes",
    "min_input_files",
    "max_file_group_size_bytes",
)


def add_rewrite_size_options(parser: argparse.ArgumentParser, target_default: str) -> None:
    """Add ``REWRITE_SIZE_OPTIONS`` to ``parser`` (Java's option names); ``target_default`` says where the target
    size comes from when not given."""
    parser.add_argument("--target-file-size-bytes", type=int, help=f"default: {target_default}")
    parser.add_argument("--min-file-size-bytes", type=int, help="default: 0.75 x target")
    parser.add_argument("--max-file-size-bytes", type=int, help="default: 1.8 x target")
    parser.add_argument("--min-input-files", type=int, help="default: 5")
    parser.add_argument("--max-file-group-size-bytes", type=int, help="default: 100 GiB")


def emit_result(result: dict[str, Any]) -> int:
    """Print the job's result as the last line of stdout (one JSON object)."""
    sys.stdout.flush()
    print(json.dumps(result, default=str, separators=(",", ":")), flush=True)
    return EXIT_OK


def run_job(name: str, body: Callable[[], dict[str, Any]]) -> int:
    """Run a job body and map its outcome to the exit-code contract; the result JSON is printed last."""
    logging.basicConfig(
        level=os.environ.get("SPARK_JOBS_LOG_LEVEL", "INFO"),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # py4j logs when its connections close at exit; keep that off the result line.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    _START_SECONDS.clear()
    clear_subject()
    try:
        result = body()
        _stop_spark()
        if _START_SECONDS and isinstance(result.get("seconds"), dict):
            result["seconds"] = {SPARK_START_PHASE: round(sum(_START_SECONDS), 3), **result["seconds"]}
        log_summary(result)
        return emit_result(result)
    except Exception as error:
        verdict = classify(error, name)
        if not verdict.bad_input:  # bad input is the one line; anything else keeps its traceback for the log
            traceback.print_exc(file=sys.stderr)
        print(error_line(verdict.reason), file=sys.stderr, flush=True)
        return verdict.exit_code


def bad_input_inside(error: BaseException) -> str | None:
    """The one-line reason when ``error`` (e.g. a Spark failure wrapping an executor's) is bad input, else None."""
    verdict = classify(error, "job")
    return verdict.reason if verdict.bad_input else None


def _stop_spark() -> None:
    """Stop the SparkSessions this job started, so nothing Spark prints at exit follows the result line."""
    while _SESSIONS_STARTED:
        _SESSIONS_STARTED.pop().stop()


def start_spark_session(app_name: str) -> Callable[[], SparkSession]:
    """Start the job's SparkSession on a helper thread; returns a function that waits for it and returns it.

    A job that plans on the driver before it needs Spark (the read job) overlaps the SparkContext's start (mostly
    waiting on the JVM) with its imports and planning. A session already active in this thread (tests, notebooks)
    is returned as it is, and left running. A job that fails before it waits leaves the thread behind: it is a
    daemon, and the JVM ends with the process.
    """
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        session = spark_session(app_name)
        return lambda: session
    outcome: dict[str, Any] = {}

    def start() -> None:
        try:
            outcome["session"] = spark_session(app_name)
        except BaseException as error:  # handed to the waiting caller
            outcome["error"] = error

    thread = threading.Thread(target=start, name="spark-session-start", daemon=True)
    thread.start()

    def wait() -> SparkSession:
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["session"]

    return wait


def job_placement(max_bytes: int, app_name: str, session_conf: Mapping[str, str] | None = None) -> Placement:
    """A job's driver-or-Spark decision (``engine/jobs/placement.py``): this process for a scan of at most
    ``max_bytes``, else a Spark session named ``app_name`` with the engine on its executors and the job's own
    runtime settings ``session_conf`` (from its options)."""
    from spark_jobs.engine.jobs.placement import Placement

    def in_process() -> TaskExecutor:
        from spark_jobs.spark.driver_read import InProcessExecutor

        return InProcessExecutor(max_bytes=max_bytes)

    def start_spark() -> Callable[[], TaskExecutor]:
        waiting = start_spark_session(app_name)

        def spark_executor() -> TaskExecutor:
            from spark_jobs.spark.executor import SparkExecutor

            spark = waiting()
            engine_on_executors(spark)
            for key, value in (session_conf or {}).items():
                spark.conf.set(key, value)
            return SparkExecutor(spark)

        return spark_executor

    return Placement(max_bytes, in_process, start_spark)


def spark_session(app_name: str) -> SparkSession:
    """The job's SparkSession; master and configuration come from spark-submit (``local[*]`` without it).

    A session the job starts logs at ``DEFAULT_SPARK_LOG_LEVEL`` unless ``spark.log.level`` is given, and announces
    its start time and its web UI (the provider's "Spark UI" link reads that line). While its SparkContext starts,
    a second thread has the JVM load what the session constructor would load after it (``spark.jvm_warm_up``).
    A new session gets the ``session_defaults`` spark-submit did not set.
    """
    from pyspark.sql import SparkSession

    silence_query_context_logs()
    existing = SparkSession.getActiveSession()
    if existing is None:
        log.info("starting Spark ...")
        from spark_jobs.spark.jvm_warm_up import start_jvm_warm_up

        start_jvm_warm_up()  # what the session constructor loads, loaded while the SparkContext starts
    started = time.perf_counter()
    builder = SparkSession.builder.appName(app_name)
    if existing is None:
        import pyspark

        for key, value in session_defaults(_submitted_conf(), pyspark.__version__).items():
            builder = builder.config(key, value)
    session = builder.getOrCreate()
    if existing is None:  # ours to stop when the job ends; a caller's session (tests, notebooks) is left running
        _SESSIONS_STARTED.append(session)
        _START_SECONDS.append(time.perf_counter() - started)
        context = session.sparkContext
        if not session.conf.get(SPARK_LOG_LEVEL_CONF, None):
            context.setLogLevel(DEFAULT_SPARK_LOG_LEVEL)
        log.info(
            "Spark started in %.1f s (master %s, application %s)",
            _START_SECONDS[-1],
            context.master,
            context.applicationId,
        )
        if context.uiWebUrl:
            log.info("Spark UI %s (application %s)", context.uiWebUrl, context.applicationId)
    return session


def silence_query_context_logs() -> None:
    """Turn off PySpark 4's JSON log lines of a failed query (its query-context loggers).

    PySpark logs every error the JVM raises, with its query context, as one JSON line on stderr, which spark-submit
    merges into the job's stdout: a line the contract's reader could take for the job's result. The job reports the
    error itself (``classify``), so these loggers are disabled. Spark 3.5 has neither.
    """
    try:
        from pyspark.logger import PySparkLogger  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return
    for name in _QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).disabled = True


_QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


class ConfLookup(Protocol):
    """What ``session_defaults`` asks of a configuration: whether it sets a key (``SparkConf``, ``_RuntimeConf``)."""

    def contains(self, key: str) -> bool:
        """Whether ``key`` is set."""
        ...


def session_defaults(submitted: ConfLookup, spark_version: str) -> dict[str, str]:
    """The settings a job's new session adds to ``submitted`` (spark-submit's ``SparkConf``): those it lacks."""
    defaults: dict[str, str] = {}
    if _major_minor(spark_version) >= PYTHON_WORKER_UNIX_SOCKET_SINCE:
        defaults[PYTHON_WORKER_UNIX_SOCKET_CONF] = "true"
    return {key: value for key, value in defaults.items() if not submitted.contains(key)}


def _major_minor(version: str) -> tuple[int, int]:
    """``(4, 1)`` of ``"4.1.0"`` or ``"4.1.0.dev1"``; ``(0, 0)`` for what does not start with two numbers."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def _submitted_conf() -> SparkConf:
    """The ``SparkConf`` spark-submit (or the environment's ``PYSPARK_SUBMIT_ARGS``) gave this driver's JVM."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # the JVM gateway the session will use: its system properties hold the conf
    return SparkConf()


_ENGINE_SHIPPED_TO: set[str] = set()  # application ids of the SparkContexts the engine was shipped to
_DEFAULTS_HINTED_FOR: set[str] = set()  # application ids ``hint_session_defaults`` looked at


@functools.cache
def engine_zip() -> Path:
    """A zip of the ``spark_jobs`` package for executors without it installed (built once per process).

    It is built in a new private directory (``mkdtemp``: mode 0700, unpredictable name), so no other local user can
    plant or swap it, and the directory is removed when the process exits.
    """
    package_dir = Path(__file__).resolve().parent
    directory = Path(tempfile.mkdtemp(prefix="spark_jobs-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    target = directory / ENGINE_ZIP_NAME
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package_dir.rglob("*.py")):
            name = Path("spark_jobs") / path.relative_to(package_dir)
            archive.write(path, name)
            bytecode = checked_bytecode(path.read_bytes(), name.as_posix())
            if bytecode is not None:
                archive.writestr(name.with_suffix(".pyc").as_posix(), bytecode)
    return target


def checked_bytecode(source: bytes, name: str) -> bytes | None:
    """A ``.pyc`` of ``source`` that checks the source's hash when loaded (PEP 552); None if it does not compile here.

    Python workers import the engine from the zip, where they cannot cache what they compile: with the bytecode
    beside each module they skip compiling it (an interpreter of another version ignores it and compiles).
    """
    try:
        code = compile(source, name, "exec", dont_inherit=True)
    except SyntaxError:
        return None
    checked_hash_flags = (0b11).to_bytes(4, "little")
    return importlib.util.MAGIC_NUMBER + checked_hash_flags + importlib.util.source_hash(source) + marshal.dumps(code)


def engine_on_executors(spark: SparkSession) -> None:
    """Ship the engine to executors unless spark-submit already did (``--py-files`` naming spark_jobs*.zip).

    Once per SparkContext: a session that reads many times (``load`` per query) pays for it on its first read only.
    """
    context_id = spark.sparkContext.applicationId
    if context_id in _ENGINE_SHIPPED_TO:
        return
    # One lookup (``getConf()`` would copy the whole configuration, an RPC to the JVM per entry).
    py_files = spark.conf.get("spark.submit.pyFiles", "") or ""
    if not any(Path(entry).name.startswith("spark_jobs") for entry in py_files.split(",") if entry):
        spark.sparkContext.addPyFile(str(engine_zip()))
    _ENGINE_SHIPPED_TO.add(context_id)


def hint_session_defaults(spark: SparkSession) -> None:
    """Log once per SparkContext which ``session_defaults`` a session the jobs did not start lacks (``load``)."""
    import pyspark

    context_id = spark.sparkContext.applicationId
    if context_id in _DEFAULTS_HINTED_FOR:
        return
    _DEFAULTS_HINTED_FOR.add(context_id)
    for key, value in session_defaults(_RuntimeConf(spark), pyspark.__version__).items():
        log.info(
            "Spark application %s: %s=%s would make its reads faster (docs/jobs/read.md, Python API)",
            context_id,
            key,
            value,
        )


class _RuntimeConf:
    """A running session's configuration as ``session_defaults`` asks it (``contains``), one lookup per key."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def contains(self, key: str) -> bool:
        """Whether the session has ``key`` set."""
        return self.spark.conf.get(key, None) is not None
