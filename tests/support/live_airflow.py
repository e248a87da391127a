"""A real Airflow deployment for one test module: scheduler, DAG processor and triggerer on one metadata database.

1. ``prepare`` writes an Airflow home of its own (LocalExecutor, the repository's ``dags/``, short parse and poll
   intervals) and migrates its database (a PostgreSQL database of the session's server);
2. ``start`` starts ``airflow scheduler``, ``airflow dag-processor`` and ``airflow triggerer`` as child processes in
   their own process groups, stopped by PID in ``stop`` (one of them alone: ``stop_process`` with the signal of
   one's choice, ``start_process``);
3. the test reads and changes the deployment through the same database (``sql``), as the UI would.

Unless ``run_tasks`` is set there is no API server: the scheduler creates runs, the triggerer runs watchers and the
DAG processor writes DAGs without one (they run the execution API in process), and tasks never start because the
default pool has no slots, so the test measures scheduling alone and leaves the two cores to the processes that
matter. With ``run_tasks``, ``airflow api-server`` (one worker, on a free loopback port) serves the execution API
the scheduler's LocalExecutor's tasks talk to.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

REPO_ROOT = Path(__file__).resolve().parents[2]
PROCESSES = ("scheduler", "dag-processor", "triggerer")
TASK_PROCESSES = ("api-server", *PROCESSES)
T = TypeVar("T")


@dataclass
class LiveAirflow:
    """Airflow processes sharing one home and one metadata database."""

    home: Path
    database_uri: str
    extra_env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    run_tasks: bool = False
    ports: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from tests.support.services import free_port

        # Log servers on ports of their own (a machine may run several deployments); the API server's when used.
        self.ports = {name: free_port() for name in ("api", "worker_logs", "trigger_logs")}

    @property
    def process_names(self) -> tuple[str, ...]:
        """The processes this deployment runs."""
        return TASK_PROCESSES if self.run_tasks else PROCESSES

    @property
    def env(self) -> dict[str, str]:
        """The environment every Airflow process of this deployment runs with."""
        env = {name: value for name, value in os.environ.items() if not name.startswith("AIRFLOW__")}
        env.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.database_uri,
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__CORE__PARALLELISM": "2",
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "15",
                "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
                "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "1",
                "AIRFLOW__TRIGGERER__CAPACITY": "10",
                "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(self.ports["worker_logs"]),
                "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(self.ports["trigger_logs"]),
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(self.ports["api"]),
                "AIRFLOW__API__WORKERS": "1",
                "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{self.ports['api']}",
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.ports['api']}/execution/",
                "AIRFLOW__API_AUTH__JWT_SECRET": "live-airflow-test-secret",
            }
        )
        env.update(self.extra_env)
        return env

    def airflow(self, *args: str, timeout: float = 300) -> str:
        """Run one ``airflow`` CLI command in this deployment; its output, or an error with the output's tail."""
        result = subprocess.run(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            tail = (result.stdout + result.stderr)[-3000:]
            raise RuntimeError(f"airflow {' '.join(args)} failed ({result.returncode}):\n{tail}")
        return result.stdout

    def prepare(self) -> None:
        """Migrate the database; unless ``run_tasks``, take every slot from the default pool (runs are created,
        tasks never start)."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.airflow("db", "migrate")
        if not self.run_tasks:
            self.sql("UPDATE slot_pool SET slots = 0 WHERE pool = 'default_pool'")

    def start(self) -> None:
        """Start the scheduler, the DAG processor and the triggerer (and the API server with ``run_tasks``), each
        logging to ``<home>/<name>.log``."""
        for name in self.process_names:
            self.start_process(name)

    def start_process(self, name: str) -> None:
        """Start one of ``PROCESSES`` (again), appending to its log."""
        log = (self.home / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", "airflow", name],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop_process(self, name: str, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        """Send ``sig`` to one process's group and wait for it (SIGKILL after ``timeout`` seconds)."""
        process = self.processes.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout)

    def stop(self, timeout: float = 5) -> None:
        """Stop each process group by its leader's PID: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        for process in self.processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=timeout)

    def require_running(self) -> None:
        """Fail with the log tail of any process that exited."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"airflow {name} exited with {process.returncode}:\n{self.log_tail(name)}")

    def log_tail(self, name: str, lines: int = 40) -> str:
        """The last lines a process logged."""
        path = self.home / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else "(no log)"

    def logs(self) -> str:
        """Every process's log tail, for failure messages."""
        return "\n".join(f"--- {name}\n{self.log_tail(name)}" for name in self.process_names)

    def sql(self, statement: str, **params: Any) -> list[tuple[Any, ...]]:
        """Run one statement on the metadata database; the rows it returns (none for an update)."""
        import sqlalchemy

        engine = sqlalchemy.create_engine(self.database_uri, poolclass=sqlalchemy.pool.NullPool)
        try:
            with engine.begin() as connection:
                result = connection.execute(sqlalchemy.text(statement), params)
                return [tuple(row) for row in result] if result.returns_rows else []
        finally:
            engine.dispose()

    def wait_for(self, what: str, condition: Callable[[], T | None], timeout: float, interval: float = 1.0) -> T:
        """Poll ``condition`` until it returns something truthy; fail with the processes' logs after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            self.require_running()
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not after {timeout:.0f}s\n{self.logs()}")
            time.sleep(interval)


@contextlib.contextmanager
def live_airflow(
    home: Path, database_uri: str, extra_env: dict[str, str], *, run_tasks: bool = False
) -> Iterator[LiveAirflow]:
    """A prepared and started deployment, stopped by PID on the way out."""
    deployment = LiveAirflow(home=home, database_uri=database_uri, extra_env=extra_env, run_tasks=run_tasks)
    deployment.prepare()
    deployment.start()
    try:
        yield deployment
    finally:
        deployment.stop()
