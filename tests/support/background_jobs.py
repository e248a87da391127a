"""spark-submit jobs run in the background, for tests that kill them (or their executors) while they work.

A job runs in a process group of its own, with stdout and stderr in files, so a test can poll the job, kill the
whole group by its id, and show the output's tail when something goes wrong. The processes Spark starts under a
standalone worker (the executor JVMs) are found through /proc, by parent PID.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tests.support.services import LOOPBACK, spark_home, spark_process_env

T = TypeVar("T")
EXECUTOR_MAIN_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def spark_submit_command(
    script: Path, args: list[str], *, master: str, conf: dict[str, str] | None = None
) -> list[str]:
    """The spark-submit command line running ``script`` with ``args`` on ``master`` (UI off, driver on loopback)."""
    settings = {"spark.ui.enabled": "false", "spark.driver.host": LOOPBACK, **(conf or {})}
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", master]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, str(script), *args]


@dataclass
class BackgroundJob:
    """A job started in its own process group; its output goes to ``<log_dir>/<name>.out`` and ``.err``."""

    name: str
    process: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path

    def running(self) -> bool:
        """Whether the job's main process has not exited yet."""
        return self.process.poll() is None

    def wait(self, timeout: float) -> int:
        """Wait for the job to exit; its exit code (the group is killed and an error raised after ``timeout``)."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"job {self.name} did not finish within {timeout:.0f}s\n{self.output_tail()}"
            ) from None

    def require_running(self) -> str:
        """The output tail while the job runs; an AssertionError once it has exited (a ``wait_for`` context)."""
        assert self.running(), f"job {self.name} exited early with code {self.process.poll()}\n{self.output_tail()}"
        return self.output_tail()

    def kill(self) -> None:
        """SIGKILL the job's whole process group (spark-submit's JVM and the Python driver) and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def stdout(self) -> str:
        """Everything the job printed to stdout so far."""
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        """Everything the job printed to stderr so far."""
        return self.stderr_path.read_text(errors="replace")

    def output_tail(self, lines: int = 40) -> str:
        """The last lines of stdout and stderr, for failure messages."""
        out = "\n".join(self.stdout().splitlines()[-lines:])
        err = "\n".join(self.stderr().splitlines()[-lines:])
        return f"--- {self.name} stdout (tail) ---\n{out}\n--- {self.name} stderr (tail) ---\n{err}"


def start_job(name: str, command: list[str], log_dir: Path, env: dict[str, str] | None = None) -> BackgroundJob:
    """Start ``command`` in a new session (its own process group), with Spark's test environment by default."""
    log_dir.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = log_dir / f"{name}.out", log_dir / f"{name}.err"
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        process = subprocess.Popen(
            command, stdout=out, stderr=err, env=env or spark_process_env(), start_new_session=True
        )
    return BackgroundJob(name, process, stdout_path, stderr_path)


def wait_for(what: str, condition: Callable[[], T], *, timeout: float, context: Callable[[], str] = str) -> T:
    """Poll ``condition`` until it returns something truthy and return that; fail naming ``what`` after ``timeout``.

    ``context`` gives text for the failure message (e.g. a job's output tail); it may also raise to fail early.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{context()}")
        time.sleep(0.05)


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state is [0], parent PID [1]); None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def command_line(pid: int) -> str:
    """The process's command line, arguments joined by spaces ("" when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants(pid: int) -> set[int]:
    """PIDs of every live process below ``pid`` in the process tree."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[0] not in ("Z", "X"):
                parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def executor_pids(worker_pid: int) -> set[int]:
    """The executor JVMs a Spark standalone worker (the process ``worker_pid``) has running."""
    return {pid for pid in descendants(worker_pid) if EXECUTOR_MAIN_CLASS in command_line(pid)}
