"""What every spark-submit entry point shares: argument errors, exit codes, the final JSON line, Spark setup.

``run_job`` keeps the contract ``job_contract`` states: on success the last line of stdout is one JSON object; on
bad input the exit code is 2 and the output carries exactly one line ``error: <one-line reason>`` (written to
stderr, which spark-submit merges into its stdout; the JVM may still print after it); on any other failure the exit
code is 1 with the same kind of line after the traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.job_contract import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, error_line

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "JobArgumentParser", "UsageError", "emit_result", "run_job"]
ENGINE_ZIP_NAME = "spark_jobs.zip"
log = logging.getLogger("spark_jobs")
# Sessions ``spark_session`` created (not found running): ``run_job`` stops them before printing the result.
_SESSIONS_STARTED: list[Any] = []


class UsageError(UserInputError):
    """A command-line argument is missing, malformed or contradicts another."""


class JobArgumentParser(argparse.ArgumentParser):
    """argparse that raises UsageError (exit code 2, one line) instead of printing usage and exiting itself."""

    def error(self, message: str) -> NoReturn:
        """Turn argparse's complaint into a UsageError naming the job."""
        raise UsageError(f"{self.prog}: {message}")


def emit_result(result: dict[str, Any]) -> int:
    """Print the job's result as the last line of stdout (one JSON object)."""
    sys.stdout.flush()
    print(json.dumps(result, default=str, separators=(",", ":")), flush=True)
    return EXIT_OK


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, UserInputError) else f"{type(error).__name__}: {text}"


def run_job(name: str, body: Callable[[], dict[str, Any]]) -> int:
    """Run a job body and map its outcome to the exit-code contract; the result JSON is printed last."""
    logging.basicConfig(
        level=os.environ.get("SPARK_JOBS_LOG_LEVEL", "INFO"),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # py4j logs when its connections close at exit; keep that off the result line.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        result = body()
        _stop_spark()
        return emit_result(result)
    except UserInputError as error:
        print(error_line(_one_line(error)), file=sys.stderr, flush=True)
        return EXIT_USAGE
    except Exception as error:
        if _is_user_error_from_spark(error):
            print(error_line(_one_line(error)), file=sys.stderr, flush=True)
            return EXIT_USAGE
        traceback.print_exc(file=sys.stderr)
        print(error_line(f"{name} job failed: {_one_line(error)}"), file=sys.stderr, flush=True)
        return EXIT_FAILURE


def _stop_spark() -> None:
    """Stop the SparkSessions this job started, so nothing Spark prints at exit follows the result line."""
    while _SESSIONS_STARTED:
        _SESSIONS_STARTED.pop().stop()


def _is_user_error_from_spark(error: Exception) -> bool:
    """Spark's 'path already exists' is the caller's input, not a failure of the job."""
    message = str(error)
    return "PATH_ALREADY_EXISTS" in message or ("already exists" in message and "path" in message.lower())


def spark_session(app_name: str) -> Any:
    """The job's SparkSession; master and configuration come from spark-submit (``local[*]`` without it)."""
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    session = SparkSession.builder.appName(app_name).getOrCreate()
    if existing is None:  # ours to stop when the job ends; a caller's session (tests, notebooks) is left running
        _SESSIONS_STARTED.append(session)
    return session


_ENGINE_SHIPPED_TO: set[str] = set()  # application ids of the SparkContexts the engine was shipped to


def engine_zip() -> Path:
    """A zip of the ``spark_jobs`` package for executors without it installed (built once per process)."""
    package_dir = Path(__file__).resolve().parent
    target = Path(tempfile.gettempdir()) / f"spark_jobs-{os.getpid()}" / ENGINE_ZIP_NAME
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package_dir.rglob("*.py")):
            archive.write(path, Path("spark_jobs") / path.relative_to(package_dir))
    return target


def engine_on_executors(spark: Any) -> None:
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
